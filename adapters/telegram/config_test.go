package telegram

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func TestConfigDefaults(t *testing.T) {
	a, err := New(Config{Token: "1:tok"})
	if err != nil {
		t.Fatal(err)
	}
	c := a.cfg
	if c.APIEndpoint != tgbotapi.APIEndpoint || c.Mode != Polling || c.PollTimeout != DefaultPollTimeout ||
		c.Webhook.Path != "/" || c.HTTPClient == nil || c.HTTPClient == http.DefaultClient || c.Logger == nil || a.Name() != "telegram" {
		t.Fatalf("defaults: %+v", c)
	}
	for in, want := range map[time.Duration]time.Duration{1500 * time.Millisecond: time.Second, time.Millisecond: time.Second, 45 * time.Second: 45 * time.Second} {
		a, err := New(Config{Token: "1:tok", PollTimeout: in})
		if err != nil || a.cfg.PollTimeout != want {
			t.Errorf("PollTimeout %v became %v (%v); want %v", in, a.cfg.PollTimeout, err, want)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	const token = "123:SECRET_token-value"
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no token", Config{}},
		{"token with a slash", Config{Token: "12/3"}},
		{"endpoint with one verb", Config{Token: token, APIEndpoint: "http://x/bot%s"}},
		{"endpoint with another verb", Config{Token: token, APIEndpoint: "http://x/bot%s/%s/%d"}},
		{"endpoint not http", Config{Token: token, APIEndpoint: "ftp://x/bot%s/%s"}},
		{"mode", Config{Token: token, Mode: "carrier-pigeon"}},
		{"negative poll timeout", Config{Token: token, PollTimeout: -time.Second}},
		{"path", Config{Token: token, Webhook: WebhookConfig{Path: "hook"}}},
		{"secret characters", Config{Token: token, Webhook: WebhookConfig{SecretToken: "has space"}}},
		{"secret length", Config{Token: token, Webhook: WebhookConfig{SecretToken: strings.Repeat("a", 257)}}},
		{"webhook URL", Config{Token: token, Webhook: WebhookConfig{URL: "not a url"}}},
		{"client timeout under the poll timeout", Config{Token: token, HTTPClient: &http.Client{Timeout: 10 * time.Second}}},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v; want ErrInvalidConfig", tt.name, err)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") || !strings.HasPrefix(err.Error(), "telegram: ") {
			t.Errorf("%s: error %q leaks the token or lacks the prefix", tt.name, err)
		}
	}
	// A client timeout is fine in Webhook mode, and above the poll timeout.
	if _, err := New(Config{Token: token, Mode: Webhook, HTTPClient: &http.Client{Timeout: time.Second}}); err != nil {
		t.Error(err)
	}
	if _, err := New(Config{Token: token, HTTPClient: &http.Client{Timeout: time.Minute}}); err != nil {
		t.Error(err)
	}
}

func TestRedact(t *testing.T) {
	const token = "123:AB/C d"
	for _, s := range []string{
		"http://x/bot123:AB/C d/getMe",
		"http://x/bot123:AB%2FC%20d/getMe",
		"http://x/?t=123%3AAB%2FC+d",
	} {
		if got := redact(s, token); strings.Contains(got, "AB") || !strings.Contains(got, "<token>") {
			t.Errorf("redact(%q) = %q", s, got)
		}
	}
	if redact("abc", "") != "abc" {
		t.Error("empty token changed the text")
	}
	err := scrub(errors.New("oops 123:AB/C d"), token)
	if err.Error() != "oops <token>" {
		t.Errorf("scrub = %q", err)
	}
}
