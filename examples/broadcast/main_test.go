package main

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// Two chats subscribe, the broadcast reaches both; one blocks the bot
// and the next broadcast reaches the other only; one unsubscribes and the
// next reaches none. In fake time: the hour between broadcasts passes at
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

		ann, bob := memory.Private("1"), memory.Private("2")
		mem.Say(ann, memory.User("1", "Ann"), "/subscribe")
		mem.Say(bob, memory.User("2", "Bob"), "/subscribe")
		time.Sleep(time.Hour + time.Second) // the first broadcast
		synctest.Wait()
		if got := mem.Texts(ann.ID)[1:]; !slices.Equal(got, []string{"news 1"}) {
			t.Fatalf("Ann got %q", got)
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
