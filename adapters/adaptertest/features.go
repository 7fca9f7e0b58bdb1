package adaptertest

// Features says what a platform, or the fake that stands in for it in
// tests, cannot do; [TestAdapter] skips or relaxes the checks that need it.
// The zero value claims every feature: every check runs.
//
// A Features value is a plain value, safe to copy and to share.
type Features struct {
	// NoMessageID means a successful send may return an empty
	// [platform.SendResult.MessageID], because the platform accepts
	// messages asynchronously and gives no ID, and that events may have
	// no [platform.Event.MessageID]. False means the suite requires
	// non-empty IDs, different for each message of a chat.
	NoMessageID bool

	// NoGroups means the platform, or its fake, has no group chats: the
	// suite uses private chats only and never calls [Peer.Chat] with
	// [platform.ChatGroup].
	NoGroups bool

	// NoParseMode means the platform has no rich text: the suite then
	// checks that a Markdown or HTML text is still accepted and arrives
	// exactly as written, markup included. False means the peer must
	// receive the text with the parse mode it was sent in.
	NoParseMode bool

	// NoButtons means the platform has no inline buttons: the suite then
	// checks that a message with buttons is still accepted and its text
	// arrives. False means the peer must receive the buttons unchanged.
	NoButtons bool

	// NoAttachments means the platform cannot send photos, and the suite
	// sends none. False means a photo, by URL and as bytes, must arrive as
	// one message holding that photo, its caption shown with it.
	NoAttachments bool

	// MaxText is the length, in characters, of the longest text the
	// platform delivers as one message; the suite sends a text of exactly
	// this length (in characters from the Basic Multilingual Plane, so
	// that UTF-16 and rune counts agree) and requires it to arrive whole.
	// Zero means the platform has no limit the suite needs to respect; it
	// then sends 16384 characters.
	MaxText int

	// NoPermanentFailure means the fake peer cannot refuse a well-formed
	// message for good (a blocked bot, a chat that is gone), so the suite
	// does not call [Peer.Inject] with [FaultPermanent].
	NoPermanentFailure bool

	// NoRetryAfter means the platform never asks a sender to wait before
	// trying again (it has no flood-control answer with a delay), so the
	// suite does not call [Peer.Inject] with [FaultRetryAfter].
	NoRetryAfter bool

	// NoTransientFailure means the fake peer cannot fail a send in a way
	// that may succeed later (a server error), so the suite does not call
	// [Peer.Inject] with [FaultTransient].
	NoTransientFailure bool

	// NoStall means Send does not wait for the peer (it queues the message
	// and returns), so a send cannot be held in flight; the suite does not
	// call [Peer.Inject] with [FaultStall] and checks cancellation only
	// with contexts that have already ended.
	NoStall bool

	// NoEdit means the platform cannot change a sent message: the suite
	// checks that an edit ([platform.OutboundMessage] EditID) is refused
	// with a permanent error wrapping [platform.ErrUnsupported], and that
	// nothing arrives. False means edits must work: the result names the
	// edited message, an edit of a message that does not exist fails for
	// good, and, if the peer is a [ShowingPeer], the chat then shows the
	// edit in place.
	NoEdit bool
}

// Length of the long text when Features.MaxText is zero.
const defaultLongText = 16 << 10
