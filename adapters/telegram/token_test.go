package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/platform"
)

// TestNoTokenInErrorsOrLogs drives every kind of failure the token could
// leak through: network errors (whose *url.Error holds the request URL with
// the token), API errors, undecodable answers, cancellation; it checks each
// returned error and, through the observer, each log line at every level.
func TestNoTokenInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadEndpoint := dead.URL + "/bot%s/%s"
	dead.Close() // connections to it are refused

	core, logs := observer.New(zap.DebugLevel)
	a, err := New(Config{Token: testToken, APIEndpoint: deadEndpoint, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}

	// Send: a network error, redacted but still informative.
	_, err = a.Send(t.Context(), sendTo("1", platform.TextMessage("x")))
	if err == nil {
		t.Fatal("Send to a dead server succeeded")
	}
	assertNoToken(t, err)
	if !strings.Contains(err.Error(), redact.Placeholder) || !strings.Contains(err.Error(), "telegram: sendMessage") {
		t.Fatalf("network error %q: want the URL with %s", err, redact.Placeholder)
	}
	// Uploads go through another library path.
	_, err = a.Send(t.Context(), sendTo("1", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("d")}}}))
	assertNoToken(t, err)
	if err == nil || !strings.Contains(err.Error(), redact.Placeholder) {
		t.Fatalf("upload network error %q", err)
	}

	// Run: getMe fails over and over, logging each failure; in fake time,
	// with a transport that fails like a refused connection (http.Client
	// wraps its error in a *url.Error holding the URL, token and all).
	synctest.Test(t, func(t *testing.T) {
		refused := roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("connect: connection refused")
		})
		c, err := New(Config{Token: testToken, APIEndpoint: deadEndpoint, HTTPClient: &http.Client{Transport: refused}, Logger: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		if err := c.Run(ctx, platform.Inbound{Handle: func(platform.Event) error { return nil }}); err != nil {
			t.Fatalf("Run = %v; want nil after ctx ended", err)
		}
	})
	// Failures at 0 s, within 0.5 s and within 1.5 s at least; the first
	// logged (the others within 10 s of it are counted, not logged).
	warned := logs.FilterMessageSnippet("request failed").All()
	if len(warned) != 1 {
		t.Fatalf("%d logged getMe failures in 2 s; want 1", len(warned))
	}
	for _, w := range warned {
		if msg := fmt.Sprint(w.ContextMap()["error"]); !strings.Contains(msg, redact.Placeholder) || !strings.Contains(msg, "connection refused") {
			t.Fatalf("logged error %q: want the redacted URL and the cause", msg)
		}
	}

	// Failures from a live server: API errors, HTML, a conflict, slow
	// answers cut by a deadline.
	srv := telegramtest.NewServer()
	defer srv.Close()
	b, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []telegramtest.Fault{
		{Method: "sendMessage", Status: 403, Times: 1},
		{Method: "sendMessage", HTML: true, Times: 1},
		{Method: "sendMessage", Status: 429, RetryAfter: 1, Times: 1},
		{Method: "sendMessage", Delay: time.Hour, Times: 1}, // cut by the deadline
	} {
		srv.Inject(f)
		bound := waitPeriod
		if f.Delay > 0 {
			bound = 50 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(t.Context(), bound)
		_, err := b.Send(ctx, sendTo("1", platform.TextMessage("x")))
		cancel()
		if err == nil {
			t.Fatalf("fault %+v: Send succeeded", f)
		}
		assertNoToken(t, err)
	}
	srv.Inject(telegramtest.Fault{Method: "getUpdates", Status: 409})
	err = b.Run(t.Context(), platform.Inbound{Handle: func(platform.Event) error { return nil }})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Run = %v", err)
	}
	assertNoToken(t, err)
	assertNoTokenInLogs(t, logs)
	if logs.Len() == 0 {
		t.Fatal("nothing logged: the check above proved nothing")
	}
}

// roundTripFunc makes a function an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
