package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// Three chats subscribe, the broadcast reaches two: the third blocked the
// bot without the bot hearing of it, its send fails with
// platform.ErrBlocked, and it is off the list; one blocks the bot and the
// next broadcast reaches the other only; one unsubscribes and the next
// reaches none. In fake time: the hour between broadcasts passes at
// once.
func TestBroadcast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		e, err := engine.New(engine.WithAdapter(mem))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		register(e, mem.Name(), time.Hour, func() string { n++; return "news " + string(rune('0'+n)) })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()

		ann, bob, cy := memory.Private("1"), memory.Private("2"), memory.Private("3")
		mem.Say(ann, memory.User("1", "Ann"), "/subscribe")
		mem.Say(bob, memory.User("2", "Bob"), "/subscribe")
		mem.Say(cy, memory.User("3", "Cy"), "/subscribe")
		synctest.Wait()
		mem.FailWhen(func(r platform.SendRequest) error {
			if r.Target.ID == cy.ID {
				return platform.Permanent(fmt.Errorf("403 Forbidden: %w", platform.ErrBlocked))
			}
			return nil
		})
		time.Sleep(time.Hour + time.Second) // the first broadcast
		synctest.Wait()
		if got := mem.Texts(ann.ID)[1:]; !slices.Equal(got, []string{"news 1"}) {
			t.Fatalf("Ann got %q", got)
		}
		if n := mem.Calls(cy.ID); n != 2 { // the answer to /subscribe, the news refused
			t.Fatalf("%d sends to Cy; want 2", n)
		}
		mem.Emit(platform.Event{Kind: platform.EventBotBlocked, Chat: ann, From: memory.User("1", "Ann")})
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := mem.Texts(ann.ID)[1:]; !slices.Equal(got, []string{"news 1"}) {
			t.Fatalf("Ann blocked the bot and got %q", got)
		}
		if got := mem.Texts(bob.ID)[1:]; !slices.Equal(got, []string{"news 1", "news 2"}) {
			t.Fatalf("Bob got %q", got)
		}
		if n := mem.Calls(cy.ID); n != 2 {
			t.Fatalf("%d sends to Cy, off the list since the first broadcast; want 2", n)
		}
		mem.Say(bob, memory.User("2", "Bob"), "/unsubscribe")
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := mem.Texts(bob.ID)[1:]; !slices.Equal(got, []string{"news 1", "news 2", "Unsubscribed."}) {
			t.Fatalf("Bob unsubscribed and got %q", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
