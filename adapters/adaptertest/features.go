package adaptertest

import (
	"slices"

	"github.com/heraldbot/herald/platform"
)

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

	// UnsupportedMedia lists the attachment kinds the platform cannot
	// send: the suite checks that a message with one is refused with a
	// permanent error wrapping [platform.ErrUnsupported], and that
	// nothing arrives. Every other kind must arrive as sent: one message
	// holding the file's bytes, with its caption (not for stickers and
	// video notes, which have none). Unused with NoAttachments.
	UnsupportedMedia []platform.AttachmentKind

	// NoAlbum means the platform cannot send several attachments as one
	// album ([platform.OutboundMessage] Album): the suite checks that one
	// is refused with a permanent error wrapping [platform.ErrUnsupported].
	// False means an album of three photos must arrive, its photos in
	// order, as one message or several. Unused with NoAttachments.
	NoAlbum bool

	// NoDelete means the platform cannot delete messages: the suite
	// checks that a deletion ([platform.OutboundMessage] DeleteID) is
	// refused with a permanent error wrapping [platform.ErrUnsupported].
	// False means the result names the deleted message and, if the peer
	// is a [ShowingPeer], the chat no longer shows it.
	NoDelete bool

	// NoReplyKeyboard means the platform has no reply keyboards: the
	// suite checks that a message with one ([platform.ReplyKeyboard]
	// Rows) is refused with a permanent error wrapping
	// [platform.ErrUnsupported], while one that only removes the keyboard
	// (Remove) is accepted and its text arrives. False means the peer
	// must receive the keyboard, and the removal, as sent.
	NoReplyKeyboard bool

	// NoDownload means the adapter cannot fetch the files its events
	// carry: it does not implement [platform.Downloader], or its Download
	// fails with a permanent error wrapping [platform.ErrUnsupported].
	// False means it is a Downloader and the peer a [FilePeer]: a file a
	// user sends arrives as an event attachment that Download fetches
	// whole, and refuses with [platform.ErrFileTooLarge] under a smaller
	// limit.
	NoDownload bool

	// NoCallbackAnswer means the platform has no answers to button
	// presses: the adapter does not implement [platform.CallbackAnswerer],
	// or its AnswerCallback fails with a permanent error wrapping
	// [platform.ErrUnsupported]. False means it is a CallbackAnswerer and
	// the peer a [PressPeer]: a press arrives as an EventCallback with a
	// QueryID, and the answer reaches the peer.
	NoCallbackAnswer bool

	// NoChatAction means the platform shows no chat actions: the adapter
	// does not implement [platform.ChatActor], or its SendChatAction
	// fails with a permanent error wrapping [platform.ErrUnsupported].
	// False means it is a ChatActor whose "typing" succeeds and, if the
	// peer is an [ActionPeer], reaches the peer.
	NoChatAction bool

	// NoInline means the platform has no inline queries: the adapter does
	// not implement [platform.InlineAnswerer], or its AnswerInline fails
	// with a permanent error wrapping [platform.ErrUnsupported]. False
	// means it is an InlineAnswerer and the peer an [InlinePeer]: a query
	// and a chosen result arrive as events, and the answer reaches the
	// peer.
	NoInline bool

	// NoTopics means the platform has no topics in group chats: the suite
	// checks that a send to a chat with a Thread still arrives (the
	// adapter ignores the Thread). False means, if the peer is a
	// [TopicPeer], that a message said in a topic arrives with the topic
	// in its Chat.Thread and that a reply to its Chat lands in the topic;
	// for a peer that is not one, the check is skipped.
	NoTopics bool

	// NoReactions means the platform has no reactions: the suite checks
	// that setting one ([platform.OutboundMessage] ReactID) is refused
	// with a permanent error wrapping [platform.ErrUnsupported]. False
	// means, if the peer is a [ReactionPeer], that the bot's reaction
	// reaches the peer and a user's arrives as an [platform.EventReaction];
	// for a peer that is not one, the check is skipped.
	NoReactions bool

	// NoStream means the platform cannot show a reply growing: the suite
	// streams one with an Interval of -1 ([platform.Stream] sends the
	// final part only) and checks that it arrives as one message with the
	// whole text. False means the same for an adapter that is not a
	// [platform.StreamingAdapter], and, for one that is, that a reply
	// streamed at its StreamInterval ends as exactly one message with the
	// whole text (as a [ShowingPeer] shows it).
	NoStream bool
}

// unsupportedMedia reports whether f lists kind as one the platform
// cannot send.
func (f Features) unsupportedMedia(kind platform.AttachmentKind) bool {
	return slices.Contains(f.UnsupportedMedia, kind)
}

// Length of the long text when Features.MaxText is zero.
const defaultLongText = 16 << 10
