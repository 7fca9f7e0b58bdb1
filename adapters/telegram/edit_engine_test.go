package telegram

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// A menu edited in place through the real engine, its default sender chain
// (with Telegram's rate limits, as examples/bot sets them) and the adapter,
// against the fake Bot API in memory, in fake time: /menu sends the menu,
// a button press makes its handler edit the menu with
// c.Edit(c.Event().MessageID, …). Telegram answers the first edit with a
// 429 and retry_after 5: the chain waits exactly 5 s, the edit arrives
// once, no new message is sent, and the Future names the edited message.
func TestEngineTelegramEditMenu(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const chat = 42
		srv := telegramtest.NewServer(telegramtest.InMemory())
		defer srv.Close()
		var (
			mu        sync.Mutex
			editTimes []time.Time // of every editMessageText request
		)
		srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
			if r.Method != "editMessageText" {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			editTimes = append(editTimes, time.Now())
			if len(editTimes) == 1 {
				return &telegramtest.Fault{Status: 429, RetryAfter: 5}
			}
			return nil
		})

		core, logs := observer.New(zap.DebugLevel)
		log := zap.New(core)
		a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client(), Logger: log.Named("telegram")})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.WithAdapter(a), engine.WithLogger(log.Named("engine")),
			engine.WithRateLimit(DefaultName, sender.TelegramLimits()))
		if err != nil {
			t.Fatal(err)
		}
		e.OnCommand("menu", func(c *engine.Context) error {
			c.Reply(menu)
			return nil
		})
		type outcome struct {
			res platform.SendResult
			err error
		}
		edited := make(chan outcome, 1)
		e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			f := c.Edit(c.Event().MessageID, platform.OutboundMessage{
				Text:    "You picked " + c.Text(),
				Buttons: [][]platform.Button{{{Text: "Back", Data: "back"}}},
			})
			go func() {
				res, err := f.Wait(context.Background())
				edited <- outcome{res, err}
			}()
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()

		srv.SendUserMessage(chat, ann, "/menu")
		sent, err := srv.WaitSent(ctx, chat, 1)
		if err != nil {
			t.Fatal(err)
		}
		menuID := sent[0].MessageID
		srv.PushCallback(chat, ann, menuID, "tea")
		var got outcome
		select {
		case got = <-edited:
		case <-time.After(time.Hour): // fake time: a bound, not a wait
			t.Fatal("the edit's Future was not resolved within an hour")
		}
		if got.err != nil {
			t.Fatalf("edit: %v", got.err)
		}
		if got.res.MessageID != strconv.Itoa(menuID) || got.res.ChatID != strconv.Itoa(chat) {
			t.Fatalf("edit result %+v; want message %d in chat %d", got.res, menuID, chat)
		}

		mu.Lock()
		times := append([]time.Time(nil), editTimes...)
		mu.Unlock()
		if len(times) != 2 || times[1].Sub(times[0]) != 5*time.Second {
			t.Fatalf("editMessageText requests at %v; want two, exactly the 5 s of retry_after apart", times)
		}
		edits := srv.Edits(chat)
		if len(edits) != 1 || !edits[0].At.Equal(times[1]) {
			t.Fatalf("edits %+v; want one, the retry", edits)
		}
		m, _ := srv.Message(chat, menuID)
		if m.Text != "You picked tea" || fmt.Sprint(buttonData(m)) != "[back]" {
			t.Fatalf("the menu now shows %q with %v; want the edit", m.Text, buttonData(m))
		}
		if n := len(srv.Sent(chat)); n != 1 {
			t.Fatalf("%d messages sent; want only the menu", n)
		}
		if err := srv.WaitUntil(ctx, func() bool { return len(srv.CallbackAnswers()) == 1 }); err != nil {
			t.Fatalf("the button press was not answered: %v", err)
		}

		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if st := e.Stats(); st.Sends.Delivered != 2 || st.Sends.Retries != 1 || st.DeadLetters != 0 {
			t.Errorf("stats %+v; want the menu and the edit delivered, the edit retried once, no dead letters", st.Sends)
		}
		if logs.FilterLoggerName("telegram").Len() == 0 || logs.FilterLoggerName("engine").Len() == 0 {
			t.Error("a logger logged nothing: the token check proves nothing for it")
		}
		assertNoTokenInLogs(t, logs)
	})
}
