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
