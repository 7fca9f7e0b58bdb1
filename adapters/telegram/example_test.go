package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// An adapter pointed at the fake Bot API of package telegramtest: a user's
// command arrives as an event, and the reply is read back from the fake.
func Example() {
	srv := telegramtest.NewServer()
	defer srv.Close()

	adapter, err := telegram.New(telegram.Config{
		Token:       "123456:example-token",
		APIEndpoint: srv.Endpoint(), // a "%s/%s" format, like TELEGRAM_API_ENDPOINT
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	events := make(chan platform.Event, 1)
	done := make(chan error, 1)
	go func() {
		// handle must not block: a real bot hands the event to the engine.
		done <- adapter.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error { events <- ev; return nil }})
	}()

	srv.SendUserMessage(42, tgbotapi.User{ID: 7, FirstName: "Ann"}, "/ping@herald_test_bot")
	ev := <-events
	fmt.Printf("%s from %s in %s chat %s: %q\n", ev.Kind, ev.From.Name, ev.Chat.Type, ev.Chat.ID, ev.Text)

	res, err := adapter.Sender().Send(ctx, platform.SendRequest{
		Target:  ev.Chat,
		Message: platform.OutboundMessage{Text: "<b>pong</b>", ParseMode: platform.ParseHTML, ReplyToID: ev.MessageID},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	sent, _ := srv.WaitSent(ctx, 42, 1)
	fmt.Printf("sent message %s: %q (%s) replying to %d\n", res.MessageID, sent[0].Text, sent[0].ParseMode, sent[0].ReplyToMessageID)

	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// message from Ann in private chat 42: "/ping"
	// sent message 2: "<b>pong</b>" (HTML) replying to 1
	// Run: <nil>
}

// Run leaves an update its Handle refuses unconfirmed, so Telegram
// delivers it again: here a Handle that refuses the first try, as the
// engine does when a chat's queue is full. The update is handed on again
// after a second, taken, and confirmed.
func ExampleAdapter_Run_refused() {
	srv := telegramtest.NewServer()
	defer srv.Close()
	adapter, err := telegram.New(telegram.Config{Token: "123456:example-token", APIEndpoint: srv.Endpoint()})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	srv.SendUserMessage(42, tgbotapi.User{ID: 7, FirstName: "Ann"}, "hello")
	refused := false // handle is called from one goroutine at a time
	taken := make(chan platform.Event, 1)
	done := make(chan error, 1)
	go func() {
		done <- adapter.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
			if !refused {
				refused = true
				fmt.Println("refused:", ev.Text)
				return errors.New("queue full")
			}
			taken <- ev
			return nil
		}})
	}()
	fmt.Println("taken:", (<-taken).Text)
	// The next poll confirms it (had ctx ended first, Run would confirm it
	// on its way out).
	if err := srv.WaitUntil(ctx, func() bool { return srv.Pending() == 0 }); err != nil {
		fmt.Println(err)
	}
	cancel()
	fmt.Println("Run:", <-done)
	fmt.Println("updates left unconfirmed:", srv.Pending())
	// Output:
	// refused: hello
	// taken: hello
	// Run: <nil>
	// updates left unconfirmed: 0
}

// Webhook mode with the handler mounted in a server of your own: Run
// registers the webhook and delivers what the handler receives.
func ExampleAdapter_WebhookHandler() {
	adapter, err := telegram.New(telegram.Config{
		Token: "123456:example-token",
		Mode:  telegram.Webhook,
		Webhook: telegram.WebhookConfig{
			URL:         "https://bot.example.com/telegram",
			SecretToken: "a-long-random-secret",
			// Listen is empty: Run serves nothing itself.
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("POST /telegram", adapter.WebhookHandler())
	_ = &http.Server{Addr: ":8080", Handler: mux}
	// go server.ListenAndServe(); adapter.Run(ctx, engine.HandleEvent) ...
}
