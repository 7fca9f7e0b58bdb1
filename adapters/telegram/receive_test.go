package telegram

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// Receive serves the webhook without calling Telegram, with the
// configured username for addressed commands; RunConfirmed in the same
// process then registers the webhook without listening again, and the
// updates keep going to Receive's handle.
func TestReceive(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Mode = Webhook
		c.Username = "@herald_test_bot"
		c.Webhook = WebhookConfig{Listen: "127.0.0.1:0", Path: "/hook", SecretToken: webhookSecret, URL: "https://bot.example/hook"}
	})
	var mu sync.Mutex
	var calls []string
	h.srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
		mu.Lock()
		calls = append(calls, r.Method)
		mu.Unlock()
		return nil
	})
	if !h.a.Receives() {
		t.Fatal("Receives() = false in Webhook mode with Listen")
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan platform.Event, 10)
	done := make(chan error, 1)
	go func() {
		done <- h.a.Run(ctx, platform.Inbound{Listen: true, Handle: func(ev platform.Event) error {
			events <- ev
			return nil
		}})
	}()
	succeedsSoon(t, func() error {
		if h.a.WebhookAddr() == nil {
			return context.DeadlineExceeded
		}
		return nil
	})
	url := "http://" + h.a.WebhookAddr().String() + "/hook"
	if got := post(t, url, webhookSecret, updateJSON(1, "/start@herald_test_bot now")); got != http.StatusOK {
		t.Fatalf("post: %d", got)
	}
	if ev := <-events; ev.Text != "/start now" {
		t.Fatalf("event text %q; want the bot's username stripped", ev.Text)
	}
	mu.Lock()
	if len(calls) != 0 {
		t.Fatalf("Receive called Telegram: %q", calls)
	}
	mu.Unlock()
	if err := h.a.Run(ctx, platform.Inbound{Listen: true, Handle: func(platform.Event) error { return nil }}); err == nil {
		t.Fatal("a second listening Run did not fail")
	}

	r := h.run(t) // the gateway in this process: registers only
	if err := h.srv.WaitUntil(waitCtx(t), func() bool { return h.srv.Webhook().URL != "" }); err != nil {
		t.Fatal(err)
	}
	if got := post(t, url, webhookSecret, updateJSON(2, "again")); got != http.StatusOK {
		t.Fatalf("post while the run registers: %d", got)
	}
	if ev := <-events; ev.ID != "2" {
		t.Fatalf("event %+v", ev)
	}
	r.none(t)
	if err := r.stop(t); err != nil {
		t.Fatalf("run: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
	case <-time.After(waitPeriod):
		t.Fatal("Receive did not return")
	}
	if h.a.WebhookAddr() != nil {
		t.Fatal("still listening after Receive returned")
	}
}

func TestReceiveNotConfigured(t *testing.T) {
	h := newHarness(t, nil) // polling
	if h.a.Receives() {
		t.Fatal("Receives() = true in Polling mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitPeriod)
	defer cancel()
	if err := h.a.Run(ctx, platform.Inbound{Listen: true, Handle: func(platform.Event) error { return nil }}); err != nil || ctx.Err() != nil {
		t.Fatalf("a listening Run in Polling mode = %v; want nil at once: nothing to listen on", err)
	}
}
