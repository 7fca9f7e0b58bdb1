// Package platform holds the platform-neutral types that every other Herald
// package speaks: inbound [Event]s with their [Chat] and [User], the
// [OutboundMessage] a handler sends, the [Sender] and [Adapter] interfaces an
// integration implements, and the error kinds ([NewRetryAfter], [Permanent])
// through which a platform tells the sender middleware whether and when a
// failed send may be tried again. An adapter runs one way ([Adapter] Run,
// given an [Inbound]: the engine's handle, which says whether it took an
// event, when to stop taking events, the stop's time bound, and whether
// the process only listens). Optional interfaces let an adapter do more:
// [LimitedAdapter] (publish the
// platform's send budget), [Downloader] (fetch the files events carry),
// [CallbackAnswerer] (answer button presses), [ChatActor] (show "typing"
// and other chat actions), [InlineAnswerer] (answer inline queries),
// [PreCheckoutAnswerer] (confirm payments), [JoinRequestAnswerer]
// (approve join requests), [CommandSetter] (the commands menu) and
// [StreamingAdapter] (show a streamed reply growing; see [Stream]).
// What an adapter cannot send (an attachment kind, an album, an edit, a
// deletion, a reaction, an invoice, a method call, a reply keyboard) it
// refuses with a [Permanent] error wrapping [ErrUnsupported].
//
// Besides messages, an [OutboundMessage] carries the send options real
// bots use (a [Reply] quoting a message, also in another chat, a
// [LinkPreview], silent and protected messages, message effects, paid
// broadcasts, [Entity] markup) and operations on messages, each going
// through the sender chain like a message: an edit (EditID), a deletion
// (DeleteID), a reaction (ReactID), an [Invoice], a [MethodCall] of any
// platform method by name, and a part of a streamed reply ([StreamPart]).
// A [Chat]'s Thread and BusinessConnectionID route a send into a topic
// and through a business connection; [Keyboard] builds inline buttons
// checked against Telegram's limits.
//
// Event and OutboundMessage are plain values that serialise to JSON (an
// Event's Raw field only when it is a json.RawMessage, as Telegram's
// adapter sets it), so events can cross process boundaries unchanged.
package platform
