package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
)

// The bot's handlers, tested on the in-memory adapter as a bot author
// tests theirs: a command with buttons, a press edits the menu, and a
// conversation.
func TestHandlers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem))
	if err != nil {
		t.Fatal(err)
	}
	register(e)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	chat, ann := memory.Private("1"), memory.User("1", "Ann")

	mem.Say(chat, ann, "/start")
	sent, err := mem.WaitSent(ctx, chat.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b := sent[0].Message.Buttons; len(b) != 1 || len(b[0]) != 2 || b[0][1].Data != "drink:coffee" {
		t.Fatalf("/start sent buttons %+v", b)
	}
	mem.PressOn(chat, ann, sent[0].MessageID, "drink:coffee")
	if _, err := mem.WaitAnswers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mem.Say(chat, ann, "/register")
	if _, err := mem.WaitSent(ctx, chat.ID, 3); err != nil {
		t.Fatal(err)
	}
	mem.Say(chat, ann, "Ann")
	if _, err := mem.WaitSent(ctx, chat.ID, 4); err != nil {
		t.Fatal(err)
	}
	want := []string{"Tea or coffee?", "You chose coffee.", "What is your name?", "Welcome, Ann!"}
	if got := mem.Texts(chat.ID); !slices.Equal(got, want) {
		t.Fatalf("the chat got %q; want %q", got, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
