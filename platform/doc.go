// Package platform holds the platform-neutral types that every other Herald
// package speaks: inbound [Event]s with their [Chat] and [User], the
// [OutboundMessage] a handler sends, the [Sender] and [Adapter] interfaces an
// integration implements, and the error kinds ([NewRetryAfter], [Permanent])
// through which a platform tells the sender middleware whether and when a
// failed send may be tried again. Optional interfaces let an adapter do
// more: [Drainer] (stop receiving, keep sending), [ConfirmingAdapter]
// (learn which events the engine refused), [LimitedAdapter] (publish the
// platform's send budget), [Downloader] (fetch the files events carry),
// [CallbackAnswerer] (answer button presses), [ChatActor] (show "typing"
// and other chat actions) and [InlineAnswerer] (answer inline queries).
// What an adapter cannot send (an attachment kind, an album, an edit, a
// deletion, a reply keyboard) it refuses with a [Permanent] error wrapping
// [ErrUnsupported].
//
// Event and OutboundMessage are plain values that serialise to JSON (an
// Event's Raw field aside), so events can cross process boundaries unchanged.
package platform
