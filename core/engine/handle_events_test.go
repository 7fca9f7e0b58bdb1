package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// HandleEvents takes a batch in order, as HandleEvent takes each: every
// event handled once, each chat's in order (with a journal that records:
// package cluster's TestHandleEventsRecorded).
func TestHandleEventsInOrder(t *testing.T) {
	for _, j := range []struct {
		name string
		j    journal.Journal
	}{{"the default journal", nil}, {"a journal that is no EventBatcher", plainJournal{journal.NewLocal(nil)}}} {
		t.Run(j.name, func(t *testing.T) {
			var opts []engine.Option
			if j.j != nil {
				opts = append(opts, engine.WithJournal(j.j))
			}
			e, _ := newEngine(t, opts...)
			var mu sync.Mutex
			got := map[string][]string{}
			handled := make(chan struct{}, 30)
			e.OnMessage(func(c *engine.Context) error {
				mu.Lock()
				defer mu.Unlock()
				got[c.Chat().ID] = append(got[c.Chat().ID], c.Text())
				handled <- struct{}{}
				return nil
			})
			var evs []platform.Event
			want := map[string][]string{}
			for i := range 30 {
				chat := memory.Private(fmt.Sprint("c", i%3))
				ev := msg(chat, ann, fmt.Sprint(i))
				ev.ID = fmt.Sprint("e", i)
				evs = append(evs, ev)
				want[chat.ID] = append(want[chat.ID], ev.Text)
			}
			if n, err := e.HandleEvents(evs); n != len(evs) || err != nil {
				t.Fatalf("HandleEvents = %d, %v; want %d, nil", n, err, len(evs))
			}
			ctx := testCtx(t)
			for range evs {
				select {
				case <-handled:
				case <-ctx.Done():
					t.Fatal("not every event was handled")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for chat, texts := range want {
				if !slices.Equal(got[chat], texts) {
					t.Errorf("chat %s handled %v; want %v", chat, got[chat], texts)
				}
			}
		})
	}
}

// A batch stops at the first event the engine refuses: HandleEvents says
// how many it took and why it refused the next.
func TestHandleEventsStopsAtARefusal(t *testing.T) {
	e, _ := newEngine(t, engine.WithInboundQueueSize(1), engine.WithHandlerConcurrency(1))
	started, release := blockOnMessage(e)
	defer close(release)
	if err := e.HandleEvent(msg(dm, ann, "running")); err != nil {
		t.Fatal(err)
	}
	<-started
	// The chat's queue holds one: the second of the batch is refused, and
	// the third is not taken.
	evs := []platform.Event{msg(dm, ann, "queued"), msg(dm, ann, "refused"), msg(memory.Private("other"), ann, "after")}
	n, err := e.HandleEvents(evs)
	if n != 1 || !errors.Is(err, engine.ErrQueueFull) {
		t.Fatalf("HandleEvents = %d, %v; want 1 and ErrQueueFull", n, err)
	}
}

// After Shutdown began, HandleEvents takes nothing.
func TestHandleEventsAfterShutdown(t *testing.T) {
	e, _ := newEngine(t)
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n, err := e.HandleEvents([]platform.Event{msg(dm, ann, "x")}); n != 0 || !errors.Is(err, engine.ErrEngineClosed) {
		t.Fatalf("HandleEvents after Shutdown = %d, %v; want 0 and ErrEngineClosed", n, err)
	}
}

// plainJournal hides its journal's AppendEvents: a journal.Journal that is
// no journal.EventBatcher, whose events HandleEvents appends one by one.
type plainJournal struct{ journal.Journal }
