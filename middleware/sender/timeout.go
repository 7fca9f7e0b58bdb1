package sender

import (
	"context"
	"time"

	"github.com/heraldbot/herald/internal/lazyctx"
	"github.com/heraldbot/herald/platform"
)

// Timeout returns a decorator that bounds each call to the sender below it:
// the call gets context.WithTimeout(ctx, d) of the context it was given, so
// the platform sender sees a deadline at most d away and stops with
// [context.DeadlineExceeded] when it passes. A deadline already nearer on ctx
// stays in force.
//
// Placed under [Retry], as [Default] does, every attempt gets its own fresh
// deadline derived from the send's context: an attempt that timed out does
// not leave an expired context to the next one, and Retry, seeing the send's
// own context still live, tries again.
//
// It also measures the time each call below it takes, which Observe
// reports as Outcome.Sending. A d of zero or less switches the timeout
// off: Timeout returns the sender unchanged.
func Timeout(d time.Duration) SenderDecorator {
	return func(next platform.Sender) platform.Sender {
		if d <= 0 {
			return next
		}
		return &timeoutSender{next: next, d: d}
	}
}

type timeoutSender struct {
	next platform.Sender
	d    time.Duration
}

func (s *timeoutSender) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	start := time.Now()
	if p := platform.ProgressOf(ctx); p != nil {
		// The attempt's time, for Outcome.Sending.
		defer func() { p.Sending += time.Since(start) }()
	}
	if deadline, ok := ctx.Deadline(); ok && !deadline.After(start.Add(s.d)) {
		// ctx already ends no later than d from now: a timer would change
		// nothing but cost allocations.
		return s.next.Send(ctx, req)
	}
	// context.WithTimeout, lazily: no timer is armed and nothing registers
	// with ctx unless the sender below asks for Done (one in memory, or
	// one that answers without blocking, never does).
	attempt := lazyctx.WithDeadline(ctx, start, start.Add(s.d))
	defer attempt.Release()
	return s.next.Send(attempt, req)
}
