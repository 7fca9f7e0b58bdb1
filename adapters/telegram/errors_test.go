package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

func TestClassify(t *testing.T) {
	var syntaxErr error
	var v any
	syntaxErr = json.Unmarshal([]byte("<html>502 Bad Gateway</html>"), &v)
	netErr := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/bot<token>/sendMessage", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}

	tests := []struct {
		name       string
		err        error
		status     int
		retryAfter time.Duration // > 0: want a retry-after error
		permanent  bool
		code       int // > 0: want an *APIError with this code
		contains   string
	}{
		{name: "429 with parameters", err: &tgbotapi.Error{Code: 429, Message: "Too Many Requests: retry after 2", ResponseParameters: tgbotapi.ResponseParameters{RetryAfter: 2}}, status: 429, retryAfter: 2 * time.Second, code: 429},
		{name: "429 hours", err: &tgbotapi.Error{Code: 429, Message: "Too Many Requests: retry after 18053", ResponseParameters: tgbotapi.ResponseParameters{RetryAfter: 18053}}, retryAfter: 18053 * time.Second, code: 429},
		{name: "429 description only", err: &tgbotapi.Error{Code: 429, Message: "Too Many Requests: retry after 7"}, retryAfter: 7 * time.Second, code: 429},
		{name: "429 without a time", err: &tgbotapi.Error{Code: 429, Message: "Too Many Requests"}, code: 429},
		{name: "upload 429: code 0, retry_after set", err: &tgbotapi.Error{Message: "Too Many Requests: retry after 5", ResponseParameters: tgbotapi.ResponseParameters{RetryAfter: 5}}, retryAfter: 5 * time.Second, code: 429},
		{name: "upload 429: code 0, no status", err: &tgbotapi.Error{ResponseParameters: tgbotapi.ResponseParameters{RetryAfter: 3}}, retryAfter: 3 * time.Second, code: 429},
		{name: "upload 403 from the HTTP status", err: &tgbotapi.Error{Message: "Forbidden: bot was blocked by the user"}, status: 403, permanent: true, code: 403},
		{name: "upload 400 from the description", err: &tgbotapi.Error{Message: "Bad Request: wrong file"}, permanent: true, code: 400},
		{name: "400", err: &tgbotapi.Error{Code: 400, Message: "Bad Request: chat not found"}, permanent: true, code: 400, contains: "telegram: sendMessage: 400 Bad Request: chat not found"},
		{name: "401", err: &tgbotapi.Error{Code: 401, Message: "Unauthorized"}, permanent: true, code: 401},
		{name: "403", err: &tgbotapi.Error{Code: 403, Message: "Forbidden: bot was blocked by the user"}, permanent: true, code: 403},
		{name: "404", err: &tgbotapi.Error{Code: 404, Message: "Not Found"}, permanent: true, code: 404},
		{name: "migrate", err: &tgbotapi.Error{Code: 400, Message: "Bad Request: group chat was upgraded to a supergroup chat", ResponseParameters: tgbotapi.ResponseParameters{MigrateToChatID: -1001}}, permanent: true, code: 400},
		{name: "500", err: &tgbotapi.Error{Code: 500, Message: "Internal Server Error"}, code: 500},
		{name: "502 JSON", err: &tgbotapi.Error{Code: 502, Message: "Bad Gateway"}, code: 502},
		{name: "wrapped API error", err: fmt.Errorf("outer: %w", &tgbotapi.Error{Code: 403, Message: "Forbidden"}), permanent: true, code: 403},
		{name: "HTML 502 page", err: syntaxErr, status: 502, contains: "HTTP 502 Bad Gateway with an answer that is not Bot API JSON"},
		{name: "truncated body", err: fmt.Errorf("read: %w", io.ErrUnexpectedEOF), status: 200, contains: "HTTP 200 OK with an answer that is not Bot API JSON"},
		{name: "network", err: netErr, contains: "connection refused"},
		{name: "error value", err: tgbotapi.Error{Code: 403, Message: "Forbidden"}, permanent: true, code: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classify("sendMessage", tt.err, tt.status)
			if err == nil {
				t.Fatal("classify returned nil")
			}
			d, isRA := platform.RetryAfterOf(err)
			if (tt.retryAfter > 0) != isRA || d != tt.retryAfter {
				t.Errorf("RetryAfterOf = %v, %v; want %v", d, isRA, tt.retryAfter)
			}
			if got := platform.IsPermanent(err); got != tt.permanent {
				t.Errorf("IsPermanent = %v; want %v", got, tt.permanent)
			}
			var ae *APIError
			if got := errors.As(err, &ae); got != (tt.code > 0) || (got && ae.Code != tt.code) {
				t.Errorf("APIError = %v (%+v); want code %d", got, ae, tt.code)
			}
			if blocked := errors.Is(err, platform.ErrBlocked); blocked != (tt.code == 403) {
				t.Errorf("errors.Is(err, platform.ErrBlocked) = %v for %v", blocked, err)
			}
			if ae != nil && ae.Method != "sendMessage" {
				t.Errorf("Method = %q", ae.Method)
			}
			if !strings.HasPrefix(err.Error(), "telegram: ") && !strings.HasPrefix(err.Error(), "platform: retry after") {
				t.Errorf("message %q lacks the package prefix", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("message %q does not contain %q", err, tt.contains)
			}
		})
	}
	if classify("x", nil, 0) != nil {
		t.Fatal("classify(nil) != nil")
	}
	ctxErr := classify("getUpdates", &url.Error{Op: "Post", URL: "u", Err: context.Canceled}, 0)
	if !errors.Is(ctxErr, context.Canceled) || platform.IsPermanent(ctxErr) {
		t.Fatalf("cancelled request = %v; want a retryable error wrapping context.Canceled", ctxErr)
	}
	migrate := classify("sendMessage", &tgbotapi.Error{Code: 400, Message: "m", ResponseParameters: tgbotapi.ResponseParameters{MigrateToChatID: -1001}}, 400)
	var ae *APIError
	if !errors.As(migrate, &ae) || ae.MigrateToChatID != -1001 {
		t.Fatalf("migrate_to_chat_id lost: %v", migrate)
	}
}

func TestRetryAfterFromDescription(t *testing.T) {
	for desc, want := range map[string]time.Duration{
		"Too Many Requests: retry after 35":     35 * time.Second,
		"Too Many Requests: Retry After 5":      5 * time.Second,
		"flood: retry after 12 seconds":         12 * time.Second,
		"Too Many Requests: retry after":        0,
		"Too Many Requests: retry after x":      0,
		"Too Many Requests: retry after 0":      0,
		"Too Many Requests":                     0,
		"retry after 99999999999999999999999":   999999999 * time.Second,
		"Too Many Requests: retry after -3":     0,
		"Too Many Requests: retry after 3.5sec": 3 * time.Second,
	} {
		if got := retryAfterFromDescription(desc); got != want {
			t.Errorf("retryAfterFromDescription(%q) = %v; want %v", desc, got, want)
		}
	}
}

func TestRunFailure(t *testing.T) {
	api := func(code int, ra int) error {
		return classify("getUpdates", &tgbotapi.Error{Code: code, Message: "m", ResponseParameters: tgbotapi.ResponseParameters{RetryAfter: ra}}, code)
	}
	tests := []struct {
		name  string
		err   error
		fatal error // sentinel, or nil
		wait  time.Duration
	}{
		{"401", api(401, 0), ErrUnauthorized, 0},
		{"404 (malformed token)", api(404, 0), ErrUnauthorized, 0},
		{"409", api(409, 0), ErrConflict, 0},
		{"429", api(429, 9), nil, 9 * time.Second},
		{"500 backs off", api(500, 0), nil, failureDelay(0, 0.5)},
		{"network backs off", errors.New("telegram: getUpdates: connection refused"), nil, failureDelay(0, 0.5)},
	}
	for _, tt := range tests {
		wait, fatal := runFailure(tt.err, 0, 0.5)
		if tt.fatal != nil {
			if !errors.Is(fatal, tt.fatal) {
				t.Errorf("%s: fatal = %v; want %v", tt.name, fatal, tt.fatal)
			}
			continue
		}
		if fatal != nil || wait != tt.wait {
			t.Errorf("%s: runFailure = %v, %v; want %v, nil", tt.name, wait, fatal, tt.wait)
		}
	}
	bad := api(400, 0)
	if _, fatal := runFailure(bad, 0, 0); fatal != bad {
		t.Errorf("400: fatal = %v; want the error itself", fatal)
	}
}

func TestFailureDelay(t *testing.T) {
	tests := []struct {
		attempt  int
		jitter   float64
		min, max time.Duration // want min <= d < max, or d == min when max == 0
	}{
		{0, 0, 250 * time.Millisecond, 0},
		{0, 0.999999, 250 * time.Millisecond, 500 * time.Millisecond},
		{1, 0, 500 * time.Millisecond, 0},
		{2, 0.5, 1500 * time.Millisecond, 0},
		{5, 0, 8 * time.Second, 0},
		{6, 0, 15 * time.Second, 0}, // 32 s capped at 30 s
		{6, 0.999999, 15 * time.Second, 30 * time.Second},
		{60, 0, 15 * time.Second, 0},
		{1 << 30, 0.5, 22500 * time.Millisecond, 0},
		{-1, 0, 250 * time.Millisecond, 0},
		{0, -3, 250 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		d := failureDelay(tt.attempt, tt.jitter)
		if tt.max == 0 && d != tt.min || tt.max != 0 && (d < tt.min || d >= tt.max) {
			t.Errorf("failureDelay(%d, %v) = %v; want %v..%v", tt.attempt, tt.jitter, d, tt.min, tt.max)
		}
	}
	// Monotone in attempt for a fixed jitter.
	prev := time.Duration(0)
	for a := range 20 {
		d := failureDelay(a, 0.3)
		if d < prev {
			t.Fatalf("failureDelay(%d) = %v < failureDelay(%d) = %v", a, d, a-1, prev)
		}
		prev = d
	}
}
