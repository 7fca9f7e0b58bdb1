package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/memory"
)

// The bot is stopped between two events of a conversation and between
// two /add: started again on its data directory, it goes on where it
// stopped — the conversation takes the answer, the count goes on.
func TestAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	chat, ann := memory.Private("1"), memory.User("1", "Ann")
	run := func(say []string, want int) []string {
		t.Helper()
		mem := memory.New()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- serve(ctx, mem, dir, zap.NewNop()) }()
		for _, text := range say {
			mem.Say(chat, ann, text)
		}
		if _, err := mem.WaitSent(ctx, chat.ID, want); err != nil {
			t.Fatal(err)
		}
		cancel() // a clean stop
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return mem.Texts(chat.ID)
	}
	if got := run([]string{"/add", "/add", "/greet"}, 3); !slices.Equal(got, []string{"1", "2", "What is your name?"}) {
		t.Fatalf("first run: %q", got)
	}
	if got := run([]string{"Ann", "/add"}, 2); !slices.Equal(got, []string{"Hello, Ann!", "3"}) {
		t.Fatalf("after the restart: %q; want the conversation and the count to go on", got)
	}
}
