// Command telegram is the README's first Telegram bot: a command, buttons
// and their presses, a photo and a conversation. Get a token from
// @BotFather, then
//
//	TELEGRAM_BOT_TOKEN=123456:ABC... go run ./examples/telegram
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "telegram:", err)
		os.Exit(1)
	}
}

func run() error {
	log, err := zap.NewDevelopment(zap.AddStacktrace(zap.ErrorLevel))
	if err != nil {
		return err
	}
	tg, err := telegram.New(telegram.Config{Token: os.Getenv("TELEGRAM_BOT_TOKEN"), Logger: log})
	if err != nil {
		return err // a missing or malformed token is refused here, never printed
	}
	e, err := engine.New(append(options(), engine.WithAdapter(tg), engine.WithLogger(log))...)
	if err != nil {
		return err
	}
	register(e)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return e.Run(ctx)
}

// register adds the bot's handlers to e.
func register(e *engine.Engine) {
	e.OnCommand("start", func(c *engine.Context) error {
		c.Reply(platform.OutboundMessage{
			Text:    "Tea or coffee?",
			Buttons: [][]platform.Button{{{Text: "Tea", Data: "drink:tea"}, {Text: "Coffee", Data: "drink:coffee"}}},
		})
		return nil
	}, engine.Description("choose a drink"))

	// A button press is an EventCallback whose Text is the button's Data.
	isDrink := func(c *engine.Context) bool {
		return c.Event().Kind == platform.EventCallback && strings.HasPrefix(c.Text(), "drink:")
	}
	e.On(isDrink, func(c *engine.Context) error {
		if err := c.Answer("Noted", false); err != nil { // stops the button's spinner
			return err
		}
		c.Edit(c.Event().MessageID, platform.TextMessage("You chose "+strings.TrimPrefix(c.Text(), "drink:")+"."))
		return nil
	})

	e.OnCommand("photo", func(c *engine.Context) error {
		c.Reply(platform.OutboundMessage{Attachments: []platform.Attachment{{
			Kind:    platform.AttachPhoto,
			URL:     "https://go.dev/blog/go-brand/Go-Logo/PNG/Go-Logo_Blue.png",
			Caption: "Go",
		}}})
		return nil
	}, engine.Description("send a photo"))

	e.OnCommand("register", func(c *engine.Context) error {
		name, err := c.Prompt(c.Context(), platform.TextMessage("What is your name?"))
		if err != nil { // engine.ErrWaiting while it waits: return it, as any error
			return err
		}
		for { // asks again until the answer is a number; /cancel ends it (see options)
			age, err := c.Prompt(c.Context(), platform.TextMessage("How old are you, "+name.Text+"?"))
			if err != nil {
				return err
			}
			if n, err := strconv.Atoi(age.Text); err == nil {
				c.ReplyText(fmt.Sprintf("Welcome, %s (%d)!", name.Text, n))
				return nil
			}
		}
	}, engine.Description("a two-step conversation"))
}

// options are the bot's engine options besides its adapter and logger,
// its tests' too: /cancel ends a conversation that waits.
func options() []engine.Option {
	return []engine.Option{
		engine.WithOnError(func(c *engine.Context, err error) { c.ReplyError(err) }),
		engine.WithCancelCommand("cancel", "Cancelled."),
	}
}
