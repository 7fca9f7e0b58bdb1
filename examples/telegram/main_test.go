package main

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// The bot's handlers, tested on the in-memory adapter as a bot author
// tests theirs: a command with buttons, a press edits the menu, and a
// conversation that asks again until the answer fits, and one cancelled.
func TestHandlers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mem := memory.New()
	e, err := engine.New(append(options(), engine.WithAdapter(mem))...)
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
	// Each answer after the question before it, as a user answers.
	for i, answer := range []string{"Ann", "old enough", "30", "/register", "/cancel"} {
		mem.Say(chat, ann, answer)
		if _, err := mem.WaitSent(ctx, chat.ID, 4+i); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Tea or coffee?", "You chose coffee.",
		"What is your name?", "How old are you, Ann?", "How old are you, Ann?", "Welcome, Ann (30)!",
		"What is your name?", "Cancelled."}
	if got := mem.Texts(chat.ID); !slices.Equal(got, want) {
		t.Fatalf("the chat got %q; want %q", got, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The same handlers on the Telegram adapter, against the fake Bot API of
// telegramtest: a bot's test of its Telegram side. The fake applies no
// budget, and the adapter is told to publish none (Config.Limits), so
// twenty replies to one chat go at once rather than one a second.
func TestOnTheFakeBotAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := telegramtest.NewServer()
	defer srv.Close()
	tg, err := telegram.New(telegram.Config{Token: "123456:test-token", APIEndpoint: srv.Endpoint(), Limits: &platform.Limits{}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.WithAdapter(tg))
	if err != nil {
		t.Fatal(err)
	}
	register(e)
	e.OnCommand("twenty", func(c *engine.Context) error {
		for i := range 20 {
			c.ReplyText(strconv.Itoa(i + 1))
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()

	ann := platform.User{ID: "7", Name: "Ann"}
	srv.Say(7, ann, "/start")
	sent, err := srv.WaitSent(ctx, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Text != "Tea or coffee?" || len(sent[0].Keyboard) != 1 {
		t.Fatalf("/start sent %+v", sent[0])
	}
	// Ann presses "Coffee": the press is answered and the question edited.
	query := srv.Press(7, ann, sent[0].MessageID, "drink:coffee")
	if err := srv.WaitUntil(ctx, func() bool {
		m, _ := srv.Message(7, sent[0].MessageID)
		answers := srv.CallbackAnswers()
		return m.Text == "You chose coffee." && len(answers) == 1 && answers[0].CallbackQueryID == query
	}); err != nil {
		m, _ := srv.Message(7, sent[0].MessageID)
		t.Fatalf("after the press: %v (the message %q, answers %+v)", err, m.Text, srv.CallbackAnswers())
	}
	srv.Say(7, ann, "/twenty")
	sent, err = srv.WaitSent(ctx, 7, 21)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range sent[1:] {
		if m.Text != strconv.Itoa(i+1) {
			t.Fatalf("reply %d is %q; want them in order", i+1, m.Text)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
