// Command broadcast is a subscription bot: /subscribe and /unsubscribe
// keep a chat on a list (a chat session), a job sends every subscribed
// chat the news on a timer, and a chat that blocked the bot is taken off
// the list, so the broadcast stops sending to it: when the platform says
// so (Telegram's EventBotBlocked), or when a send to it fails with
// platform.ErrBlocked (the update was missed, or came before the bot had
// a journal). It runs on Telegram with TELEGRAM_BOT_TOKEN, else on the browser
// chat:
//
//	TELEGRAM_BOT_TOKEN=123456:ABC... go run ./examples/broadcast
//	go run ./examples/broadcast   # then open http://127.0.0.1:8080/
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "broadcast:", err)
		os.Exit(1)
	}
}

func run() error {
	log, err := zap.NewDevelopment(zap.AddStacktrace(zap.ErrorLevel))
	if err != nil {
		return err
	}
	var a platform.Adapter
	if token := os.Getenv("TELEGRAM_BOT_TOKEN"); token != "" {
		a, err = telegram.New(telegram.Config{Token: token, Logger: log})
	} else {
		a, err = webchat.New(webchat.Config{Logger: log})
	}
	if err != nil {
		return err
	}
	e, err := engine.New(engine.WithAdapter(a), engine.WithLogger(log),
		engine.WithOnError(func(c *engine.Context, err error) { c.ReplyError(err) }))
	if err != nil {
		return err
	}
	register(e, a.Name(), time.Minute, func() string { return "News at " + time.Now().Format(time.Kitchen) })
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return e.Run(ctx)
}

// subscribed marks a chat on the list; it is kept a year after the last
// change (with cluster.NewSessionStore, across restarts too).
var subscribed = engine.NewChatSession[bool]("subscribed", 365*24*time.Hour)

// register adds the bot's handlers and its broadcast, every interval, of
// news() to the subscribed chats of the adapter platformName.
func register(e *engine.Engine, platformName string, interval time.Duration, news func() string) {
	e.OnCommand("subscribe", func(c *engine.Context) error {
		if _, err := subscribed.Update(c, func(on *bool) error { *on = true; return nil }); err != nil {
			return err
		}
		c.ReplyText("Subscribed: you will get the news every " + interval.String() + ". /unsubscribe to stop.")
		return nil
	}, engine.Description("get the news"))
	e.OnCommand("unsubscribe", func(c *engine.Context) error {
		if err := subscribed.Delete(c); err != nil {
			return err
		}
		c.ReplyText("Unsubscribed.")
		return nil
	}, engine.Description("stop the news"))
	// A chat that blocked the bot would refuse every send: off the list.
	e.OnEvent(platform.EventBotBlocked, func(c *engine.Context) error {
		return subscribed.Delete(c)
	})
	e.Every("news", interval, func(ctx context.Context) error {
		chats, err := subscribed.IDs(ctx, e, platformName)
		if err != nil {
			return err
		}
		text := news()
		sends := make([]*future.Future[platform.SendResult], len(chats))
		for i, id := range chats {
			// Named after the chat and the broadcast: a run made again
			// after a crash sends each chat its news once.
			sends[i] = e.Send(platformName, platform.Chat{ID: id}, platform.TextMessage(text), engine.SendID("news:"+id+":"+text))
		}
		// The sends go out at the platform's pace, each chat's at once; a
		// chat that no longer takes the bot's messages leaves the list.
		for i, f := range sends {
			if _, err := f.Wait(ctx); errors.Is(err, platform.ErrBlocked) {
				if err := subscribed.Of(e, platformName, chats[i]).Delete(ctx); err != nil {
					return err
				}
			} else if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	})
}
