package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/platform"
)

// A conversation's replays get back what its first run did: Once's fn
// runs once, a session's Update is made once, and the question is sent
// once, however many times the handler runs to its waits.
func TestReplaysRepeatNoEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		var calls atomic.Int32
		visits := engine.NewChatSession[int]("visits", 0)
		e.OnCommand("survey", func(c *engine.Context) error {
			ticket, err := engine.Once(c, "ticket", func(context.Context) (string, error) {
				return fmt.Sprint("T", calls.Add(1)), nil
			})
			if err != nil {
				return err
			}
			n, err := visits.Update(c, func(n *int) error { *n++; return nil })
			if err != nil {
				return err
			}
			var answers []string
			for _, q := range []string{"First?", "Second?"} {
				ev, err := c.Prompt(c.Context(), platform.TextMessage(q))
				if err != nil {
					return err
				}
				answers = append(answers, ev.Text)
			}
			c.ReplyText(fmt.Sprintf("%s #%d: %v", ticket, n, answers))
			return nil
		})
		runEngine(t, e)
		mem.Say(dm, ann, "/survey")
		synctest.Wait()
		mem.Say(dm, ann, "a")
		synctest.Wait()
		mem.Say(dm, ann, "b")
		synctest.Wait()
		if got, want := mem.Texts(dm.ID), []string{"First?", "Second?", "T1 #1: [a b]"}; !slices.Equal(got, want) {
			t.Fatalf("chat got %q; want %q", got, want)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("Once's fn ran %d times over three runs; want once", n)
		}
		if v, err := visits.Of(e, mem.Name(), dm.ID).Get(context.Background()); err != nil || v != 1 {
			t.Fatalf("the session holds %d, %v; want one update", v, err)
		}
	})
}

// A handler run again that asks for other effects than its first run did
// diverges: its conversation ends with ErrDiverged, to the error hook and
// the log, and nothing is sent in its place; the hook's own reply is.
func TestReplayDivergenceEndsTheConversation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.WarnLevel)
		var hooked atomic.Value
		e, mem := newEngine(t, engine.WithLogger(zap.New(core)), engine.WithOnError(func(c *engine.Context, err error) {
			hooked.Store(err)
			c.ReplyText("sorry")
		}))
		runs := 0
		e.OnCommand("flaky", func(c *engine.Context) error {
			runs++
			c.ReplyText(fmt.Sprint("run ", runs)) // not the same each time: a bug
			_, err := c.Next(c.Context(), nil)
			return err
		})
		runEngine(t, e)
		mem.Say(dm, ann, "/flaky")
		synctest.Wait()
		mem.Say(dm, ann, "answer")
		synctest.Wait()
		if got := mem.Texts(dm.ID); !slices.Equal(got, []string{"run 1", "sorry"}) {
			t.Fatalf("chat got %q; want only the first run's send, then the error hook's", got)
		}
		if err, _ := hooked.Load().(error); !errors.Is(err, engine.ErrDiverged) {
			t.Fatalf("the error hook got %v; want ErrDiverged", err)
		}
		if logs.FilterMessageSnippet("diverged").Len() != 1 {
			t.Fatalf("log: %v; want one line on the divergence", logs.All())
		}
		mem.Say(dm, ann, "later")
		synctest.Wait()
		if runs != 2 {
			t.Fatalf("the handler ran %d times; want 2: the conversation ended", runs)
		}
	})
}

// With a journal that keeps records, a handler run again after a crash
// repeats no effect: Once gives back its recorded result, and a session's
// Update made before the crash is not made again.
func TestEffectsOnceAcrossCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		store := state.NewMemoryStore()
		counter := engine.NewUserSession[int]("count", 0)
		var calls atomic.Int32
		block := make(chan struct{})
		add := func(c *engine.Context) error {
			stamp, err := engine.Once(c, "stamp", func(context.Context) (int32, error) { return calls.Add(1), nil })
			if err != nil {
				return err
			}
			n, err := counter.Update(c, func(n *int) error { *n++; return nil })
			if err != nil {
				return err
			}
			select { // the first process dies here
			case <-block:
			case <-c.Context().Done():
				return c.Context().Err()
			}
			c.ReplyText(fmt.Sprintf("%d (stamp %d)", n, stamp))
			return nil
		}
		start := func(mem *memory.Adapter) (*engine.Engine, <-chan error) {
			e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)), engine.WithSessionStore(store))
			if err != nil {
				t.Fatal(err)
			}
			e.OnCommand("add", add)
			done := make(chan error, 1)
			go func() { done <- e.Run(context.Background()) }()
			return e, done
		}
		e, _ := start(mem)
		sayID(mem, "1", "/add")
		synctest.Wait()
		crash(e) // cut off after the Once and the Update
		if ev, _ := j.pending(); ev != 1 {
			t.Fatalf("after the crash the journal holds %d events; want the one cut off", ev)
		}
		// Another writer changes the count before the run again: the
		// update made before the crash still returns what it wrote.
		if _, err := counter.Of(e, mem.Name(), ann.ID).Update(testCtx(t), func(n *int) error { *n += 10; return nil }); err != nil {
			t.Fatal(err)
		}

		close(block)
		mem2 := memory.New()
		e2, done := start(mem2)
		if _, err := mem2.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := mem2.Texts(dm.ID); !slices.Equal(got, []string{"1 (stamp 1)"}) {
			t.Fatalf("after the restart: %q; want the count made once, the stamp recorded", got)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("Once's fn ran %d times; want once", n)
		}
		if n, err := counter.Of(e2, mem2.Name(), ann.ID).Get(testCtx(t)); err != nil || n != 11 {
			t.Fatalf("the count is %d, %v; want 11", n, err)
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}

// The error hook's replies take ids of their own: a handler run again
// after a crash sends its own next effect under its own id, which the
// hook's reply of the first run did not take.
func TestErrorHookIDsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newIDJournal()
		e, mem := newEngine(t, engine.WithJournal(journal.NewLocal(j)), engine.WithOnError(func(c *engine.Context, err error) {
			c.ReplyError(err)
		}))
		fail := true
		e.OnCommand("go", func(c *engine.Context) error {
			c.ReplyText("one")
			if fail {
				return errors.New("boom")
			}
			c.ReplyText("two")
			return nil
		})
		runEngine(t, e)
		must(t, e.HandleEvent(platform.Event{ID: "9", Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/go"}))
		synctest.Wait()
		fail = false
		// The same event again, as a run after a crash would take it.
		h := platform.Event{ID: "9", Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/go"}
		must(t, e.HandleEvent(h))
		synctest.Wait()
		ids := map[string]string{}
		for _, s := range j.journaled() {
			if prev, ok := ids[s.ID]; ok && prev != s.Request.Message.Text {
				t.Fatalf("id %s taken by %q and %q", s.ID, prev, s.Request.Message.Text)
			}
			ids[s.ID] = s.Request.Message.Text
		}
		if len(ids) != 3 {
			t.Fatalf("ids %v; want the first reply, the hook's apology and the second reply apart", ids)
		}
	})
}

// A handler run again after a crash that asks, at a Once's place, for
// another Once than the one recorded there diverged: the other one's fn
// does not run, and the error hook gets ErrDiverged.
func TestEffectsOnceDivergesAcrossCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		var ran []string
		var hooked []error
		handler := func(name string) engine.Handler {
			return func(c *engine.Context) error {
				if _, err := engine.Once(c, name, func(context.Context) (int, error) { ran = append(ran, name); return 1, nil }); err != nil {
					return err
				}
				<-c.Context().Done() // the first process dies here; the second's run never gets here
				return c.Context().Err()
			}
		}
		start := func(mem *memory.Adapter, name string) *engine.Engine {
			e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)),
				engine.WithOnError(func(_ *engine.Context, err error) { hooked = append(hooked, err) }))
			if err != nil {
				t.Fatal(err)
			}
			e.OnCommand("go", handler(name))
			go e.Run(context.Background())
			return e
		}
		e := start(mem, "charge")
		sayID(mem, "1", "/go")
		synctest.Wait()
		crash(e)
		e2 := start(memory.New(), "refund")
		synctest.Wait()
		crash(e2)
		if !slices.Equal(ran, []string{"charge"}) {
			t.Fatalf("Once ran %q; want only the first run's", ran)
		}
		if len(hooked) != 1 || !errors.Is(hooked[0], engine.ErrDiverged) || !strings.Contains(hooked[0].Error(), `"charge"`) {
			t.Fatalf("the error hook got %v; want ErrDiverged naming the Once recorded", hooked)
		}
	})
}

// A session read is an effect too: run again after a crash, the handler
// gets what its first run read, not what the store holds now.
func TestEffectsSessionGetAcrossCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		store := state.NewMemoryStore()
		counter := engine.NewChatSession[int]("seen", 0)
		first := true
		read := func(c *engine.Context) error {
			n, err := counter.Get(c)
			if err != nil {
				return err
			}
			if first {
				<-c.Context().Done() // the first process dies here
				return c.Context().Err()
			}
			c.ReplyText(fmt.Sprint("read ", n))
			return nil
		}
		start := func(mem *memory.Adapter) (*engine.Engine, <-chan error) {
			e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)), engine.WithSessionStore(store))
			if err != nil {
				t.Fatal(err)
			}
			e.OnCommand("read", read)
			done := make(chan error, 1)
			go func() { done <- e.Run(context.Background()) }()
			return e, done
		}
		e, _ := start(mem)
		sayID(mem, "1", "/read")
		synctest.Wait()
		crash(e)
		if _, err := counter.Of(e, mem.Name(), dm.ID).Update(testCtx(t), func(n *int) error { *n = 5; return nil }); err != nil {
			t.Fatal(err)
		}
		first = false
		mem2 := memory.New()
		e2, done := start(mem2)
		if _, err := mem2.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		if got := mem2.Texts(dm.ID); !slices.Equal(got, []string{"read 0"}) {
			t.Fatalf("after the restart: %q; want what the first run read", got)
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}
