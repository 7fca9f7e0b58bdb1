package plugins_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/plugins/echo"
	"github.com/heraldbot/herald/plugins/greet"
)

// /greet asks the name, then the age until it is a number, and greets;
// the answers are the conversation's, not a command's or another
// handler's; a user who does not answer is told so after greet.Patience,
// and the chat is back to normal.
func TestGreet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		e, err := engine.New(engine.WithAdapter(mem))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Use(greet.New(), echo.New()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		chat, ann := memory.Private("1"), memory.User("1", "Ann")
		for _, text := range []string{"/greet", "Ann", "old", "/echo no", "33"} {
			mem.Say(chat, ann, text)
			synctest.Wait()
		}
		mem.Say(chat, ann, "/greet")
		synctest.Wait()
		time.Sleep(greet.Patience)
		synctest.Wait()
		mem.Say(chat, ann, "/echo back")
		synctest.Wait()
		again := greet.NotANumber + " " + greet.AgeQuestion("Ann")
		want := []string{greet.Question, greet.AgeQuestion("Ann"), again, again, greet.Greeting("Ann", 33),
			greet.Question, greet.NoAnswer, "back"}
		if got := mem.Texts("1"); !slices.Equal(got, want) {
			t.Fatalf("chat got %q; want %q", got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
