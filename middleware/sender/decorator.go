package sender

import "github.com/heraldbot/herald/platform"

// SenderDecorator wraps a [platform.Sender] in another that adds behaviour
// (metrics, retries, rate limits, …) and delegates the actual send to the
// wrapped one, as net/http middleware wraps a Handler.
//
// A decorator is called once, when a chain is built; the Sender it returns
// is then called for every send and must be safe for concurrent use. A
// decorator outside Retry or RateLimit may see a send pause (an error for
// which platform.PauseOf reports true): the send is not over, and the
// decorator should return that error unchanged, as [Observe] does (see the
// package documentation).
type SenderDecorator func(platform.Sender) platform.Sender

// Chain returns a decorator that applies ds so that the first one listed is
// the outermost: Chain(a, b, c)(s) is a(b(c(s))), and a send passes through
// a, then b, then c, then s. Nil decorators are skipped. Chain with no
// decorators (or only nil ones) returns its sender unchanged.
func Chain(ds ...SenderDecorator) SenderDecorator {
	ds = append([]SenderDecorator(nil), ds...) // later changes to the caller's slice don't matter
	return func(s platform.Sender) platform.Sender {
		for i := len(ds) - 1; i >= 0; i-- {
			if ds[i] != nil {
				s = ds[i](s)
			}
		}
		return s
	}
}
