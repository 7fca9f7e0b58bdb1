package platform

import (
	"context"
	"time"
)

// Adapter connects Herald to one platform: it receives events and provides a
// [Sender] for replies.
//
// Name returns a short, stable identifier such as "telegram"; it becomes
// [Event.Platform] and the first part of every dispatcher chat key, so two
// adapters in one engine must have different names.
//
// Run receives events until ctx ends, calling handle once for each, in the
// order the platform delivered them; handle does not block for long (the
// engine queues the event) and is not called after Run returns. Run returns
// nil when it stopped because ctx ended and an error when it could not go on
// (a revoked token, a port already in use).
//
// Sender returns the Sender for this platform. It is valid before Run starts
// and after it returns, though sends may fail while the adapter is not
// connected.
type Adapter interface {
	Name() string
	Run(ctx context.Context, handle func(Event)) error
	Sender() Sender
}

// Drainer is implemented by an [Adapter] whose Sender works only while Run
// is running, because Run holds the connection that sends go through (a
// WebSocket, say).
//
// When the engine stops, it must send the replies still pending before
// such an adapter's connections close; for other adapters it ends Run
// first, so no event arrives that could no longer be handled. For a
// Drainer it calls StopReceiving instead: Run stops handing events to its
// handle func (events arriving from now on are refused or dropped, as the
// adapter documents) but keeps running, with its connections open and its
// Sender working, until its context ends, which the engine does once the
// pending replies were sent.
//
// StopReceiving must not block. It may be called more than once, and
// before or after Run.
type Drainer interface {
	Adapter
	StopReceiving()
}

// ConfirmingAdapter is implemented by an [Adapter] that can leave an event
// unconfirmed on its platform when the engine cannot take it, so the
// platform delivers it again (Telegram's getUpdates offset, a webhook's
// HTTP status). The engine then calls RunConfirmed instead of Run.
//
// RunConfirmed is like Run, but handle reports whether the engine took the
// event: nil means it did; an error means it refused it (the chat's inbound
// queue is full, or the engine is stopping), and the adapter must not
// confirm that event — nor, to keep each chat's order, any later one —
// before the engine has taken it. The adapter decides when to offer it
// again; it should back off first.
type ConfirmingAdapter interface {
	Adapter
	RunConfirmed(ctx context.Context, handle func(Event) error) error
}

// Receiver is implemented by a [ConfirmingAdapter] that can take events
// in at a listener of its own (a webhook), apart from its connection to
// the platform. When one bot runs as several processes (a cluster journal,
// see engine.Cluster), every process runs Receive, so the platform may
// deliver to any of them, while only the process holding the account's
// lease runs RunConfirmed, which then registers the listener with the
// platform without listening itself.
type Receiver interface {
	ConfirmingAdapter
	// Receives reports whether the adapter is configured to take events
	// in at a listener.
	Receives() bool
	// Receive serves the listener until ctx ends, calling handle for each
	// event as RunConfirmed would, and never calls the platform. It
	// returns nil once ctx ended, or the error that stopped it.
	Receive(ctx context.Context, handle func(Event) error) error
}

type stopKey struct{}

// WithStopContext returns a copy of ctx that carries stop: the context that
// bounds what an adapter still does once ctx, its Run context, has ended
// (see [StopContext]). The engine gives every adapter's Run such a context;
// stop ends when the engine's shutdown timeout runs out.
func WithStopContext(ctx, stop context.Context) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// StopContext returns the context that bounds the work an adapter does
// after its Run context ctx ended: telling the platform which events the
// engine took, closing connections. It is the one ctx carries from
// [WithStopContext], so that work may take what is left of the engine's
// shutdown timeout; without one (an adapter run on its own), it is a
// context that ends fallback from now. Neither ends when ctx does. Call
// cancel when the work is done.
func StopContext(ctx context.Context, fallback time.Duration) (context.Context, context.CancelFunc) {
	if stop, ok := ctx.Value(stopKey{}).(context.Context); ok && stop != nil {
		return context.WithCancel(stop)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), fallback)
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
