package telegram

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

func TestConfigDefaults(t *testing.T) {
	a, err := New(Config{Token: "1:tok"})
	if err != nil {
		t.Fatal(err)
	}
	c := a.cfg
	if c.APIEndpoint != tgbotapi.APIEndpoint || c.Mode != Polling || c.PollTimeout != DefaultPollTimeout ||
		c.Webhook.Path != "/" || c.Webhook.MaxConnections != 1 || c.HTTPClient == nil || c.HTTPClient == http.DefaultClient || c.Logger == nil || a.Name() != "telegram" {
		t.Fatalf("defaults: %+v", c)
	}
	if c.FileEndpoint != tgbotapi.FileEndpoint {
		t.Fatalf("FileEndpoint %q; want %q", c.FileEndpoint, tgbotapi.FileEndpoint)
	}
	named, err := New(Config{Token: "1:tok", Name: "support.bot-2", APIEndpoint: "http://127.0.0.1:1/api/bot%s/%s"})
	if err != nil || named.Name() != "support.bot-2" || named.cfg.FileEndpoint != "http://127.0.0.1:1/api/file/bot%s/%s" {
		t.Fatalf("named: %v, %q, %q", err, named.Name(), named.cfg.FileEndpoint)
	}
	odd, err := New(Config{Token: "1:tok", APIEndpoint: "http://x/%s?method=%s"})
	if err != nil || odd.cfg.FileEndpoint != "" {
		t.Fatalf("an endpoint without /bot%%s/: %v, FileEndpoint %q; want none", err, odd.cfg.FileEndpoint)
	}
	if _, err := odd.Download(t.Context(), platform.Attachment{Kind: platform.AttachPhoto, FileID: "f"}, 0); !errors.Is(err, platform.ErrInvalidMessage) || !platform.IsPermanent(err) {
		t.Fatalf("Download without a FileEndpoint = %v; want a permanent ErrInvalidMessage", err)
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
		{"token with a slash", Config{Token: "123:SECRET/token"}},
		{"token with a control character", Config{Token: "123:SECRET\x7ftoken"}},
		{"token with a space", Config{Token: "123:SECRET token"}},
		{"token with a percent sign", Config{Token: "123:SECRET%2Ftoken"}},
		{"token without a colon", Config{Token: "123SECRET"}},
		{"token without an ID", Config{Token: ":SECRET"}},
		{"token without a secret", Config{Token: "123:"}},
		{"token with letters in the ID", Config{Token: "12a:SECRET"}},
		{"token with a line break", Config{Token: "123:SECRET\n"}},
		{"endpoint with one verb", Config{Token: token, APIEndpoint: "http://x/bot%s"}},
		{"endpoint with another verb", Config{Token: token, APIEndpoint: "http://x/bot%s/%s/%d"}},
		{"endpoint not http", Config{Token: token, APIEndpoint: "ftp://x/bot%s/%s"}},
		{"endpoint broken by the token", Config{Token: token, APIEndpoint: "https://%s.example/%s"}},
		{"mode", Config{Token: token, Mode: "carrier-pigeon"}},
		{"negative poll timeout", Config{Token: token, PollTimeout: -time.Second}},
		{"path", Config{Token: token, Webhook: WebhookConfig{Path: "hook"}}},
		{"secret characters", Config{Token: token, Webhook: WebhookConfig{SecretToken: "has space"}}},
		{"secret length", Config{Token: token, Webhook: WebhookConfig{SecretToken: strings.Repeat("a", 257)}}},
		{"webhook URL", Config{Token: token, Webhook: WebhookConfig{URL: "not a url"}}},
		{"negative max connections", Config{Token: token, Webhook: WebhookConfig{MaxConnections: -1}}},
		{"too many max connections", Config{Token: token, Webhook: WebhookConfig{MaxConnections: 101}}},
		{"client timeout under the poll timeout", Config{Token: token, HTTPClient: &http.Client{Timeout: 10 * time.Second}}},
		{"name with a colon", Config{Token: token, Name: "tele:gram"}},
		{"name too long", Config{Token: token, Name: strings.Repeat("n", 65)}},
		{"file endpoint with one verb", Config{Token: token, FileEndpoint: "http://x/file/bot%s"}},
		{"file endpoint not http", Config{Token: token, FileEndpoint: "ftp://x/file/bot%s/%s"}},
		{"negative idle connections", Config{Token: token, MaxIdleConns: -1}},
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

// New admits only tokens of the form @BotFather gives.
func TestConfigTokenForm(t *testing.T) {
	for _, tok := range []string{"1:x", "123456:AAE-x_yz", "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"} {
		if _, err := New(Config{Token: tok}); err != nil {
			t.Errorf("New refused token %q: %v", tok, err)
		}
	}
	// A control character would make every request URL fail to parse, with
	// the URL, quoted (the token escaped), in the error: New refuses it.
	_, err := New(Config{Token: "123:abc\x7fSECRET", APIEndpoint: "http://127.0.0.1:1/bot%s/%s"})
	if !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), `\x7f`) {
		t.Fatalf("New = %v; want ErrInvalidConfig without the token", err)
	}
}
