package platform

import (
	"context"
	"time"
)

// Adapter connects Herald to one platform account: it receives events and
// provides a [Sender] for replies.
//
// Name returns a short, stable identifier such as "telegram"; it becomes
// [Event.Platform] and the first part of every dispatcher chat key, so two
// adapters in one engine must have different names.
//
// Run connects to the platform and receives events until in.Receiving is
// closed or ctx ends, handing each to in.Handle in the order the platform
// delivered them (see [Inbound] for what to do with a refused one). An
// adapter whose Sender needs Run's connections (a WebSocket) keeps them
// open after in.Receiving closed, taking no more events, until ctx ends:
// the engine ends it once the replies still pending were sent. Others may
// return as soon as in.Receiving closes. What Run does on its way out
// (telling the platform which events were taken, closing connections) is
// bounded by in.Stop. Run returns nil when it stopped because it was told
// to, and an error when it could not go on (a revoked token, a port
// already in use). With in.Listen it serves only a listener of its own
// (see [Inbound]).
//
// Sender returns the Sender for this platform. It is valid before Run starts
// and after it returns, though sends may fail while the adapter is not
// connected.
type Adapter interface {
	Name() string
	Run(ctx context.Context, in Inbound) error
	Sender() Sender
}

// Inbound is how an [Adapter]'s Run hands events to the engine and learns
// when to stop. The engine makes it; a test may make its own.
type Inbound struct {
	// Handle gives ev to the engine and returns without blocking for long.
	// It returns nil when the engine took ev, and an error when it refused
	// it (the chat's inbound queue is full, the engine stops). An adapter
	// that can leave an event unconfirmed on its platform (Telegram's
	// getUpdates offset, a webhook's HTTP status) must not confirm that
	// event — nor, to keep each chat's order, any later one — before the
	// engine took it, and decides when to offer it again, after a back-off;
	// others drop it (the engine logged it). An error that is
	// [IsPermanent] says the engine can never take this event (its journal
	// refuses it for what it is): every adapter drops it and goes on.
	// Handle is not called after Run returned.
	Handle func(Event) error
	// HandleAll gives evs to the engine in order, as Handle gives each,
	// and returns how many it took from the start: len(evs) and nil, or n
	// and the error with which it refused evs[n] — the events after it
	// are not taken either, and are offered again with it (or, after an
	// error that is IsPermanent, handed over again without it). The
	// engine's journal records them with one wait for all, where Handle
	// waits for each: an adapter that receives events in batches (a
	// Telegram getUpdates answer) uses it. Nil in an Inbound that a test
	// makes: call Handle for each. HandleAll is not called after Run
	// returned.
	HandleAll func([]Event) (int, error)
	// Receiving is closed when the adapter must stop taking events; nil
	// means only ctx says.
	Receiving <-chan struct{}
	// Stop bounds what Run does once it stops taking events: it ends when
	// the engine's shutdown timeout runs out. Nil means a bound of the
	// adapter's own (see StopContext).
	Stop context.Context
	// Listen says another process leads the account (one bot over several
	// processes: see package cluster): Run serves only a listener of the
	// adapter's own that the platform delivers to (a Telegram webhook),
	// handing what it receives to Handle, and never calls the platform. An
	// adapter without such a listener returns nil at once.
	Listen bool
}

// StopContext returns the context that bounds the work Run does once it
// stops taking events: one ending with in.Stop, or, without it, a context
// that ends fallback from now. Call cancel when the work is done.
func (in Inbound) StopContext(fallback time.Duration) (context.Context, context.CancelFunc) {
	if in.Stop != nil {
		return context.WithCancel(in.Stop)
	}
	return context.WithTimeout(context.Background(), fallback)
}

// Receive returns a child of ctx that ends when in.Receiving closes, for a
// Run that stops taking events and has nothing else to do: its connection
// serves no sends. Call cancel when Run returns.
func (in Inbound) Receive(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if in.Receiving != nil {
		go func() { // ends with ctx: Run's cancel, or Receiving
			select {
			case <-in.Receiving:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// Taking reports whether in.Receiving is still open: the adapter may take
// events.
func (in Inbound) Taking() bool {
	select {
	case <-in.Receiving:
		return false
	default:
		return true
	}
}

// ValidName reports whether name can name an [Adapter] (its Name): 1 to
// 64 ASCII letters, digits, "_", "-" and ".", so that it never holds the
// ":" that separates the parts of the engine's chat keys, nor a NATS
// subject's wildcards and separators.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}
