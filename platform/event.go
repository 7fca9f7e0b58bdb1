package platform

import (
	"encoding/json"
	"strings"
	"time"
)

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

	// EventReaction is a change of a user's reactions to a message:
	// MessageID names the message, From the user (or the chat that
	// reacted anonymously), Reactions.Old and Reactions.New the reactions
	// before and after.
	EventReaction EventKind = "reaction"
	// EventReactionCount is a change of the anonymous reactions to a
	// message (a channel's): Reactions.Counts holds them all. It has no
	// From.
	EventReactionCount EventKind = "reaction_count"

	// EventMemberUpdated is a change of a member's status in Chat, made by
	// From: Member.User is the member, Member.Old and Member.New the
	// statuses. (EventMemberJoined and EventMemberLeft come from the
	// chat's service messages; a platform may send both for one join.)
	EventMemberUpdated EventKind = "member_updated"

	// EventBotBlocked, EventBotUnblocked, EventBotAdded and EventBotRemoved
	// are changes of the bot's own membership, with Member as for
	// EventMemberUpdated (Member.User is the bot) and From the user who
	// made it: in a private chat From blocked the bot (Telegram: the bot's
	// status became "kicked") or unblocked it; in a group or channel the
	// bot was added (became a member or administrator) or removed (left
	// or was banned). A bot that broadcasts stops sending to a chat that
	// blocked it or removed it. EventBotMemberChanged is any other change
	// of the bot's status (promoted, restricted).
	EventBotBlocked       EventKind = "bot_blocked"
	EventBotUnblocked     EventKind = "bot_unblocked"
	EventBotAdded         EventKind = "bot_added"
	EventBotRemoved       EventKind = "bot_removed"
	EventBotMemberChanged EventKind = "bot_member_changed"

	// EventJoinRequest is a request by From to join Chat, which the bot
	// may approve or decline (see [JoinRequestAnswerer]); Text is the
	// user's bio, Member.InviteLink the link used and Member.UserChatID
	// the private chat the bot may write to the user in meanwhile.
	EventJoinRequest EventKind = "join_request"

	// EventPreCheckout is the last step of a payment before it is made:
	// From confirmed the order of an invoice the bot sent (Payment), and
	// the platform waits for the bot to accept or refuse it (see
	// [PreCheckoutAnswerer]); QueryID names the query. It has no Chat.
	EventPreCheckout EventKind = "pre_checkout"
	// EventPayment is a payment made: a service message in Chat from From,
	// with Payment holding the amount, the invoice's payload and the
	// platform's charge ID (needed for a refund).
	EventPayment EventKind = "payment"
	// EventRefund is a payment refunded, as a service message, with
	// Payment as for EventPayment.
	EventRefund EventKind = "refund"

	// EventBusinessConnection is a business account connecting the bot,
	// or changing or ending that connection: Business describes it, From
	// is the account's user, and Chat the private chat with that user,
	// with BusinessConnectionID set.
	EventBusinessConnection EventKind = "business_connection"
	// EventMessagesDeleted is messages deleted from Chat (Telegram: from a
	// connected business account's chat); MessageIDs names them.
	EventMessagesDeleted EventKind = "messages_deleted"
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
// the bot to answer: a button press ([CallbackAnswerer]), an inline
// query ([InlineAnswerer]) or a pre-checkout query
// ([PreCheckoutAnswerer]). Raw holds the platform's own value for
// handlers that need more than the neutral fields: Telegram's adapter
// puts the update there as Telegram sent it, a json.RawMessage, so every
// field of it can be read; other adapters their decoded values (a OneBot
// event).
//
// Event is a plain value that marshals to JSON; Raw is kept when it is a
// json.RawMessage holding valid JSON (as "raw", and read back as a
// json.RawMessage), and left out otherwise. Copying an Event is cheap and
// safe, but a copy shares Attachments, MessageIDs, Raw and the slices of
// Reactions with the original: treat them as read-only.
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

	// Reactions holds the reactions of an EventReaction or
	// EventReactionCount; nil for other events.
	Reactions *ReactionUpdate `json:"reactions,omitempty"`
	// Member holds the change of an EventMemberUpdated, of the bot's
	// membership events (EventBotBlocked and the others) and the request
	// of an EventJoinRequest; nil for other events.
	Member *MemberUpdate `json:"member,omitempty"`
	// Payment holds the payment of an EventPreCheckout, EventPayment or
	// EventRefund; nil for other events.
	Payment *Payment `json:"payment,omitempty"`
	// Business holds the connection of an EventBusinessConnection; nil
	// for other events.
	Business *BusinessConnection `json:"business,omitempty"`
	// MessageIDs are the messages of an EventMessagesDeleted.
	MessageIDs []string `json:"message_ids,omitempty"`
}

// eventJSON is Event without its methods, for its JSON methods.
type eventJSON Event

// MarshalJSON returns e as JSON: its fields by their tags, and Raw as
// "raw" when it is a json.RawMessage holding valid JSON (it is left out
// otherwise).
func (e Event) MarshalJSON() ([]byte, error) {
	b, ok := appendEventJSON(make([]byte, 0, 256), &e)
	var err error
	if !ok {
		b, err = json.Marshal(eventJSON(e))
	}
	raw, _ := e.Raw.(json.RawMessage)
	if err != nil || len(raw) == 0 || len(b) < 2 || !json.Valid(raw) {
		return b, err
	}
	// "raw" is the object's last member, as it is: checked once above,
	// where marshalling a struct that holds it checks and copies it again.
	out := make([]byte, 0, len(b)+len(`,"raw":`)+len(raw))
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"raw":`...)
	out = append(out, raw...)
	return append(out, '}'), nil
}

// UnmarshalJSON reads e from JSON written by [Event.MarshalJSON]; a "raw"
// value becomes a json.RawMessage in Raw.
func (e *Event) UnmarshalJSON(b []byte) error {
	var v struct {
		eventJSON
		Raw json.RawMessage `json:"raw"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Event(v.eventJSON)
	e.Raw = nil
	if len(v.Raw) > 0 && string(v.Raw) != "null" {
		e.Raw = v.Raw
	}
	return nil
}

// RawJSON returns Raw when it is a json.RawMessage (Telegram's update as
// it was sent), else nil.
func (e Event) RawJSON() json.RawMessage {
	raw, _ := e.Raw.(json.RawMessage)
	return raw
}

// CallbackArgs reports whether e is a button press ([EventCallback])
// whose data starts with prefix, and returns the data after it: for data
// made with [CallbackData]("vote", "yes"), CallbackArgs("vote:") returns
// "yes". An empty prefix matches every press.
func (e Event) CallbackArgs(prefix string) (string, bool) {
	if e.Kind != EventCallback {
		return "", false
	}
	return strings.CutPrefix(e.Text, prefix)
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
