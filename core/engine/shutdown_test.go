package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// Shutdown makes Run return, after draining the replies handlers made.
func TestShutdownStopsRun(t *testing.T) {
	e, mem := newEngine(t)
	e.OnCommand("hi", func(c *engine.Context) error {
		c.ReplyText("hello")
		return nil
	})
	runDone := make(chan error, 1)
	go func() { runDone <- e.Run(context.Background()) }()
	mem.Say(dm, ann, "/hi")
	if _, err := mem.WaitSent(testCtx(t), dm.ID, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Shutdown")
	}
}

// After a forced shutdown, events still queued are dropped, not handled.
func TestForcedShutdownDropsQueuedEvents(t *testing.T) {
	synctest.Test(t, testForcedShutdownDropsQueuedEvents)
}

// Fake time: the 20 ms Shutdown deadline passes before the 50 ms release,
// however slow the machine.
func testForcedShutdownDropsQueuedEvents(t *testing.T) {
	e, _ := newEngine(t, engine.WithHandlerConcurrency(1))
	release := make(chan struct{})
	started := make(chan struct{})
	var handled sync.Map
	e.OnMessage(func(c *engine.Context) error {
		handled.Store(c.Text(), true)
		if c.Text() == "first" {
			close(started)
			<-release
		}
		return nil
	})
	must(t, e.HandleEvent(msg(dm, ann, "first")))
	<-started
	for _, s := range []string{"a", "b", "c"} {
		must(t, e.HandleEvent(msg(platform.Chat{ID: s, Type: platform.ChatPrivate}, ann, s)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(release)
	}()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v", err)
	}
	for _, s := range []string{"a", "b", "c"} {
		if _, ok := handled.Load(s); ok {
			t.Fatalf("event %q handled after the forced shutdown", s)
		}
	}
	if st := e.Stats(); st.Dropped != 3 {
		t.Fatalf("Dropped = %d; want 3", st.Dropped)
	}
}
