package platform

import (
	"context"
	"encoding/json"
	"time"
)

// SendRequest asks a [Sender] to deliver Message to Target. Platform names
// the adapter the request is for ([Adapter.Name]); the engine sets it, and
// middleware uses it to label logs and metrics.
type SendRequest struct {
	Platform string          `json:"platform,omitempty"`
	Target   Chat            `json:"target"`
	Message  OutboundMessage `json:"message"`
}

// SendResult describes a delivered message: the platform's ID for it (empty
// where the platform does not return one, such as an asynchronous OneBot
// send), the chat it went to, and when the platform accepted it. When a long
// text is split into several messages, MessageID is the last part's.
// Raw is the platform's own answer, where an adapter gives it: the result
// of a method call ([OutboundMessage] Call) as JSON. Duplicate is set by
// the engine, never by an adapter, on the result of a send the journal
// knew as made before (an engine.SendID seen within its window, or a
// handler's send repeated by its run again after a restart): that send
// was not made now, and the other fields are the first one's when the
// journal kept them, else empty. SendResult is comparable.
type SendResult struct {
	MessageID string    `json:"message_id,omitempty"`
	ChatID    string    `json:"chat_id"`
	SentAt    time.Time `json:"sent_at"`
	Raw       RawJSON   `json:"raw,omitempty"`
	Duplicate bool      `json:"duplicate,omitempty"`
}

// RawJSON is a JSON value kept as its text, as json.RawMessage is, but
// comparable, so the values holding it are. It marshals as the JSON it
// holds (null when empty or not JSON) and unmarshals any JSON value.
type RawJSON string

// MarshalJSON returns r as it is, or null when it is empty or not JSON.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if r == "" || !json.Valid([]byte(r)) {
		return []byte("null"), nil
	}
	return []byte(r), nil
}

// UnmarshalJSON keeps b as it is (null as empty).
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = ""
		return nil
	}
	*r = RawJSON(b)
	return nil
}

// Sender delivers messages to a platform.
//
// Send blocks until the platform has accepted or refused the message, or ctx
// ends; it returns ctx's error (possibly wrapped) in the last case. A failed
// send's error says whether trying again can help: errors made with
// [Permanent] must not be retried, errors made with [NewRetryAfter] may be
// retried after the given time, and any other error may be retried after a
// backoff. Implementations must be safe for concurrent use; Herald's
// dispatcher calls Send for one chat at a time but for many chats at once.
type Sender interface {
	Send(ctx context.Context, req SendRequest) (SendResult, error)
}

// SenderFunc adapts an ordinary function to the [Sender] interface, as
// http.HandlerFunc does for http.Handler.
type SenderFunc func(ctx context.Context, req SendRequest) (SendResult, error)

// Send calls f(ctx, req).
func (f SenderFunc) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	return f(ctx, req)
}
