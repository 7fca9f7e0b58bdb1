package main

import (
	"bytes"
	"context"
	"github.com/heraldbot/herald/cluster/embedded"
	"strings"
	"testing"
	"time"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := parseConfig(nil, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.webchatAddr != "127.0.0.1:8080" || cfg.metricsAddr != "" || cfg.logFormat != "console" || cfg.shutdownTimeout != 30*time.Second || cfg.telegramToken != "" {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestParseConfigFlagsWin(t *testing.T) {
	cfg, err := parseConfig(
		[]string{"-shutdown-timeout", "5s", "-webchat-addr", "off", "-log-format=json"},
		env("SHUTDOWN_TIMEOUT", "1m", "TELEGRAM_BOT_TOKEN", "123:abc", "WEBCHAT_ADDR", "127.0.0.1:9"),
		&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.shutdownTimeout != 5*time.Second || cfg.webchatAddr != "" || cfg.logFormat != "json" || cfg.telegramToken != "123:abc" {
		t.Fatalf("cfg = %+v", cfg)
	}
	cfg, err = parseConfig(nil, env("ONEBOT_WS_URL", "ws://127.0.0.1:6700/", "ONEBOT_ACCESS_TOKEN", "t", "METRICS_ADDR", ":9090",
		"TELEGRAM_BOT_TOKEN", "1:x", "TELEGRAM_WEBHOOK_URL", "https://bot.example/hook", "TELEGRAM_WEBHOOK_LISTEN", ":8443",
		"TELEGRAM_API_ENDPOINT", "http://127.0.0.1:1/bot%s/%s"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.onebotURL == "" || cfg.metricsAddr != ":9090" || cfg.telegramWebhookListen != ":8443" || cfg.webchatAddr == "" {
		t.Fatalf("cfg = %+v", cfg)
	}
}

// badConfigs are settings that must stop the bot with exit code 2 and a line
// naming the setting.
var badConfigs = []struct {
	name    string
	args    []string
	env     []string
	setting string
}{
	{"unparseable duration", nil, []string{"SHUTDOWN_TIMEOUT", "soon"}, "SHUTDOWN_TIMEOUT"},
	{"negative duration", []string{"-shutdown-timeout=-1s"}, nil, "SHUTDOWN_TIMEOUT"},
	{"log format", nil, []string{"LOG_FORMAT", "xml"}, "LOG_FORMAT"},
	{"dead letters in no directory", nil, []string{"DEAD_LETTERS_FILE", "/no/such/dir/dl.jsonl"}, "DEAD_LETTERS_FILE"},
	{"endpoint without token", nil, []string{"TELEGRAM_API_ENDPOINT", "http://127.0.0.1:1/bot%s/%s"}, "TELEGRAM_BOT_TOKEN"},
	{"endpoint format", nil, []string{"TELEGRAM_BOT_TOKEN", "1:x", "TELEGRAM_API_ENDPOINT", "http://127.0.0.1:1/bot"}, "TELEGRAM_API_ENDPOINT"},
	{"malformed endpoint", nil, []string{"TELEGRAM_BOT_TOKEN", "1:x", "TELEGRAM_API_ENDPOINT", "::%s/%s"}, "TELEGRAM_API_ENDPOINT"},
	{"webhook without token", nil, []string{"TELEGRAM_WEBHOOK_URL", "https://x.example/h", "TELEGRAM_WEBHOOK_LISTEN", ":8443"}, "TELEGRAM_BOT_TOKEN"},
	{"malformed webhook URL", nil, []string{"TELEGRAM_BOT_TOKEN", "1:x", "TELEGRAM_WEBHOOK_URL", "not a url", "TELEGRAM_WEBHOOK_LISTEN", ":8443"}, "TELEGRAM_WEBHOOK_URL"},
	{"webhook without listen", nil, []string{"TELEGRAM_BOT_TOKEN", "1:x", "TELEGRAM_WEBHOOK_URL", "https://x.example/h"}, "TELEGRAM_WEBHOOK_LISTEN"},
	{"secret without webhook", nil, []string{"TELEGRAM_BOT_TOKEN", "1:x", "TELEGRAM_WEBHOOK_SECRET", "s"}, "TELEGRAM_WEBHOOK_URL"},
	{"onebot both modes", nil, []string{"ONEBOT_WS_LISTEN", ":6701", "ONEBOT_WS_URL", "ws://127.0.0.1:6700/"}, "ONEBOT_WS_URL"},
	{"onebot URL scheme", nil, []string{"ONEBOT_WS_URL", "http://127.0.0.1:6700/"}, "ONEBOT_WS_URL"},
	{"onebot listen", nil, []string{"ONEBOT_WS_LISTEN", "6701"}, "ONEBOT_WS_LISTEN"},
	{"onebot token alone", nil, []string{"ONEBOT_ACCESS_TOKEN", "t"}, "ONEBOT_ACCESS_TOKEN"},
	{"webchat off alone", nil, []string{"WEBCHAT_ADDR", "off"}, "WEBCHAT_ADDR"},
	{"webchat addr", []string{"-webchat-addr", "localhost"}, nil, "WEBCHAT_ADDR"},
	{"metrics addr", nil, []string{"METRICS_ADDR", "9090"}, "METRICS_ADDR"},
	{"metrics port", nil, []string{"METRICS_ADDR", "1.2.3.4:99999"}, "METRICS_ADDR"},
	{"webchat port", nil, []string{"WEBCHAT_ADDR", "127.0.0.1:http-alt-nonsense"}, "WEBCHAT_ADDR"},
	{"malformed token", nil, []string{"TELEGRAM_BOT_TOKEN", "not a token"}, "TELEGRAM_BOT_TOKEN"},
	{"control character in token", nil, []string{"TELEGRAM_BOT_TOKEN", "1:ab\x7fc"}, "TELEGRAM_BOT_TOKEN"},
	{"telegram avoid duplicates", nil, []string{"TELEGRAM_AVOID_DUPLICATES", "maybe"}, "TELEGRAM_AVOID_DUPLICATES"},
	{"onebot avoid duplicates", []string{"-onebot-avoid-duplicates=sometimes"}, nil, "ONEBOT_AVOID_DUPLICATES"},
	{"onebot URL with a password", nil, []string{"ONEBOT_WS_URL", "ws://bot:pw@127.0.0.1:6700/"}, "ONEBOT_WS_URL"},
	{"data sync", nil, []string{"DATA_SYNC", "sometimes"}, "DATA_SYNC"},
	{"data dir and NATS URL", nil, []string{"DATA_DIR", "/tmp/x", "NATS_URL", "nats://127.0.0.1:4222"}, "DATA_DIR"},
	{"NATS URL scheme", nil, []string{"NATS_URL", "http://127.0.0.1:4222"}, "NATS_URL"},
	{"malformed NATS URL with data dir off", nil, []string{"DATA_DIR", "off", "NATS_URL", "::garbage::"}, "NATS_URL"},
	{"NATS URL port", nil, []string{"NATS_URL", "nats://127.0.0.1:99999"}, "NATS_URL"},
	{"bot name with a dot", nil, []string{"HERALD_BOT", "my.bot"}, "HERALD_BOT"},
	{"node without NATS", nil, []string{"HERALD_NODE", "a"}, "HERALD_NODE"},
	{"node with a newline", nil, []string{"NATS_URL", "nats://127.0.0.1:4222", "HERALD_NODE", "a\nb"}, "HERALD_NODE"},
	{"dead letters file with the journal", nil, []string{"DEAD_LETTERS_FILE", "/tmp/dl.jsonl"}, "DEAD_LETTERS_FILE"},
	{"webhook secret", nil, []string{"TELEGRAM_BOT_TOKEN", "1:x", "TELEGRAM_WEBHOOK_URL", "https://x.example/h",
		"TELEGRAM_WEBHOOK_LISTEN", ":8443", "TELEGRAM_WEBHOOK_SECRET", "has space"}, "TELEGRAM_WEBHOOK_SECRET"},
}

// Neither -h nor a bad flag prints a secret from the environment.
func TestUsageHidesSecrets(t *testing.T) {
	secrets := env("TELEGRAM_BOT_TOKEN", "123:Zq7tokval", "TELEGRAM_WEBHOOK_SECRET", "Zq7hookval", "ONEBOT_ACCESS_TOKEN", "Zq7obval",
		"ONEBOT_WS_LISTEN", "127.0.0.1:6701")
	for _, args := range [][]string{{"-h"}, {"-nope"}} {
		var stdout, stderr bytes.Buffer
		run(context.Background(), args, secrets, &stdout, &stderr)
		for _, s := range []string{"Zq7tokval", "Zq7hookval", "Zq7obval"} {
			if strings.Contains(stderr.String()+stdout.String(), s) {
				t.Fatalf("%v printed %q:\n%s", args, s, stderr.String())
			}
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range badConfigs {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, env(tc.env...), &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit code %d; want 2 (stderr %q)", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "bot: "+tc.setting+" ") {
				t.Fatalf("stderr = %q; want one line naming %s", stderr.String(), tc.setting)
			}
		})
	}
}

func TestUnknownFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-nope"}, env(), &stdout, &stderr); code != 2 {
		t.Fatalf("exit code %d", code)
	}
	if code := run(context.Background(), []string{"-h"}, env(), &stdout, &stderr); code != 0 {
		t.Fatalf("-h exit code %d", code)
	}
}

// A URL's secret (OneBot's ?access_token=, a password) never appears in a
// configuration error.
func TestConfigErrorsHideURLSecrets(t *testing.T) {
	const secret = "s3cr3t-T0ken"
	for _, u := range []string{
		"http://127.0.0.1:6700/?access_token=" + secret,                      // wrong scheme
		"ws:///path?access_token=" + secret,                                  // no host
		"ws://127.0.0.1:6700/%zz?access_token=" + secret,                     // unparseable
		"ws://bot:" + secret + "@127.0.0.1:6700/",                            // a password
		"http://u:" + secret + "@127.0.0.1:6700/?x=" + secret + "#" + secret, // both, and a fragment
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), nil, env("ONEBOT_WS_URL", u), &stdout, &stderr)
		if code != 2 {
			t.Fatalf("%q: exit code %d; want 2", u, code)
		}
		if out := stdout.String() + stderr.String(); strings.Contains(out, secret) || !strings.Contains(out, "ONEBOT_WS_URL") {
			t.Fatalf("%q: output %q shows the secret or names no setting", u, out)
		}
	}
}

// A second bot on a DATA_DIR in use stops with one line and exit code 2.
func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	srv, err := embedded.Start(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), nil, env("DATA_DIR", dir, "WEBCHAT_ADDR", "127.0.0.1:0"), &stdout, &stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "DATA_DIR "+dir+" is in use by another bot") {
		t.Fatalf("exit %d, stderr %q; want 2 and a line saying DATA_DIR is in use", code, stderr.String())
	}
}

// A setting's error never quotes a secret it holds: the token in the API
// endpoint's path, a webhook URL whose path is the token (as Telegram
// suggests a secret path).
func TestConfigErrorsHideTheToken(t *testing.T) {
	const token = "123456:SECRETtokenABCDEFghijk"
	for _, kv := range [][]string{
		{"TELEGRAM_BOT_TOKEN", token, "TELEGRAM_API_ENDPOINT", "http://127.0.0.1:1/bot" + token + "/%s"},
		{"TELEGRAM_BOT_TOKEN", token, "TELEGRAM_WEBHOOK_URL", "ftp://x.invalid/" + token, "TELEGRAM_WEBHOOK_LISTEN", ":8443"},
		{"TELEGRAM_BOT_TOKEN", token, "TELEGRAM_WEBHOOK_URL", "https:///" + token, "TELEGRAM_WEBHOOK_LISTEN", ":8443"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), nil, env(kv...), &stdout, &stderr); code != 2 {
			t.Fatalf("%q: exit code %d; want 2", kv, code)
		}
		if out := stdout.String() + stderr.String(); strings.Contains(out, "SECRETtokenABCDEFghijk") {
			t.Fatalf("%q: output %q shows the token", kv, out)
		}
	}
}
