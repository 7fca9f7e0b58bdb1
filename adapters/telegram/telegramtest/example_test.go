package telegramtest_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
)

// A bot under test polls the fake server like Telegram; the test pushes a
// user's message, injects a flood-control answer and reads what the bot
// sent.
func ExampleServer() {
	srv := telegramtest.NewServer()
	defer srv.Close()

	bot, err := tgbotapi.NewBotAPIWithClient("123:test", srv.Endpoint(), &http.Client{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.SendUserMessage(42, tgbotapi.User{ID: 7, FirstName: "Ann"}, "ping")
	updates, _ := bot.GetUpdates(tgbotapi.UpdateConfig{Timeout: 1})
	fmt.Println("bot got:", updates[0].Message.Text)

	srv.Inject(telegramtest.Fault{Method: "sendMessage", ChatID: 42, Times: 1, Status: 429, RetryAfter: 1})
	_, err = bot.Send(tgbotapi.NewMessage(42, "pong"))
	fmt.Println("first try:", err)
	_, err = bot.Send(tgbotapi.NewMessage(42, "pong"))
	fmt.Println("second try:", err)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sent, _ := srv.WaitSent(ctx, 42, 1)
	fmt.Println("chat 42 received:", sent[0].Text, "| sendMessage calls:", srv.Requests("sendMessage"))
	// Output:
	// bot got: ping
	// first try: Too Many Requests: retry after 1
	// second try: <nil>
	// chat 42 received: pong | sendMessage calls: 2
}

// A server made WithTLS is reached over HTTPS, with HTTP/2, as Telegram
// is; its Client trusts its certificate.
func ExampleWithTLS() {
	srv := telegramtest.NewServer(telegramtest.WithTLS())
	defer srv.Close()

	bot, err := tgbotapi.NewBotAPIWithClient("123:test", srv.Endpoint(), srv.Client())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("bot:", bot.Self.UserName)
	// Output:
	// bot: herald_test_bot
}
