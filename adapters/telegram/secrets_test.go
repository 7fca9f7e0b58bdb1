package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/testport"
	"github.com/heraldbot/herald/platform"
)

// leaky reports whether s holds the token's secret part or the webhook's
// secret token: any escaping of either (the token's colon aside) keeps
// them as they are, since they are made of unreserved characters.
func leaky(s string) bool {
	return strings.Contains(s, tokenPart) || strings.Contains(s, webhookSecret)
}

// echoing is a description of an error answer that quotes the request with
// the token and the secret in it, as a proxy's or a misbehaving local Bot
// API server's answer might.
const echoing = "Bad Request: cannot POST /bot" + testToken + "/x?url=https%3A%2F%2Fbot.example%2F" + testToken + "&secret_token=" + webhookSecret

// TestSecretsNeverLeak sends the token and the webhook's secret token
// through every path where they could leak — config errors, dial errors,
// HTTP errors, API errors (with descriptions echoing both), webhook
// registration, polling, callback answers, long messages, edits, the
// webhook handler, the confirming call — and fails if either appears in
// any error, any APIError description or URL reachable with errors.As, or
// any log line at debug level and above (message, logger name, fields).
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core).Named("tg")
	checked := 0
	check := func(what string, err error) {
		t.Helper()
		checked++
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		if leaky(err.Error()) {
			t.Errorf("%s: error leaks a secret: %v", what, err)
		}
		var ae *APIError
		if errors.As(err, &ae) && leaky(ae.Description) {
			t.Errorf("%s: APIError description leaks a secret: %q", what, ae.Description)
		}
		var ue *url.Error
		if errors.As(err, &ue) && leaky(ue.URL) {
			t.Errorf("%s: url.Error URL leaks a secret: %q", what, ue.URL)
		}
	}
	newAdapter := func(cfg Config) *Adapter {
		t.Helper()
		cfg.Token, cfg.Logger = testToken, log
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	// 1. Config errors: the token and the secret in every field that an
	// error might quote.
	for i, cfg := range []Config{
		{Token: testToken, APIEndpoint: "https://api.example/bot" + testToken + "/%s"},
		{Token: testToken, APIEndpoint: "ftp://" + webhookSecret + ".example/bot%s/%s", Webhook: WebhookConfig{SecretToken: webhookSecret}},
		{Token: testToken, Mode: Mode("webhook-" + testToken)},
		{Token: testToken, Mode: Webhook, Webhook: WebhookConfig{Path: "hook/" + testToken}},
		{Token: testToken, Mode: Webhook, Webhook: WebhookConfig{URL: "ftp://bot.example/" + testToken + "?s=" + webhookSecret, SecretToken: webhookSecret}},
		{Token: testToken + "!"},
		{Token: testToken, Webhook: WebhookConfig{SecretToken: webhookSecret + " !"}},
		{Token: testToken, PollTimeout: -time.Second, APIEndpoint: "https://x.example/bot%s/%s?" + tokenPart},
	} {
		_, err := New(cfg)
		check(fmt.Sprintf("config %d", i), err)
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("config %d: %v; want ErrInvalidConfig", i, err)
		}
	}

	// 2. Dial errors: a refused connection, for a send, an upload and a
	// run's getMe (logged, then the run ends with its context).
	dead := "http://" + testport.Addr(t) + "/bot%s/%s" // no listener
	d := newAdapter(Config{APIEndpoint: dead, Webhook: WebhookConfig{SecretToken: webhookSecret}})
	_, err := d.Send(t.Context(), sendTo("1", platform.TextMessage("x")))
	check("dial: send", err)
	_, err = d.Send(t.Context(), sendTo("1", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, Data: []byte("p")}}}))
	check("dial: upload", err)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	if err := d.Run(ctx, platform.Inbound{Handle: func(platform.Event) error { return nil }}); err != nil {
		t.Fatalf("Run against a dead endpoint = %v; want nil once ctx ended", err)
	}
	cancel()

	// 3 and 4. HTTP and API errors, each answer echoing both secrets.
	srv := telegramtest.NewServer()
	defer srv.Close()
	a := newAdapter(Config{APIEndpoint: srv.Endpoint(), Webhook: WebhookConfig{SecretToken: webhookSecret}})
	chat := int64(100)
	for _, f := range []telegramtest.Fault{
		{Status: 400, Description: echoing},
		{Status: 403, Description: "Forbidden: " + echoing},
		{Status: 404, Description: "Not Found: " + echoing},
		{Status: 429, RetryAfter: 1, Description: "Too Many Requests: " + echoing},
		{Status: 500, Description: "Internal Server Error: " + echoing},
		{Status: 502, HTML: true},
		{Reset: true},
		{Delay: time.Hour}, // cut by the deadline
	} {
		for _, msg := range []platform.OutboundMessage{
			platform.TextMessage("x"),
			{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("d")}}},
		} {
			// Each send to a chat of its own, its fault for that chat
			// alone: a request of an earlier send cut off on a loaded
			// machine may reach the server late, and must not take this
			// send's fault.
			chat++
			f.Times, f.ChatID = 1, chat
			remove := srv.Inject(f)
			ctx, cancel := context.WithTimeout(t.Context(), waitPeriod)
			if f.Delay > 0 {
				ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
			}
			_, err := a.Send(ctx, sendTo(strconv.FormatInt(chat, 10), msg))
			cancel()
			// A request cut off before it reached the server (a loaded
			// machine) leaves its fault: the next would meet it.
			remove()
			check(fmt.Sprintf("send with fault %+v", f), err)
		}
	}
	// An edit refused with an echo, and one that changes nothing (a debug
	// line).
	res, err := a.Send(t.Context(), sendTo("1", platform.TextMessage("menu")))
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(telegramtest.Fault{Method: "editMessageText", Status: 400, Description: echoing, Times: 1})
	_, err = a.Send(t.Context(), sendTo("1", platform.EditMessage(res.MessageID, "menu 2")))
	check("edit", err)
	if _, err := a.Send(t.Context(), sendTo("1", platform.EditMessage(res.MessageID, "menu"))); err != nil {
		t.Fatalf("an edit that changes nothing = %v", err)
	}
	// A long message whose part 2 fails once with an echo (logged, retried)
	// and then for good; a group that became a supergroup (logged).
	var part2 sync.Mutex
	part2Tries := 0
	srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
		if r.Method != "sendMessage" || !strings.HasPrefix(r.Params.Get("text"), "line 2") {
			return nil
		}
		part2.Lock()
		defer part2.Unlock()
		if part2Tries++; part2Tries == 1 {
			return &telegramtest.Fault{Status: 500, Description: echoing}
		}
		return &telegramtest.Fault{Status: 400, Description: echoing}
	})
	two := "line 1 " + strings.Repeat("x", 4000) + "\nline 2 " + strings.Repeat("y", 200)
	_, err = a.Send(t.Context(), sendTo("1", platform.TextMessage(two)))
	check("long message", err)
	srv.Migrate(-5, -1005)
	if _, err := a.Send(t.Context(), sendTo("-5", platform.TextMessage("moved"))); err != nil {
		t.Fatalf("send to a migrated group = %v", err)
	}

	// 5. Polling: a failing poll (logged), a callback whose answer fails
	// (logged), a failing confirming call (logged), and a 409 that ends
	// the run, all echoing.
	p := newAdapter(Config{APIEndpoint: srv.Endpoint(), Webhook: WebhookConfig{SecretToken: webhookSecret}})
	p.autoAnswer = 10 * time.Millisecond // the run answers the press nothing answered at once
	srv.Inject(telegramtest.Fault{Method: "getUpdates", Status: 500, Description: echoing, Times: 1})
	srv.Inject(telegramtest.Fault{Method: "answerCallbackQuery", Status: 500, Description: echoing})
	srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
		if r.Method == "getUpdates" && r.Params.Get("limit") == "1" { // the confirming call
			return &telegramtest.Fault{Status: 500, Description: echoing}
		}
		return nil
	})
	srv.PushCallback(1, ann, 1, "press")
	ctx, cancel = context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		// Stops at "stop", with it unconfirmed.
		done <- p.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
			if ev.Text == "stop" {
				cancel()
			}
			return nil
		}})
	}()
	waitLogged(t, logs, "answering a callback query failed")
	check("callback answer", p.AnswerCallback(t.Context(), platform.Event{ID: "x", Kind: platform.EventCallback, QueryID: "other"}, platform.CallbackAnswer{Text: "hi"}))
	srv.SendUserMessage(1, ann, "stop")
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	cancel()
	srv.Inject(telegramtest.Fault{Method: "getUpdates", Status: 409, Description: "Conflict: " + echoing})
	err = p.Run(t.Context(), platform.Inbound{Handle: func(platform.Event) error { return nil }})
	check("polling: conflict", err)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Run = %v; want ErrConflict", err)
	}

	// 6. Webhook registration: served on a path holding the token (logged),
	// setWebhook fails transiently (logged) and then for good, echoing.
	w := newAdapter(Config{APIEndpoint: srv.Endpoint(), Mode: Webhook, Webhook: WebhookConfig{
		Listen: "127.0.0.1:0", Path: "/" + testToken, URL: "https://bot.example/" + testToken, SecretToken: webhookSecret,
	}})
	srv.Inject(telegramtest.Fault{Method: "setWebhook", Status: 500, Description: echoing, Times: 1})
	srv.Inject(telegramtest.Fault{Method: "setWebhook", Status: 400, Description: echoing, Times: 1})
	err = w.Run(t.Context(), platform.Inbound{Handle: func(platform.Event) error { return nil }})
	check("webhook registration", err)

	// 7. The webhook handler: a wrong secret (the right one and more), a
	// body that is not JSON, one too large, a malformed update, a
	// duplicate, a refusal.
	m := newAdapter(Config{Mode: Webhook, Webhook: WebhookConfig{SecretToken: webhookSecret}})
	refuse := false
	activate(t, m, func(platform.Event) error {
		if refuse {
			return errors.New("refused: " + echoing)
		}
		return nil
	})
	hook := func(secret, body string) int {
		req := httptest.NewRequest(http.MethodPost, "/"+testToken, strings.NewReader(body))
		req.Header.Set(secretHeader, secret)
		rec := httptest.NewRecorder()
		m.WebhookHandler().ServeHTTP(rec, req)
		return rec.Code
	}
	for _, c := range []struct {
		secret, body string
		want         int
	}{
		{webhookSecret + "x", updateJSON(1, "forged"), http.StatusForbidden},
		{webhookSecret, "{" + testToken, http.StatusBadRequest},
		{webhookSecret, strings.Repeat(" ", maxUpdateBody+1), http.StatusRequestEntityTooLarge},
		{webhookSecret, `{"update_id":2,"message":"` + testToken + `"}`, http.StatusOK},
		{webhookSecret, updateJSON(3, testToken), http.StatusOK},
		{webhookSecret, updateJSON(3, testToken), http.StatusOK}, // duplicate
	} {
		if got := hook(c.secret, c.body); got != c.want {
			t.Errorf("webhook request %.40q: %d; want %d", c.body, got, c.want)
		}
	}
	refuse = true
	if got := hook(webhookSecret, updateJSON(4, "x")); got != http.StatusServiceUnavailable {
		t.Errorf("refused update: %d; want 503", got)
	}

	// Every log line, at every level.
	for _, want := range []string{
		"request failed; retrying", "getUpdates failed", "answering a callback query failed",
		"confirming handled updates failed", "a part of a long message failed", "became a supergroup",
		"serving the webhook", "wrong secret token", "not JSON", "oversized", "malformed update",
		"duplicate update", "webhook update was refused", "already shows this content",
	} {
		if logged(logs, want) == 0 {
			t.Errorf("no log line %q: its path was not taken", want)
		}
	}
	for _, e := range logs.All() {
		line := e.LoggerName + " " + e.Message + " " + fmt.Sprint(e.ContextMap()) + " " + e.Stack
		if leaky(line) {
			t.Errorf("log line leaks a secret: %s", line)
		}
	}
	if checked < 30 {
		t.Fatalf("only %d errors checked", checked)
	}
}

// waitLogged waits until a log line containing msg was written.
func waitLogged(t *testing.T, logs *observer.ObservedLogs, msg string) {
	t.Helper()
	succeedsSoon(t, func() error {
		if logged(logs, msg) == 0 {
			return fmt.Errorf("no log line %q yet", msg)
		}
		return nil
	})
}
