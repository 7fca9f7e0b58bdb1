package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// A conversation: Prompt asks, the user's next message is the answer, and
// it goes to the handler, not to the matchers. In a group, other members'
// messages wait in the chat's queue and are handled after the
// conversation, in order.
func TestPromptConversation(t *testing.T) {
	e, mem := newEngine(t)
	var seen []string
	e.OnCommand("name", func(c *engine.Context) error {
		ctx, cancel := context.WithTimeout(c.Context(), 10*time.Second)
		defer cancel()
		first, err := c.Prompt(ctx, platform.TextMessage("What is your name?"))
		if err != nil {
			return err
		}
		color, err := c.Prompt(ctx, platform.TextMessage("Your favourite colour?"))
		if err != nil {
			return err
		}
		c.ReplyText(fmt.Sprintf("%s likes %s", first.Text, color.Text))
		return nil
	}, engine.Block())
	e.OnMessage(func(c *engine.Context) error {
		seen = append(seen, c.From().Name+": "+c.Text()) // one chat: handled one at a time
		return nil
	}, engine.Priority(10))
	runEngine(t, e)

	mem.Say(group, ann, "/name")
	waitTexts(t, mem, group.ID, "What is your name?")
	mem.Say(group, bob, "hi all") // not Ann's: queued
	mem.Say(group, ann, "Ann")
	waitTexts(t, mem, group.ID, "What is your name?", "Your favourite colour?")
	mem.Say(group, ann, "green")
	waitTexts(t, mem, group.ID, "What is your name?", "Your favourite colour?", "Ann likes green")
	mem.Say(group, ann, "after")
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Bob: hi all", "Ann: after"}; !slices.Equal(seen, want) {
		t.Fatalf("the message matcher saw %q; want %q (the answers were the handler's)", seen, want)
	}
}

// waitTexts waits until chat has received exactly want.
func waitTexts(t *testing.T, mem *memory.Adapter, chat string, want ...string) {
	t.Helper()
	sent, err := mem.WaitSent(testCtx(t), chat, len(want))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sent {
		got = append(got, s.Message.Text)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("chat %s received %q; want %q", chat, got, want)
	}
}

// Next with its own accept takes a button press; a wait that times out
// returns the context's error, and later messages go to the matchers.
func TestNextAcceptAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		results := make(chan string, 2)
		e.OnCommand("confirm", func(c *engine.Context) error {
			c.Reply(platform.OutboundMessage{Text: "Sure?", Buttons: [][]platform.Button{{{Text: "Yes", Data: "yes"}}}})
			ctx, cancel := context.WithTimeout(c.Context(), time.Minute)
			defer cancel()
			ev, err := c.Next(ctx, func(ev platform.Event) bool { return ev.Kind == platform.EventCallback })
			switch {
			case errors.Is(err, engine.ErrWaiting):
				return err
			case err != nil:
				results <- err.Error()
				return nil
			}
			results <- "pressed " + ev.Text
			return nil
		}, engine.Block())
		e.OnMessage(func(c *engine.Context) error {
			results <- "message " + c.Text()
			return nil
		}, engine.Priority(10))
		runEngine(t, e)

		mem.Say(dm, ann, "/confirm")
		synctest.Wait()
		mem.Press(dm, ann, "yes")
		if got := <-results; got != "pressed yes" {
			t.Fatalf("got %q; want the press", got)
		}
		mem.Say(dm, ann, "/confirm")
		synctest.Wait()
		start := time.Now()
		if got := <-results; got != context.DeadlineExceeded.Error() || time.Since(start) != time.Minute {
			t.Fatalf("got %q after %v; want the deadline after a minute", got, time.Since(start))
		}
		mem.Say(dm, ann, "later")
		if got := <-results; got != "message later" {
			t.Fatalf("got %q; want the matchers to have the message after the wait", got)
		}
	})
}

// A clean stop does not wake a waiting conversation: it stays where it
// waited (a journal keeps its events for the next start); Next without a
// chat, and Prompt whose question fails, return their errors.
func TestNextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		mem.FailWhen(func(req platform.SendRequest) error {
			if req.Message.Text == "unsendable" {
				return platform.Permanent(errors.New("blocked"))
			}
			return nil
		})
		errs := make(chan error, 3)
		report := func(err error) error {
			if errors.Is(err, engine.ErrWaiting) {
				return err
			}
			errs <- err
			return nil
		}
		e.OnCommand("wait", func(c *engine.Context) error {
			_, err := c.Next(context.Background(), nil)
			return report(err)
		})
		e.OnCommand("ask", func(c *engine.Context) error {
			_, err := c.Prompt(context.Background(), platform.TextMessage("unsendable"))
			return report(err)
		})
		e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			_, err := c.Next(context.Background(), nil)
			return report(err)
		})
		runEngine(t, e)

		mem.Say(dm, ann, "/ask")
		if err := <-errs; !errors.Is(err, engine.ErrPromptNotSent) || !platform.IsPermanent(err) {
			t.Fatalf("Prompt whose question failed = %v; want ErrPromptNotSent with the send's error", err)
		}
		must(t, e.HandleEvent(platform.Event{Platform: mem.Name(), Kind: platform.EventCallback, From: ann, Text: "x"}))
		if err := <-errs; !errors.Is(err, engine.ErrNoChat) {
			t.Fatalf("Next for an event without a chat = %v; want ErrNoChat", err)
		}
		mem.Say(dm, ann, "/wait")
		synctest.Wait()
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			t.Fatalf("a clean stop woke the waiting conversation with %v", err)
		default:
		}
	})
}

// A waiting conversation takes its user's next events, in order, as its
// handler goes on; what it does not take goes to the matchers. The
// handler's effects are not repeated when it runs again. Stats count the
// taken events as Awaited.
func TestNextTakesEventsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		e.OnCommand("two", func(c *engine.Context) error {
			for range 2 {
				ev, err := c.Next(c.Context(), nil)
				if err != nil {
					return err
				}
				c.ReplyText("handler " + ev.Text)
				time.Sleep(time.Second) // busy: b and c arrive now
			}
			return nil
		}, engine.Block())
		e.OnMessage(func(c *engine.Context) error {
			c.ReplyText("matcher " + c.Text())
			return nil
		}, engine.Priority(10))
		runEngine(t, e)
		mem.Say(dm, ann, "/two")
		synctest.Wait()
		for _, text := range []string{"a", "b", "c"} {
			mem.Say(dm, ann, text)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := mem.Texts(dm.ID), []string{"handler a", "handler b", "matcher c"}; !slices.Equal(got, want) {
			t.Fatalf("got %q; want %q", got, want)
		}
		if st := e.Stats(); st.Awaited != 2 || st.Matched != 2 || st.Received != 4 {
			t.Fatalf("stats %+v; want 4 received, 2 awaited, 2 matched", st)
		}
	})
}

// A waiting conversation does not hold up its chat: another member's
// message is handled at once; an accept that blocks holds up its own chat
// only, not other chats; and a goroutine the handler left cannot wait.
func TestNextHoldsNothingWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t, engine.WithInboundQueueSize(1))
		release := make(chan struct{})
		var leftover *engine.Context
		e.OnCommand("wait", func(c *engine.Context) error {
			_, err := c.Next(context.Background(), nil)
			return err
		}, engine.Block())
		e.OnCommand("slow", func(c *engine.Context) error {
			_, err := c.Next(c.Context(), func(platform.Event) bool { <-release; return false })
			return err
		}, engine.Block())
		e.OnCommand("leave", func(c *engine.Context) error {
			leftover = c
			return nil
		}, engine.Block())
		handled := make(chan string, 10)
		e.OnMessage(func(c *engine.Context) error {
			handled <- c.Chat().ID + " " + c.From().ID + " " + c.Text()
			return nil
		}, engine.Priority(10))
		runEngine(t, e)

		mem.Say(group, ann, "/wait")
		synctest.Wait()
		for _, text := range []string{"one", "two", "three"} {
			must(t, e.HandleEvent(msg(group, bob, text))) // the chat's queue is free
			synctest.Wait()
			if got := <-handled; got != group.ID+" "+bob.ID+" "+text {
				t.Fatalf("handled %q while Ann's conversation waits", got)
			}
		}

		mem.Say(dm, ann, "/slow")
		synctest.Wait()
		mem.Say(dm, ann, "x") // accept blocks on it
		other := memory.Private("other")
		mem.Say(other, bob, "still here")
		if got := <-handled; got != "other "+bob.ID+" still here" {
			t.Fatalf("handled %q; want the other chat's message despite the blocked accept", got)
		}
		close(release)
		if got := <-handled; got != dm.ID+" "+ann.ID+" x" {
			t.Fatalf("handled %q; want the refused event at the matchers", got)
		}

		mem.Say(other, bob, "/leave")
		synctest.Wait()
		if _, err := leftover.Next(context.Background(), nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Next after the handler returned = %v; want Canceled", err)
		}
	})
}
