package telegram

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

const webhookSecret = "s3cret_Token-1"

func updateJSON(id int, text string) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"from":{"id":7,"first_name":"Ann"},"chat":{"id":42,"type":"private","first_name":"Ann"},"date":1772362800,"text":%q}}`, id, id, text)
}

func post(t *testing.T, url, secret, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// postUnsent posts a request that declares a body of n bytes and sends
// none, and returns the answer's status: for a body the handler refuses
// unread. A client writing such a body races the server, which answers
// and closes the connection: the client may see its write fail (a broken
// pipe) before it reads the answer.
func postUnsent(t *testing.T, url string, n int64) int {
	t.Helper()
	body := stalledBody(make(chan struct{}))
	defer close(body) // the request's write ends once the answer came
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = n
	req.Header.Set("Content-Type", "application/json")
	// Bounded: a handler that read the body would wait for it forever.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stalledBody is a request body whose reads wait until it is closed by
// its maker, then fail.
type stalledBody chan struct{}

func (b stalledBody) Read([]byte) (int, error) {
	<-b
	return 0, io.ErrUnexpectedEOF
}

func TestWebhookRun(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Mode = Webhook
		c.AllowedUpdates = []string{"message", "callback_query"}
		c.Webhook = WebhookConfig{Listen: "127.0.0.1:0", Path: "/tg/hook", SecretToken: webhookSecret, URL: "https://bot.example/tg/hook"}
	})
	ctx := waitCtx(t)
	r := h.run(t)
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.Webhook().URL != "" }); err != nil {
		t.Fatal(err)
	}
	if w := h.srv.Webhook(); w.URL != "https://bot.example/tg/hook" || w.SecretToken != webhookSecret ||
		!slices.Equal(w.AllowedUpdates, []string{"message", "callback_query"}) || w.MaxConnections != 1 {
		t.Fatalf("registered webhook %+v", w)
	}
	addr := h.a.WebhookAddr()
	if addr == nil {
		t.Fatal("no webhook address while running")
	}
	url := "http://" + addr.String() + "/tg/hook"

	if got := post(t, url, webhookSecret, updateJSON(100, "hello")); got != http.StatusOK {
		t.Fatalf("right secret: %d", got)
	}
	if ev := r.next(t, 1)[0]; ev.ID != "100" || ev.Text != "hello" || ev.Chat.ID != "42" {
		t.Fatalf("event %+v", ev)
	}

	for _, tc := range []struct {
		name, secret, body, method string
		want                       int
	}{
		{"wrong secret", "nope", updateJSON(101, "forged"), http.MethodPost, http.StatusForbidden},
		{"no secret", "", updateJSON(102, "forged"), http.MethodPost, http.StatusForbidden},
		{"GET", webhookSecret, "", http.MethodGet, http.StatusMethodNotAllowed},
		{"not JSON", webhookSecret, "{not json", http.MethodPost, http.StatusBadRequest},
		{"JSON but not an update", webhookSecret, `{"update_id":103,"message":"a string"}`, http.MethodPost, http.StatusOK},
		{"no update_id", webhookSecret, `{"message":{"text":"x"}}`, http.MethodPost, http.StatusOK},
		{"duplicate", webhookSecret, updateJSON(100, "hello"), http.MethodPost, http.StatusOK},
		{"wrong path", webhookSecret, updateJSON(104, "elsewhere"), "path", http.StatusNotFound},
	} {
		var got int
		switch tc.method {
		case http.MethodGet:
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got = resp.StatusCode
		case "path":
			got = post(t, "http://"+addr.String()+"/other", tc.secret, tc.body)
		default:
			got = post(t, url, tc.secret, tc.body)
		}
		if got != tc.want {
			t.Errorf("%s: status %d; want %d", tc.name, got, tc.want)
		}
	}
	// A callback through the webhook can be answered.
	cb := `{"update_id":105,"callback_query":{"id":"cbw","from":{"id":7,"first_name":"Ann"},"chat_instance":"c","data":"go","message":{"message_id":3,"chat":{"id":42,"type":"private"},"date":1}}}`
	if got := post(t, url, webhookSecret, cb); got != http.StatusOK {
		t.Fatalf("callback: %d", got)
	}
	ev := r.next(t, 1)[0]
	if ev.Kind != platform.EventCallback || ev.Text != "go" || ev.QueryID != "cbw" {
		t.Fatalf("callback event %+v", ev)
	}
	if err := h.a.AnswerCallback(ctx, ev, platform.CallbackAnswer{}); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.WaitUntil(ctx, func() bool { return len(h.srv.CallbackAnswers()) == 1 }); err != nil {
		t.Fatal("callback not answered")
	}
	r.none(t) // forged, malformed and duplicate updates were not handled

	// Each kind logged once (at most once every 10 s), each request
	// counted; the duplicate logged at debug level.
	if n := logged(h.logs, "wrong secret token"); n != 1 {
		t.Errorf("%d wrong-secret log lines; want 1", n)
	}
	if n := logged(h.logs, "not JSON"); n != 1 {
		t.Errorf("%d not-JSON log lines; want 1", n)
	}
	if n := logged(h.logs, "skipping a malformed update"); n != 1 {
		t.Errorf("%d malformed-update log lines; want 1", n)
	}
	if n := logged(h.logs, "dropping a duplicate update"); n != 1 {
		t.Errorf("%d duplicate log lines; want 1", n)
	}
	want := Stats{Taken: 2, Duplicates: 1, Malformed: 2, WebhookForbidden: 2, WebhookInvalid: 2}
	if got := h.a.Stats(); got != want {
		t.Errorf("Stats = %+v; want %+v", got, want)
	}

	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if h.a.WebhookAddr() != nil {
		t.Fatal("WebhookAddr set after Run returned")
	}
	if _, err := http.Post(url, "application/json", strings.NewReader(updateJSON(106, "late"))); err == nil {
		t.Fatal("webhook server still answers after Run returned")
	}
	if h.srv.Requests("getUpdates") != 0 || h.srv.Requests("deleteWebhook") != 0 {
		t.Fatal("webhook mode polled")
	}
}

func TestWebhookHandlerMounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.Mode = Webhook }) // no Listen, no URL, no secret
	ts := httptest.NewServer(h.a.WebhookHandler())
	defer ts.Close()

	if got := post(t, ts.URL, "", updateJSON(1, "too early")); got != http.StatusServiceUnavailable {
		t.Fatalf("before Run: %d; want 503", got)
	}
	r := h.run(t)
	// The handler takes updates once Run has fetched getMe.
	succeedsSoon(t, func() error {
		if status := post(t, ts.URL, "", updateJSON(2, "mounted")); status != http.StatusOK {
			return fmt.Errorf("mounted handler answered %d", status)
		}
		return nil
	})
	if ev := r.next(t, 1)[0]; ev.Text != "mounted" {
		t.Fatalf("event %+v", ev)
	}
	if got := postUnsent(t, ts.URL, maxUpdateBody+1); got != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d; want 413", got)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if got := post(t, ts.URL, "", updateJSON(3, "too late")); got != http.StatusServiceUnavailable {
		t.Fatalf("after Run: %d; want 503", got)
	}
	if h.srv.Requests("setWebhook") != 0 {
		t.Fatal("setWebhook called without a URL")
	}
	if logged(h.logs, "no secret token") != 1 {
		t.Fatal("missing secret token not warned about")
	}
}

func TestWebhookListenError(t *testing.T) {
	busy := httptest.NewServer(http.NotFoundHandler())
	defer busy.Close()
	h := newHarness(t, func(c *Config) {
		c.Mode = Webhook
		c.Webhook = WebhookConfig{Listen: strings.TrimPrefix(busy.URL, "http://"), URL: "https://bot.example/hook"}
	})
	err := h.run(t).wait(t, waitPeriod)
	if err == nil || !strings.HasPrefix(err.Error(), "telegram: webhook: ") {
		t.Fatalf("Run = %v; want a listen error", err)
	}
	if h.srv.Requests("setWebhook") != 0 {
		t.Fatal("setWebhook called although the listener failed")
	}
}

func TestWebhookRefused(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Mode = Webhook
		c.Webhook = WebhookConfig{Listen: "127.0.0.1:0", URL: "https://bot.example/hook"}
	})
	h.srv.Inject(telegramFault400("setWebhook", "Bad Request: bad webhook: HTTPS url must be provided for webhook"))
	err := h.run(t).wait(t, waitPeriod)
	if !platform.IsPermanent(err) || !strings.Contains(err.Error(), "bad webhook") {
		t.Fatalf("Run = %v; want the permanent setWebhook error", err)
	}
	if h.a.WebhookAddr() != nil {
		t.Fatal("listener left open")
	}
}

// brokenBody is a request body whose read fails, as when the client's
// connection breaks mid-body.
type brokenBody struct{}

func (brokenBody) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// A body that cannot be read is answered 400, never 200: Telegram must not
// take the update for handled.
func TestWebhookBodyReadError(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Mode = Webhook })
	var handled int
	activate(t, h.a, func(platform.Event) error { handled++; return nil })
	w := httptest.NewRecorder()
	h.a.WebhookHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", brokenBody{}))
	if w.Code != http.StatusBadRequest || handled != 0 {
		t.Fatalf("status %d, %d events; want 400 and none", w.Code, handled)
	}
	if logged(h.logs, "could not read a webhook request") != 1 {
		t.Fatal("read error not logged")
	}
}

// setWebhook gets max_connections: 1 unless configured, so that Telegram
// sends updates one at a time, in order.
func TestWebhookMaxConnections(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, 1}, {1, 1}, {40, 40}, {100, 100}} {
		t.Run(strconv.Itoa(tc.set), func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Mode = Webhook
				c.Webhook = WebhookConfig{URL: "https://bot.example/hook", MaxConnections: tc.set}
			})
			r := h.run(t)
			// Registered, not only asked for: the server counts a request
			// when it arrives, before it handles it.
			if err := h.srv.WaitUntil(waitCtx(t), func() bool { return h.srv.Webhook().URL != "" }); err != nil {
				t.Fatal(err)
			}
			if err := r.stop(t); err != nil {
				t.Fatal(err)
			}
			if got := h.srv.Webhook(); got.URL == "" || got.MaxConnections != tc.want {
				t.Fatalf("webhook %+v; want max_connections %d", got, tc.want)
			}
		})
	}
}
