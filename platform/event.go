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
)

// Event is one inbound occurrence on a platform: a message, an edit, a button
// press, a member joining or leaving.
//
// ID is unique per platform (Telegram's update ID, a web chat's sequence
// number); Platform is the adapter's [Adapter.Name]. Text is the message text,
// or a callback's data for [EventCallback]. MessageID is the platform's ID of
// the message the event is about, and ReplyToID the message it answers, if
// any. Raw holds the platform's own value (a *tgbotapi.Update, a decoded
// OneBot event) for handlers that need more than the neutral fields; it is
// not serialised.
//
// Event is a plain value: copying it is cheap and safe, and it marshals to
// JSON without Raw.
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
}
