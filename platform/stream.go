package platform

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// StreamPart marks an [OutboundMessage] as one step of a streamed reply:
// a reply shown growing while it is generated (an LLM's answer), which
// ends as one message. Each part's Text is the whole text so far. Parts
// of one stream share ID and go to one chat in order, through the sender
// chain like any message (so they are rate-limited, retried and kept in
// order with the chat's other sends); [Stream] sends them.
//
// An adapter shows the parts as its platform allows: Telegram's as a
// message draft that grows in a private chat (sendMessageDraft), else as a
// message sent by the first part and edited by the others; the browser
// chat's as a message edited in place. A part's result names the message
// that shows the stream (empty while nothing but a draft shows it), and
// the next part carries that ID in MessageID. The Final part ends the
// stream: its Text, ParseMode and Buttons are the reply's, and its result
// names the message that stays. An adapter that cannot show a reply
// growing sends nothing for the other parts (or refuses them with a
// [Permanent] error wrapping [ErrUnsupported]) and sends the Final part
// as an ordinary message.
type StreamPart struct {
	// ID names the stream: the same for all its parts, different for
	// every stream of a chat.
	ID string `json:"id"`
	// MessageID is the message showing the stream so far, from the result
	// of the part before; empty for the first part and while none does.
	MessageID string `json:"message_id,omitempty"`
	// Final marks the last part.
	Final bool `json:"final,omitempty"`
}

// StreamingAdapter is implemented by an [Adapter] whose Sender shows a
// streamed reply growing ([StreamPart]).
//
// StreamInterval returns the least time between the starts of two parts
// of a stream to chat that keeps the sends within the platform's limits
// (Telegram: a second in a private chat, three in a group, as edits count
// against a chat's budget); [Stream] waits that long between parts and
// merges what was written meanwhile into one part. It must be safe for
// concurrent use.
type StreamingAdapter interface {
	Adapter
	StreamInterval(chat Chat) time.Duration
}

// DefaultStreamInterval is the least time between the parts of a
// [Stream] whose StreamConfig Interval is zero.
const DefaultStreamInterval = time.Second

// ErrStreamClosed is returned by writes to a [Stream] after Close.
var ErrStreamClosed = errors.New("platform: stream closed")

// StreamConfig configures a [Stream].
type StreamConfig struct {
	// ID names the stream (its parts' StreamPart ID); required.
	ID string
	// Message is the reply's template: its ParseMode, Buttons, Reply or
	// ReplyToID and send options go with the parts (Buttons with the
	// final part only). It has no Text, Attachments, Keyboard or
	// operation (EditID and the others).
	Message OutboundMessage
	// Interval is the least time between the starts of two parts (see
	// [StreamingAdapter]); zero means DefaultStreamInterval, and a
	// negative value sends the final part only, for a platform that
	// cannot show a reply growing.
	Interval time.Duration
	// Send sends one part to the chat and returns its result: through the
	// sender chain, in order with the chat's other sends, waiting for the
	// outcome (the engine's reply path). It is called from one goroutine
	// at a time; required.
	Send func(ctx context.Context, msg OutboundMessage) (SendResult, error)
}

// Stream is a reply written piece by piece and shown growing: Write adds
// text, and a goroutine of the Stream sends the text so far as a
// [StreamPart] whenever the last part finished and Interval has passed
// since it started, so what is written between two parts goes as one, and
// a fast writer never floods the chat; Close sends the final part and
// returns its result. Writes never wait for a send.
//
// When a part before the final fails, the Stream sends no more of them
// and the final part still goes. Close must be called (or the context
// given to NewStream end), or the goroutine stays. A Stream is safe for
// concurrent use.
type Stream struct {
	cfg  StreamConfig
	ctx  context.Context
	wake chan struct{} // a write happened (capacity 1)
	stop chan struct{} // closed by Close: the loop ends after its send
	done chan struct{} // closed when the loop ended

	mu       sync.Mutex
	text     strings.Builder
	version  int       // counts writes
	sent     int       // the version of the last part sent
	shown    string    // the message showing the stream
	last     time.Time // when the last part started
	failed   error     // a part's failure: no more parts but the final
	closed   bool
	result   SendResult
	err      error
	parts    int
	closeMu  sync.Mutex // one Close at a time
	ended    bool
	stopOnce sync.Once
}

// NewStream starts a stream with cfg and returns it; its parts are sent
// with ctx (whose end abandons the stream: the loop stops, and Close
// returns ctx's error). It fails with an error wrapping
// [ErrInvalidMessage] for a config without ID or Send, or with a template
// it cannot stream.
func NewStream(ctx context.Context, cfg StreamConfig) (*Stream, error) {
	switch m := cfg.Message; {
	case cfg.ID == "":
		return nil, fmt.Errorf("%w: a stream without an ID", ErrInvalidMessage)
	case cfg.Send == nil:
		return nil, fmt.Errorf("%w: a stream without a Send function", ErrInvalidMessage)
	case m.Text != "" || len(m.Attachments) > 0 || m.Keyboard != nil || m.Album:
		return nil, fmt.Errorf("%w: a stream's template has no Text, Attachments or Keyboard", ErrInvalidMessage)
	case m.EditID != "" || m.DeleteID != "" || m.ReactID != "" || m.Invoice != nil || m.Call != nil || m.Stream != nil:
		return nil, fmt.Errorf("%w: a stream's template is a message, not an operation", ErrInvalidMessage)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultStreamInterval
	}
	s := &Stream{cfg: cfg, ctx: ctx, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s, nil
}

// Write adds p to the text and returns len(p), or [ErrStreamClosed]
// after Close. It implements io.Writer; it never waits for a send.
func (s *Stream) Write(p []byte) (int, error) {
	return s.WriteString(string(p))
}

// WriteString adds text; see [Stream.Write].
func (s *Stream) WriteString(text string) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrStreamClosed
	}
	s.text.WriteString(text)
	s.version++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return len(text), nil
}

// Text returns the text written so far.
func (s *Stream) Text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// Parts returns how many parts before the final were sent successfully.
func (s *Stream) Parts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parts
}

// loop sends the parts before the final one.
func (s *Stream) loop() {
	defer close(s.done)
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		select {
		case <-s.wake:
		case <-s.stop:
			return
		case <-s.ctx.Done():
			return
		}
		if s.cfg.Interval < 0 {
			continue
		}
		for {
			s.mu.Lock()
			text, version := s.text.String(), s.version
			due := s.last.Add(s.cfg.Interval)
			ready := version != s.sent && s.failed == nil && strings.TrimSpace(text) != ""
			s.mu.Unlock()
			if !ready {
				break
			}
			if wait := time.Until(due); !s.last.IsZero() && wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-s.stop:
					return
				case <-s.ctx.Done():
					return
				}
				continue // take what was written meanwhile too
			}
			s.sendPart(text, version)
		}
	}
}

// sendPart sends a part before the final one with text, written up to
// version.
func (s *Stream) sendPart(text string, version int) {
	s.mu.Lock()
	s.last = time.Now()
	msg := s.partLocked(text, false)
	s.mu.Unlock()
	res, err := s.cfg.Send(s.ctx, msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = version
	if err != nil {
		s.failed = err
		return
	}
	s.parts++
	if res.MessageID != "" {
		s.shown = res.MessageID
	}
}

// partLocked returns the part with text; s.mu must be held.
func (s *Stream) partLocked(text string, final bool) OutboundMessage {
	msg := s.cfg.Message
	msg.Text = text
	if !final {
		msg.Buttons = nil
	}
	msg.Stream = &StreamPart{ID: s.cfg.ID, MessageID: s.shown, Final: final}
	return msg
}

// Close ends the stream: it stops taking writes, waits for the part in
// flight, waits what is left of Interval since it started, and sends the
// final part with the whole text, returning its result: the message that
// shows the reply. A stream with no text (or white space only) sends
// nothing and fails with an error wrapping [ErrInvalidMessage]. ctx bounds
// Close's waits and the final send; the end of the context given to
// NewStream fails it too. Later calls return the first call's outcome.
func (s *Stream) Close(ctx context.Context) (SendResult, error) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.ended {
		return s.result, s.err
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	select {
	case <-s.done:
	case <-ctx.Done():
		return SendResult{}, ctx.Err() // the part in flight still ends; Close may be called again
	}
	s.ended = true
	s.result, s.err = s.final(ctx)
	return s.result, s.err
}

// final sends the final part, once the loop ended.
func (s *Stream) final(ctx context.Context) (SendResult, error) {
	if err := s.ctx.Err(); err != nil {
		return SendResult{}, err
	}
	s.mu.Lock()
	text := s.text.String()
	wait := time.Until(s.last.Add(s.cfg.Interval))
	if s.last.IsZero() {
		wait = 0
	}
	msg := s.partLocked(text, true)
	s.mu.Unlock()
	if strings.TrimSpace(text) == "" {
		return SendResult{}, fmt.Errorf("%w: a stream closed without text", ErrInvalidMessage)
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return SendResult{}, ctx.Err()
		case <-s.ctx.Done():
			return SendResult{}, s.ctx.Err()
		}
	}
	return s.cfg.Send(ctx, msg)
}
