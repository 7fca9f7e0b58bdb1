package platform

import "time"

// EventKind says what happened in an [Event].
type EventKind string

// The kinds of inbound event.
const (
	EventMessage       EventKind = "message"        // a new message
	EventEditedMessage EventKind = "edited_message" // an existing message was edited
	EventCallback      EventKind = "callback"       // an inline button was pressed; Text holds its data
	EventMemberJoined  EventKind = "member_joined"  // From joined Chat
	EventMemberLeft    EventKind = "member_left"    // From left Chat
	EventOther         EventKind = "other"          // anything else; see Raw

	// EventInlineQuery is an inline query: From typed "@bot Text" in a
	// chat's input field and waits for results to pick from (see
	// [InlineAnswerer]). It has no Chat; QueryID names the query and
	// Inline.Offset the page of results asked for.
	EventInlineQuery EventKind = "inline_query"
	// EventInlineResult is an inline result From chose: Inline.ResultID
	// names it, Text is the query it answered. It has no Chat.
	EventInlineResult EventKind = "inline_result"
)

// Event is one inbound occurrence on a platform: a message, an edit, a button
// press, a member joining or leaving, an inline query.
//
// ID is unique per platform, across the adapter's restarts too (Telegram's
// update ID, a web chat's run and sequence number): a journal drops an event
// whose ID it saw handled, as a platform's redelivery. Platform is the adapter's [Adapter.Name]. Text is the message text
// (a media message's caption), a callback's data for [EventCallback], or
// the query of an inline event. MessageID is the platform's ID of the
// message the event is about, and ReplyToID the message it answers, if
// any. Attachments are the files the message carries (see [Attachment];
// download one with a [Downloader]). QueryID names what the event asks
// the bot to answer: a button press ([CallbackAnswerer]) or an inline
// query ([InlineAnswerer]). Raw holds the platform's own value (a
// *tgbotapi.Update, a decoded OneBot event) for handlers that need more
// than the neutral fields; it is not serialised.
//
// Event is a plain value that marshals to JSON without Raw. Copying it is
// cheap and safe, but a copy shares Attachments with the original: treat
// them as read-only.
type Event struct {
	ID        string    `json:"id"`
	Platform  string    `json:"platform"`
	Kind      EventKind `json:"kind"`
	Chat      Chat      `json:"chat"`
	From      User      `json:"from"`
	Text      string    `json:"text,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	ReplyToID string    `json:"reply_to_id,omitempty"`
	Time      time.Time `json:"time"`
	Raw       any       `json:"-"`

	// Attachments are the message's photos, documents, videos, voice
	// notes and other files, in the platform's order; nil for a message
	// without any and for other kinds of event.
	Attachments []Attachment `json:"attachments,omitempty"`
	// QueryID is the platform's ID of the button press (EventCallback)
	// or inline query (EventInlineQuery) to answer; empty for other
	// events and where the platform has no such ID.
	QueryID string `json:"query_id,omitempty"`
	// Inline holds what an inline event has besides Text and QueryID.
	Inline InlineQuery `json:"inline,omitzero"`
}

// InlineQuery is what an [EventInlineQuery] or [EventInlineResult] carries
// besides its Text (the query) and QueryID. The zero value is an event
// that is neither.
type InlineQuery struct {
	// Offset is the offset of the results asked for: empty for the first
	// page, else the NextOffset of the bot's last answer
	// ([InlineAnswer]).
	Offset string `json:"offset,omitempty"`
	// ChatType is the kind of chat the query was typed in, as the
	// platform names it (Telegram: "sender", "private", "group",
	// "supergroup" or "channel"), or empty when unknown.
	ChatType string `json:"chat_type,omitempty"`
	// ResultID is the ID of the result chosen ([EventInlineResult]).
	ResultID string `json:"result_id,omitempty"`
	// MessageID is the platform's ID of the message a chosen result
	// sent, when it has one (Telegram's inline_message_id, given only for
	// results with buttons).
	MessageID string `json:"message_id,omitempty"`
}
