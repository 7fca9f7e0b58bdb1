package platform

import "context"

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
