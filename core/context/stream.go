package context

import (
	stdctx "context"
	"strings"
	"sync"

	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Stream is a reply shown growing while it is written — an answer a model
// generates token by token — that ends as one message: Write adds text,
// and the reply shows what was written so far, paced to the platform's
// limits (Telegram: a message draft in a private chat, else a message
// edited at most every second in a private chat and every three seconds
// in a group; the browser chat: a message edited in place); Close sends
// the whole text as the final message and returns its result. Made by
// [Context.Stream].
//
// The parts go through the sender chain and the chat's queue, in order
// with the handler's other replies. The stream is one effect of the
// handling — its final message: a replay (see Context.Next) streams
// nothing again, and its Close returns the recorded result. A Stream is
// safe for concurrent use; Close must be called (or the handler's context
// end), or what was written is never sent.
type Stream struct {
	s        *platform.Stream
	replayed *future.Future[platform.SendResult]

	mu   sync.Mutex // a replay's text
	text strings.Builder
}

// Stream starts a streamed reply to the event's chat; msg is its template
// (parse mode, buttons, reply parameters, send options), with no text. It
// returns ErrNoChat for an event without a chat, an error wrapping
// platform.ErrInvalidMessage for a template with text, attachments or an
// operation, and the errors of the handling's effects (see Next).
func (c *Context) Stream(msg platform.OutboundMessage) (*Stream, error) {
	st, err := c.x.Stream()
	if err != nil {
		return nil, err
	}
	if st.Replayed != nil {
		return &Stream{replayed: st.Replayed}, nil
	}
	s, err := platform.NewStream(c.Context(), platform.StreamConfig{ID: st.ID, Message: msg, Interval: st.Interval, Send: st.Send})
	if err != nil {
		return nil, err
	}
	return &Stream{s: s}, nil
}

// Write adds p to the reply's text; it never waits for a send. It
// returns platform.ErrStreamClosed after Close.
func (s *Stream) Write(p []byte) (int, error) { return s.WriteString(string(p)) }

// WriteString adds text to the reply; see Write.
func (s *Stream) WriteString(text string) (int, error) {
	if s.s != nil {
		return s.s.WriteString(text)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.WriteString(text)
}

// Text returns what was written so far.
func (s *Stream) Text() string {
	if s.s != nil {
		return s.s.Text()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// Close ends the reply: it sends the whole text as the final message and
// returns its result, or ctx's error if ctx ends first (the message is
// still sent). A second Close returns the first's outcome.
func (s *Stream) Close(ctx stdctx.Context) (platform.SendResult, error) {
	if s.s != nil {
		return s.s.Close(ctx)
	}
	return s.replayed.Wait(ctx)
}
