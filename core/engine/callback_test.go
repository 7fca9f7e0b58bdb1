package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// bareAdapter is a memory adapter with none of the optional interfaces:
// a platform without answers, chat actions, inline queries or downloads.
type bareAdapter struct{ m *memory.Adapter }

func (b bareAdapter) Name() string                                       { return b.m.Name() }
func (b bareAdapter) Run(ctx context.Context, in platform.Inbound) error { return b.m.Run(ctx, in) }
func (b bareAdapter) Sender() platform.Sender                            { return b.m.Sender() }

func press(id, data string) platform.Event {
	return platform.Event{ID: id, Platform: memory.DefaultName, Kind: platform.EventCallback, Chat: dm, From: ann,
		Text: data, QueryID: "q" + id, MessageID: "7"}
}

// A handler's answer is the press's one answer; a second fails, and the
// end of the handling adds none. A press no handler answered, or that no
// matcher took, is answered empty as soon as its handling ends.
func TestAnswerPress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		second := make(chan error, 1)
		e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			switch c.Text() {
			case "answer":
				must(t, c.Answer("Saved", true))
				second <- c.Answer("again", false)
			case "slow":
				time.Sleep(3 * time.Second) // no answer: the engine's comes after
			}
			return nil
		})
		e.OnCommand("x", func(c *engine.Context) error {
			if err := c.Answer("x", false); !errors.Is(err, platform.ErrInvalidMessage) || !platform.IsPermanent(err) {
				t.Errorf("Answer to a message = %v; want a permanent ErrInvalidMessage", err)
			}
			return nil
		})
		start := time.Now()
		handleAndWait(t, e, press("1", "answer"))
		if err := <-second; !errors.Is(err, platform.ErrAlreadyAnswered) || !platform.IsPermanent(err) {
			t.Fatalf("second Answer = %v; want a permanent ErrAlreadyAnswered", err)
		}
		handleAndWait(t, e, press("2", "slow"))
		time.Sleep(3 * time.Second)
		synctest.Wait()
		handleAndWait(t, e, msg(dm, ann, "/x"))
		got := mem.Answers()
		if len(got) != 2 {
			t.Fatalf("answers = %+v; want 2", got)
		}
		if a := got[0]; a.Event.ID != "1" || a.Callback != (platform.CallbackAnswer{Text: "Saved", Alert: true}) || !a.At.Equal(start) {
			t.Errorf("first answer = %+v; want the handler's, at once", a)
		}
		if a := got[1]; a.Event.ID != "2" || a.Callback != (platform.CallbackAnswer{}) || a.At.Sub(start) != 3*time.Second {
			t.Errorf("second answer = %+v, %v after the start; want an empty one when the handler returned, after 3s", a, a.At.Sub(start))
		}
	})
}

// A press that no matcher accepted is answered empty too.
func TestUnmatchedPressAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		handleAndWait(t, e, press("1", "nobody"))
		if got := mem.Answers(); len(got) != 1 || got[0].Callback != (platform.CallbackAnswer{}) {
			t.Fatalf("answers = %+v; want one empty", got)
		}
	})
}

// Presses a handler's Next took are answered empty at the end of its
// handling, unless it answered them; the handler's answer to one is kept.
func TestPressesTakenByNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		e.OnCommand("ask", func(c *engine.Context) error {
			isPress := func(ev platform.Event) bool { return ev.Kind == platform.EventCallback }
			first, err := c.Next(c.Context(), isPress)
			if err != nil {
				return err
			}
			must(t, c.AnswerCallback(first, platform.CallbackAnswer{Text: "got " + first.Text}))
			if err := c.AnswerCallback(first, platform.CallbackAnswer{}); !errors.Is(err, platform.ErrAlreadyAnswered) {
				t.Errorf("second answer to a taken press = %v", err)
			}
			_, err = c.Next(c.Context(), isPress) // not answered by the handler
			return err
		})
		must(t, e.HandleEvent(msg(dm, ann, "/ask")))
		synctest.Wait()
		must(t, e.HandleEvent(press("p1", "a")))
		synctest.Wait()
		must(t, e.HandleEvent(press("p2", "b")))
		synctest.Wait()
		got := mem.Answers()
		if len(got) != 2 || got[0].Event.ID != "p1" || got[0].Callback.Text != "got a" || got[1].Event.ID != "p2" || got[1].Callback != (platform.CallbackAnswer{}) {
			t.Fatalf("answers = %+v; want the handler's to p1, then an empty one to p2", got)
		}
	})
}

// flakyAnswerer fails its first answer with an error that may pass.
type flakyAnswerer struct {
	bareAdapter
	calls atomic.Int32
}

func (f *flakyAnswerer) AnswerCallback(ctx context.Context, ev platform.Event, a platform.CallbackAnswer) error {
	if f.calls.Add(1) == 1 {
		return errors.New("connection reset")
	}
	return f.m.AnswerCallback(ctx, ev, a)
}

// An answer that failed for a reason that may pass leaves the press
// unanswered: the engine's empty answer still goes. Without a
// CallbackAnswerer, Answer fails with ErrUnsupported.
func TestAnswerFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		fa := &flakyAnswerer{bareAdapter: bareAdapter{mem}}
		e, err := engine.New(engine.WithAdapter(fa))
		must(t, err)
		defer e.Shutdown(context.Background())
		e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			if err := c.Answer("hi", false); err == nil || platform.IsPermanent(err) {
				t.Errorf("Answer = %v; want the adapter's transient error", err)
			}
			return nil
		})
		handleAndWait(t, e, press("1", "x"))
		if got := mem.Answers(); len(got) != 1 || got[0].Callback != (platform.CallbackAnswer{}) {
			t.Fatalf("answers = %+v; want the engine's empty one after the failed one", got)
		}

		bare, err := engine.New(engine.WithAdapter(bareAdapter{memory.New()}))
		must(t, err)
		defer bare.Shutdown(context.Background())
		bare.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			if err := c.Answer("hi", false); !errors.Is(err, platform.ErrUnsupported) || !platform.IsPermanent(err) {
				t.Errorf("Answer without a CallbackAnswerer = %v; want a permanent ErrUnsupported", err)
			}
			return nil
		})
		handleAndWait(t, bare, press("1", "x"))
	})
}

// A handler answers the button press it runs for: the platform shows the
// text, and the button stops being busy.
func ExampleContext_Answer() {
	mem := memory.New()
	e, _ := engine.New(engine.WithAdapter(mem))
	e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
		if err := c.Answer("Saved", false); err != nil && !errors.Is(err, platform.ErrUnsupported) {
			return err
		}
		// … then the slow work: the user is not kept waiting.
		return nil
	})
	_ = e.HandleEvent(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventCallback,
		Chat: memory.Private("1"), QueryID: "q1", Text: "save"})
	_ = e.Shutdown(context.Background())
	for _, a := range mem.Answers() {
		fmt.Println(a.Event.Text, "→", a.Callback.Text)
	}
	// Output: save → Saved
}
