package engine_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// A goroutine started by a handler keeps seeing that handler's match while
// later matchers of the same event run (no data race under -race).
func TestHandlerContextIsItsOwn(t *testing.T) {
	e, _ := newEngine(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad error
	e.OnCommand("go", func(c *engine.Context) error {
		wg.Go(func() {
			for {
				if c.Command() != "go" || !slices.Equal(c.Args(), []string{"a"}) {
					bad = errors.New("match changed under a running goroutine")
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
		return nil
	})
	done := make(chan struct{})
	e.OnRegex(`^/go (a)$`, func(c *engine.Context) error {
		if c.Command() != "" || c.Matches()[1] != "a" {
			bad = errors.New("second handler saw the first one's match")
		}
		close(done)
		return nil
	}, engine.Priority(1))
	must(t, e.HandleEvent(msg(dm, ann, "/go a")))
	<-done
	close(stop)
	wg.Wait()
	if bad != nil {
		t.Fatal(bad)
	}
}

// A panicking rule is recovered and reported; the other matchers still run.
func TestRulePanics(t *testing.T) {
	var hookErrs []error
	var mu sync.Mutex
	r := &recorder{}
	e, _ := newEngine(t, engine.WithOnError(func(_ *engine.Context, err error) {
		mu.Lock()
		hookErrs = append(hookErrs, err)
		mu.Unlock()
	}))
	e.On(func(*engine.Context) bool { panic("bad rule") }, r.handler("never"))
	e.On(engine.And(nil, engine.Or(nil), engine.Not(engine.Not(nil))), r.handler("nil rules accept"), engine.Priority(1))
	e.OnMessage(r.handler("later"), engine.Priority(2))
	must(t, e.HandleEvent(msg(dm, ann, "x")))
	must(t, e.Shutdown(testCtx(t)))
	if got := r.entries(); !slices.Equal(got, []string{"nil rules accept", "later"}) {
		t.Fatalf("ran %q", got)
	}
	var pe *engine.HandlerPanicError
	if len(hookErrs) != 1 || !errors.As(hookErrs[0], &pe) || pe.Value != "bad rule" {
		t.Fatalf("OnError got %v", hookErrs)
	}
	if st := e.Stats(); st.HandlerPanics != 1 || st.Matched != 1 {
		t.Fatalf("Stats = %+v", st)
	}
}

// An event without a chat cannot be replied to: the Future says so at once.
func TestReplyWithoutChat(t *testing.T) {
	e, _ := newEngine(t)
	got := make(chan error, 1)
	e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
		_, err := c.ReplyText("where to?").Result()
		got <- err
		return nil
	})
	must(t, e.HandleEvent(platform.Event{Platform: "memory", Kind: platform.EventCallback, From: ann, Text: "data"}))
	if err := <-got; !errors.Is(err, engine.ErrNoChat) {
		t.Fatalf("Reply = %v; want ErrNoChat", err)
	}
}
