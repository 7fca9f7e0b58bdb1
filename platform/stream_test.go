package platform_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/platform"
)

// streamSink is a Send for a Stream that records the parts it gets.
type streamSink struct {
	mu    sync.Mutex
	parts []sentPart
	delay time.Duration // each send takes this long
	fail  func(n int) error
}

type sentPart struct {
	at  time.Time
	msg platform.OutboundMessage
}

func (s *streamSink) send(ctx context.Context, msg platform.OutboundMessage) (platform.SendResult, error) {
	if err := msg.Validate(); err != nil {
		return platform.SendResult{}, err
	}
	s.mu.Lock()
	n := len(s.parts)
	s.parts = append(s.parts, sentPart{time.Now(), msg})
	s.mu.Unlock()
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	if s.fail != nil {
		if err := s.fail(n); err != nil {
			return platform.SendResult{}, err
		}
	}
	return platform.SendResult{MessageID: "m1", ChatID: "c", SentAt: time.Now()}, nil
}

func (s *streamSink) all() []sentPart {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentPart(nil), s.parts...)
}

// A fast writer's 100 chunks go as a few parts, each at least Interval
// after the one before, the text of each a prefix of the whole, and one
// final part with all of it, the buttons and the message ID.
func TestStreamCoalescesAndPaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &streamSink{delay: 50 * time.Millisecond}
		buttons := [][]platform.Button{{{Text: "again", Data: "again"}}}
		s, err := platform.NewStream(t.Context(), platform.StreamConfig{
			ID: "s1", Interval: time.Second, Send: sink.send,
			Message: platform.OutboundMessage{ParseMode: platform.ParseHTML, Buttons: buttons, ReplyToID: "4"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var whole strings.Builder
		for i := range 100 {
			chunk := strings.Repeat(string(rune('a'+i%26)), 20)
			whole.WriteString(chunk)
			if _, err := s.WriteString(chunk); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		res, err := s.Close(t.Context())
		if err != nil || res.MessageID != "m1" {
			t.Fatalf("Close = %+v, %v", res, err)
		}
		parts := sink.all()
		if n := len(parts); n < 3 || n > 8 {
			t.Fatalf("%d parts for 5 s of writing at one a second; want 3 to 8", n)
		}
		for i, p := range parts {
			final := i == len(parts)-1
			switch {
			case p.msg.Stream == nil || p.msg.Stream.ID != "s1" || p.msg.Stream.Final != final:
				t.Errorf("part %d: Stream = %+v", i, p.msg.Stream)
			case i > 0 && p.msg.Stream.MessageID != "m1":
				t.Errorf("part %d names message %q; want the m1 the first showed", i, p.msg.Stream.MessageID)
			case i == 0 && p.msg.Stream.MessageID != "":
				t.Errorf("first part names message %q", p.msg.Stream.MessageID)
			case !strings.HasPrefix(whole.String(), p.msg.Text):
				t.Errorf("part %d's text is not a prefix of the whole", i)
			case (p.msg.Buttons != nil) != final:
				t.Errorf("part %d has buttons %v", i, p.msg.Buttons)
			case p.msg.ParseMode != platform.ParseHTML || p.msg.ReplyToID != "4":
				t.Errorf("part %d lost the template: %+v", i, p.msg)
			}
			if i > 0 && p.at.Sub(parts[i-1].at) < time.Second {
				t.Errorf("part %d came %v after the one before; want at least 1 s", i, p.at.Sub(parts[i-1].at))
			}
		}
		if last := parts[len(parts)-1].msg.Text; last != whole.String() {
			t.Fatalf("final text has %d bytes; want the whole %d", len(last), whole.Len())
		}
		if s.Parts() != len(parts)-1 {
			t.Errorf("Parts = %d; want %d", s.Parts(), len(parts)-1)
		}
		if _, err := s.WriteString("late"); !errors.Is(err, platform.ErrStreamClosed) {
			t.Errorf("Write after Close = %v; want ErrStreamClosed", err)
		}
		if again, err := s.Close(t.Context()); err != nil || again != res {
			t.Errorf("second Close = %+v, %v; want the first's", again, err)
		}
	})
}

// With a negative interval only the final part goes; a failed part stops
// the parts, not the final one; an empty stream sends nothing.
func TestStreamModes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &streamSink{}
		s, err := platform.NewStream(t.Context(), platform.StreamConfig{ID: "final-only", Interval: -1, Send: sink.send})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			s.WriteString("word ")
			time.Sleep(time.Second)
		}
		if _, err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if parts := sink.all(); len(parts) != 1 || !parts[0].msg.Stream.Final || parts[0].msg.Text != strings.Repeat("word ", 10) {
			t.Fatalf("final-only stream sent %+v", parts)
		}

		failing := &streamSink{fail: func(n int) error {
			if n == 0 {
				return platform.Permanent(platform.ErrUnsupported)
			}
			return nil
		}}
		s, _ = platform.NewStream(t.Context(), platform.StreamConfig{ID: "fails", Send: failing.send})
		for range 5 {
			s.WriteString("x")
			time.Sleep(2 * time.Second)
		}
		if _, err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		parts := failing.all()
		if len(parts) != 2 || parts[1].msg.Text != "xxxxx" || !parts[1].msg.Stream.Final || parts[1].msg.Stream.MessageID != "" {
			t.Fatalf("after a failed part the stream sent %d parts: %+v; want the failed one and the final", len(parts), parts)
		}

		empty := &streamSink{}
		s, _ = platform.NewStream(t.Context(), platform.StreamConfig{ID: "empty", Send: empty.send})
		s.WriteString("  \n")
		if _, err := s.Close(t.Context()); !errors.Is(err, platform.ErrInvalidMessage) {
			t.Fatalf("Close of a blank stream = %v; want ErrInvalidMessage", err)
		}
		if n := len(empty.all()); n != 0 {
			t.Fatalf("a blank stream sent %d parts", n)
		}
	})
}

// A slow send does not hold up the writer, and what was written meanwhile
// goes as the next part.
func TestStreamSlowSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &streamSink{delay: 3 * time.Second}
		s, _ := platform.NewStream(t.Context(), platform.StreamConfig{ID: "slow", Interval: time.Second, Send: sink.send})
		start := time.Now()
		for range 30 {
			s.WriteString("ab")
			time.Sleep(100 * time.Millisecond)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("writes took %v; want 3 s: they wait for no send", d)
		}
		if _, err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		parts := sink.all()
		if len(parts) != 3 || len(parts[1].msg.Text) < 50 {
			t.Fatalf("parts %d, second %q; want 3, the second with what was written during the first", len(parts), parts[1].msg.Text)
		}
	})
}

// The end of the stream's context abandons it: Close returns its error and
// the loop ends.
func TestStreamContextEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		sink := &streamSink{}
		s, _ := platform.NewStream(ctx, platform.StreamConfig{ID: "gone", Send: sink.send})
		s.WriteString("hello")
		synctest.Wait()
		cancel()
		synctest.Wait()
		if _, err := s.Close(t.Context()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Close after the context ended = %v; want context.Canceled", err)
		}
		if _, err := platform.NewStream(ctx, platform.StreamConfig{Send: sink.send}); !errors.Is(err, platform.ErrInvalidMessage) {
			t.Fatalf("NewStream without ID = %v", err)
		}
		if _, err := platform.NewStream(ctx, platform.StreamConfig{ID: "x", Send: sink.send, Message: platform.OutboundMessage{Text: "x"}}); !errors.Is(err, platform.ErrInvalidMessage) {
			t.Fatalf("NewStream with a text template = %v", err)
		}
	})
}
