package onebot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Post types of OneBot v11 events.
const (
	PostMessage   = "message"
	PostNotice    = "notice"
	PostRequest   = "request"
	PostMetaEvent = "meta_event"
)

// Event is a decoded OneBot v11 event, as the implementation posted it. The
// adapter puts a *Event in [platform.Event.Raw] for handlers that need more
// than the neutral fields; JSON holds the original frame, so fields this
// type does not decode can still be read.
//
// Fields that do not apply to the event's post type are zero. Numeric IDs
// are decoded from JSON numbers or from strings of digits, since some
// implementations send either. The zero value is no event: DecodeEvent
// never returns it. One *Event may be seen by several handlers, from
// several goroutines: treat it as read-only.
type Event struct {
	Time     int64  // Unix time in seconds at which the event happened
	SelfID   int64  // the QQ ID of the bot that received it
	PostType string // message, notice, request or meta_event

	MessageType string        // message: private or group
	SubType     string        // the sub type: friend, normal, approve, leave, kick, connect, …
	MessageID   int64         // message: the message's ID
	UserID      int64         // the user the event is about (sender, joining member, requester)
	GroupID     int64         // the group, for group messages, notices and requests
	Message     Message       // message: its segments, from a CQ string or an array
	RawMessage  string        // message: the CQ-code string form
	Sender      MessageSender // message: the sender's profile, best effort

	NoticeType  string // notice: group_increase, group_decrease, group_recall, …
	OperatorID  int64  // notice: who did it (an admin who kicked, for example)
	RequestType string // request: friend or group
	Comment     string // request: the requester's message
	Flag        string // request: the token to approve or reject it with

	MetaEventType string          // meta_event: lifecycle or heartbeat
	Interval      int64           // heartbeat: milliseconds until the next one
	Status        json.RawMessage // heartbeat: the implementation's status object

	JSON json.RawMessage // the whole event as received
}

// MessageSender is the profile OneBot attaches to a message event
// ([Event.Sender]). Every field is best effort: implementations leave out
// what they do not know, and what is missing stays zero, so the zero value
// means that nothing is known (DisplayName then returns ""). It is a plain
// value, safe to copy and to read from several goroutines at once.
type MessageSender struct {
	UserID   int64
	Nickname string
	Card     string // the group card (group nickname), if any
	Role     string // owner, admin or member, in groups
}

// DisplayName returns the group card if set, else the nickname.
func (s MessageSender) DisplayName() string {
	if s.Card != "" {
		return s.Card
	}
	return s.Nickname
}

// ErrMalformedEvent is wrapped by [DecodeEvent]'s errors.
var ErrMalformedEvent = errors.New("onebot: malformed event")

// wireEvent mirrors the JSON of an event with tolerant field types.
type wireEvent struct {
	Time          flexInt         `json:"time"`
	SelfID        flexInt         `json:"self_id"`
	PostType      flexString      `json:"post_type"`
	MessageType   flexString      `json:"message_type"`
	SubType       flexString      `json:"sub_type"`
	MessageID     flexInt         `json:"message_id"`
	UserID        flexInt         `json:"user_id"`
	GroupID       flexInt         `json:"group_id"`
	Message       Message         `json:"message"`
	RawMessage    flexString      `json:"raw_message"`
	Sender        *wireSender     `json:"sender"`
	NoticeType    flexString      `json:"notice_type"`
	OperatorID    flexInt         `json:"operator_id"`
	RequestType   flexString      `json:"request_type"`
	Comment       flexString      `json:"comment"`
	Flag          flexString      `json:"flag"`
	MetaEventType flexString      `json:"meta_event_type"`
	Interval      flexInt         `json:"interval"`
	Status        json.RawMessage `json:"status"`
}

type wireSender struct {
	UserID   flexInt    `json:"user_id"`
	Nickname flexString `json:"nickname"`
	Card     flexString `json:"card"`
	Role     flexString `json:"role"`
}

// DecodeEvent decodes one event frame. The error wraps [ErrMalformedEvent]
// when data is not a JSON object, has no post_type, has a field of an
// unusable type (a user_id that is not a number, a message that is neither
// a string nor segments), or is a group's message or notice without its
// group_id (taken as its sender's private chat, its answers would go
// there). It never panics, whatever data holds.
func DecodeEvent(data []byte) (*Event, error) {
	var w wireEvent
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedEvent, err)
	}
	if w.PostType == "" {
		return nil, fmt.Errorf("%w: no post_type", ErrMalformedEvent)
	}
	if w.GroupID == 0 && (w.MessageType == "group" || strings.HasPrefix(string(w.NoticeType), "group_")) {
		return nil, fmt.Errorf("%w: a group's %s without its group_id", ErrMalformedEvent, w.PostType)
	}
	ev := &Event{
		Time:          int64(w.Time),
		SelfID:        int64(w.SelfID),
		PostType:      string(w.PostType),
		MessageType:   string(w.MessageType),
		SubType:       string(w.SubType),
		MessageID:     int64(w.MessageID),
		UserID:        int64(w.UserID),
		GroupID:       int64(w.GroupID),
		Message:       w.Message,
		RawMessage:    string(w.RawMessage),
		NoticeType:    string(w.NoticeType),
		OperatorID:    int64(w.OperatorID),
		RequestType:   string(w.RequestType),
		Comment:       string(w.Comment),
		Flag:          string(w.Flag),
		MetaEventType: string(w.MetaEventType),
		Interval:      int64(w.Interval),
		Status:        w.Status,
		JSON:          append(json.RawMessage(nil), data...),
	}
	if w.Sender != nil {
		ev.Sender = MessageSender{
			UserID:   int64(w.Sender.UserID),
			Nickname: string(w.Sender.Nickname),
			Card:     string(w.Sender.Card),
			Role:     string(w.Sender.Role),
		}
	}
	return ev, nil
}

// flexInt decodes a JSON integer, a string of digits, or null (as 0).
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	s := string(b)
	if s == "null" {
		*n = 0
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			*n = 0
			return nil
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("onebot: not an integer: %.40q", s)
	}
	*n = flexInt(v)
	return nil
}

// flexString decodes a JSON string, null (as ""), or a number or boolean
// (as its JSON text).
type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		return fmt.Errorf("onebot: not a string: %.40s", b)
	}
	*s = flexString(jsonText(b))
	return nil
}
