package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// An outage of the journal in the middle of a handling stops it without
// failing it: the effects it asks for from there fail at once, its event
// is not done, and once the journal records again it runs again — what it
// did before the outage replayed (a Once not run twice, a send not made
// twice), what the outage refused made then. No error hook, no handler
// failure, nothing lost.
func TestOutageRunsHandlingAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.DebugLevel)
		mem, j := memory.New(), newMemJournal()
		var runs, onces, hooked atomic.Int32
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)), engine.WithLogger(zap.New(core)),
			engine.WithOnError(func(c *engine.Context, err error) { hooked.Add(1) }))
		if err != nil {
			t.Fatal(err)
		}
		e.OnCommand("order", func(c *engine.Context) error {
			if runs.Add(1) == 1 {
				defer func() {
					// The disk fills as the handler goes on; room comes
					// back five seconds later.
					go func() {
						time.Sleep(5 * time.Second)
						j.setRefuse(nil)
					}()
				}()
			}
			n, err := engine.Once(c, "charge", func(context.Context) (int, error) { return int(onces.Add(1)), nil })
			if err != nil {
				return err
			}
			if _, err := c.ReplyText("charged").Wait(c.Context()); err != nil {
				return err
			}
			if runs.Load() == 1 {
				j.setRefuse(errors.New("nats: insufficient resources"))
			}
			_, err = c.ReplyText("receipt " + string(rune('0'+n))).Wait(c.Context())
			return err
		})
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		sayID(mem, "1", "/order")
		sent, err := mem.WaitSent(testCtx(t), dm.ID, 2)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := []string{sent[0].Message.Text, sent[1].Message.Text}; !slices.Equal(got, []string{"charged", "receipt 1"}) {
			t.Fatalf("sent %q; want the first send once and the second made after the outage", got)
		}
		if n := len(mem.Sent(dm.ID)); n != 2 {
			t.Fatalf("%d sends; want 2", n)
		}
		if runs.Load() < 2 || onces.Load() != 1 || hooked.Load() != 0 {
			t.Fatalf("%d runs, %d Once calls, %d error hook calls; want the run again, 1 and 0", runs.Load(), onces.Load(), hooked.Load())
		}
		if st := e.Stats(); st.HandlerErrors != 0 {
			t.Fatalf("%d handler errors; want none", st.HandlerErrors)
		}
		if events, sends := j.pending(); events != 0 || sends != 0 {
			t.Fatalf("%d events and %d sends left in the journal; want none", events, sends)
		}
		if n := logs.FilterMessageSnippet("the journal refuses").Len(); n != 1 {
			t.Fatalf("%d outage lines; want 1", n)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}

// A handling held for the journal when the engine stops is not lost: its
// event stays in the journal, and the next start handles it.
func TestOutageHeldAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		e, done := journaledWith(t, mem, j, func(e *engine.Engine) {
			e.OnCommand("two", func(c *engine.Context) error {
				if _, err := c.ReplyText("one").Wait(c.Context()); err != nil {
					return err
				}
				j.setRefuse(errors.New("nats: no responders"))
				_, err := c.ReplyText("two").Wait(c.Context())
				return err
			})
		})
		j.setRefuse(nil)
		sayID(mem, "1", "/two")
		if _, err := mem.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
		if events, _ := j.pending(); events != 1 {
			t.Fatalf("%d events in the journal after the stop; want the one held", events)
		}

		j.setRefuse(nil)
		mem2 := memory.New()
		// The handler is registered before Run, which begins with the
		// event the journal holds.
		e2, done2 := journaledWith(t, mem2, j, func(e *engine.Engine) {
			e.OnCommand("two", func(c *engine.Context) error {
				c.ReplyText("one")
				c.ReplyText("two")
				return nil
			})
		})
		sent, err := mem2.WaitSent(testCtx(t), dm.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(mem2.Sent(dm.ID)) != 1 || sent[0].Message.Text != "two" {
			t.Fatalf("after the restart: %+v; want only the send the outage refused", mem2.Sent(dm.ID))
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done2
	})
}

// A record the journal refuses for what it is (journal.ErrUnrecordable)
// is no outage: the event is refused for good (a permanent error, which
// adapters drop), and the journal goes on recording the others.
func TestUnrecordableEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.InfoLevel)
		mem, j := memory.New(), newMemJournal()
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)), engine.WithLogger(zap.New(core)))
		if err != nil {
			t.Fatal(err)
		}
		e.OnCommand("hi", func(c *engine.Context) error { c.ReplyText("hello"); return nil })
		j.setRefuse(errors.Join(journal.ErrUnrecordable, errors.New("maximum payload exceeded")))
		err = e.HandleEvent(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/hi"})
		if !errors.Is(err, engine.ErrJournal) || !errors.Is(err, journal.ErrUnrecordable) || !platform.IsPermanent(err) || errors.Is(err, journal.ErrOutage) {
			t.Fatalf("HandleEvent = %v; want a permanent ErrJournal wrapping ErrUnrecordable, no outage", err)
		}
		j.setRefuse(nil)
		if err := e.HandleEvent(platform.Event{ID: "2", Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/hi"}); err != nil {
			t.Fatal(err)
		}
		if n := logs.FilterMessageSnippet("the journal refuses;").Len(); n != 0 {
			t.Fatalf("%d outage lines for a refused record; want none", n)
		}
		if n := logs.FilterMessageSnippet("refuses an event for what it is").Len(); n != 1 {
			t.Fatalf("%d lines for the refused event; want 1", n)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
