package platform

import (
	"context"
	"errors"
	"time"
)

// ErrAlreadyAnswered is wrapped by the [Permanent] error of an answer to a
// button press or an inline query that was answered before: by an
// earlier answer, or by the adapter itself because no answer came in
// time.
var ErrAlreadyAnswered = errors.New("platform: already answered")

// CallbackAnswer is a bot's answer to a button press ([EventCallback]):
// a short notification, or an alert the user must dismiss, or nothing at
// all (the zero value), which only tells the platform the press was
// handled (Telegram stops the button's spinner). It is a plain value.
type CallbackAnswer struct {
	// Text is the notification shown; empty shows none. Telegram allows
	// 200 characters.
	Text string `json:"text,omitempty"`
	// Alert shows Text in an alert instead of a passing notification.
	Alert bool `json:"alert,omitempty"`
	// URL is opened by the user's client instead (Telegram: a game's URL
	// or a t.me link that opens the bot with a parameter).
	URL string `json:"url,omitempty"`
}

// CallbackAnswerer is implemented by an [Adapter] whose platform waits for
// the bot to answer each button press, as Telegram does with
// answerCallbackQuery: until the answer, the user's client shows the
// button busy.
//
// AnswerCallback answers ev, an [EventCallback] of this adapter, with a,
// and returns once the platform took the answer or refused it. A press is
// answered at most once: the engine calls AnswerCallback with the
// handler's answer (Context.Answer), or, when the handling ended without
// one, with the zero CallbackAnswer. An adapter may answer a press itself
// when no answer came in time (the platform would refuse a late one, and
// the user would watch a busy button); a later AnswerCallback then fails
// with a [Permanent] error wrapping [ErrAlreadyAnswered]. The errors
// follow [Sender]'s kinds; a press without a QueryID is refused with a
// permanent error wrapping [ErrInvalidMessage]. AnswerCallback is safe for
// concurrent use, and works whether Run is running or not.
type CallbackAnswerer interface {
	Adapter
	AnswerCallback(ctx context.Context, ev Event, a CallbackAnswer) error
}

// ChatAction is a status a bot shows in a chat while it works on an
// answer: "typing", "upload_photo" and the others below, as Telegram
// names them.
type ChatAction string

// The chat actions.
const (
	ActionTyping          ChatAction = "typing"
	ActionUploadPhoto     ChatAction = "upload_photo"
	ActionRecordVideo     ChatAction = "record_video"
	ActionUploadVideo     ChatAction = "upload_video"
	ActionRecordVoice     ChatAction = "record_voice"
	ActionUploadVoice     ChatAction = "upload_voice"
	ActionUploadDocument  ChatAction = "upload_document"
	ActionChooseSticker   ChatAction = "choose_sticker"
	ActionFindLocation    ChatAction = "find_location"
	ActionRecordVideoNote ChatAction = "record_video_note"
	ActionUploadVideoNote ChatAction = "upload_video_note"
)

// Known reports whether a is one of the actions above.
func (a ChatAction) Known() bool {
	switch a {
	case ActionTyping, ActionUploadPhoto, ActionRecordVideo, ActionUploadVideo, ActionRecordVoice, ActionUploadVoice,
		ActionUploadDocument, ActionChooseSticker, ActionFindLocation, ActionRecordVideoNote, ActionUploadVideoNote:
		return true
	}
	return false
}

// ChatActor is implemented by an [Adapter] whose platform shows chat
// actions.
//
// SendChatAction shows action in chat for a few seconds (Telegram: 5, or
// until the bot's next message arrives), and returns once the platform
// took it. To show it longer, call it again (the engine's
// Context.ChatAction repeats it every 4 s). An action the platform does
// not know is refused with a [Permanent] error wrapping
// [ErrInvalidMessage]; other errors follow [Sender]'s kinds. It is safe
// for concurrent use.
type ChatActor interface {
	Adapter
	SendChatAction(ctx context.Context, chat Chat, action ChatAction) error
}

// InlineResult is one result of an answer to an inline query
// ([InlineAnswer]): what the user sees in the list (Title, Description,
// a thumbnail) and what picking it sends to the chat (Message).
type InlineResult struct {
	// ID is unique among the answer's results (Telegram: 1 to 64 bytes);
	// an [EventInlineResult] names the result chosen by it.
	ID string `json:"id"`
	// Title and Description are shown in the list; a text result needs a
	// Title.
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// ThumbnailURL is the picture shown in the list, or empty.
	ThumbnailURL string `json:"thumbnail_url,omitempty"`
	// Message is what picking the result sends: its Text in its
	// ParseMode and its inline Buttons, or one attachment, by URL or
	// FileID (not Data), with its caption and the Buttons. Nothing else
	// of an OutboundMessage is allowed.
	Message OutboundMessage `json:"message"`
}

// InlineAnswer answers an inline query ([EventInlineQuery]) with results
// to pick from. It is a plain value.
type InlineAnswer struct {
	// Results are shown in order; an empty list shows none.
	Results []InlineResult `json:"results"`
	// CacheTime is how long the platform may answer the same query with
	// these results without asking the bot again; zero means it must
	// always ask. (Telegram's own default, when a bot says nothing, is
	// 300 s.) It is rounded down to whole seconds.
	CacheTime time.Duration `json:"cache_time,omitempty"`
	// Personal keeps a cached answer to the user who asked.
	Personal bool `json:"personal,omitempty"`
	// NextOffset is the Offset the user's client asks with for more
	// results when they scroll to the end; empty means there are no more.
	NextOffset string `json:"next_offset,omitempty"`
}

// InlineAnswerer is implemented by an [Adapter] of a platform with inline
// queries (Telegram's inline mode).
//
// AnswerInline answers ev, an [EventInlineQuery] of this adapter, with a,
// at most once (a second answer is refused by the platform, with a
// [Permanent] error), and returns once the platform took it. Results it
// cannot send are refused with a permanent error wrapping
// [ErrInvalidMessage], or [ErrUnsupported] for a kind of result the
// platform does not have; other errors follow [Sender]'s kinds. It is
// safe for concurrent use.
type InlineAnswerer interface {
	Adapter
	AnswerInline(ctx context.Context, ev Event, a InlineAnswer) error
}
