package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/heraldbot/herald/internal/redact"
)

// config is the bot's configuration, from the environment and command-line
// flags (flags win).
type config struct {
	telegramToken         string
	telegramEndpoint      string
	telegramWebhookURL    string
	telegramWebhookListen string
	telegramWebhookSecret string
	telegramUsername      string
	onebotListen          string
	onebotURL             string
	onebotToken           string
	telegramAvoidDups     bool
	telegramNoLimits      bool // TELEGRAM_RATE_LIMIT=off: no send budget (against a test server)
	onebotAvoidDups       bool
	webchatAddr           string // "" when off
	metricsAddr           string // "" when off
	logFormat             string
	shutdownTimeout       time.Duration
	deadLettersFile       string // "" when off
	dataDir               string // the embedded NATS server's store; "" when off or with natsURL
	natsURL               string // an external NATS server or cluster instead
	dataSyncAlways        bool
	botName               string // the bot's name in NATS; "" for cluster.DefaultBot
	nodeName              string // this process among the bot's (with natsURL); "" for host-pid
}

// setting is one configuration value: an environment variable and the flag
// with the same meaning.
type setting struct {
	env, flag, def, usage string
	dst                   *string
}

// settingError names the setting a bad value came from.
type settingError struct {
	s   setting
	err error
}

func (e *settingError) Error() string {
	return fmt.Sprintf("%s (-%s): %v", e.s.env, e.s.flag, e.err)
}

// The forms of a bot name (one NATS stream name allows), and those
// Telegram accepts for a bot token and a webhook secret.
var (
	botName          = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	telegramToken    = regexp.MustCompile(`^[0-9]+:[A-Za-z0-9_-]+$`)
	webhookSecret    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
	telegramUsername = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)
)

// parseConfig reads the configuration from args (without the program name)
// and the environment lookup function. A bad value returns an error naming
// the setting.
func parseConfig(args []string, getenv func(string) string, usageOut io.Writer) (config, error) {
	var raw struct {
		telegramToken, telegramEndpoint, webhookURL, webhookListen, webhookSecret string
		onebotListen, onebotURL, onebotToken                                      string
		webchatAddr, metricsAddr, logFormat, shutdownTimeout                      string
		deadLettersFile                                                           string
		telegramAvoidDups, onebotAvoidDups, telegramUsername, telegramRateLimit   string
		dataDir, natsURL, dataSync, botName, nodeName                             string
	}
	settings := []setting{
		{"TELEGRAM_BOT_TOKEN", "telegram-token", "", "Telegram bot token from @BotFather; enables the Telegram adapter", &raw.telegramToken},
		{"TELEGRAM_API_ENDPOINT", "telegram-api-endpoint", "", `Telegram Bot API endpoint format with two %s (token, method); default "https://api.telegram.org/bot%s/%s"`, &raw.telegramEndpoint},
		{"TELEGRAM_WEBHOOK_URL", "telegram-webhook-url", "", "public HTTPS URL for Telegram webhooks; enables webhook mode instead of long polling", &raw.webhookURL},
		{"TELEGRAM_WEBHOOK_LISTEN", "telegram-webhook-listen", "", "address the webhook server listens on (host:port); required with -telegram-webhook-url", &raw.webhookListen},
		{"TELEGRAM_WEBHOOK_SECRET", "telegram-webhook-secret", "", "secret token Telegram must send with each webhook update", &raw.webhookSecret},
		{"TELEGRAM_BOT_USERNAME", "telegram-bot-username", "", "the bot's username, for commands addressed to it (/start@name) on the processes that take webhooks without asking Telegram; learned by the gateway when empty", &raw.telegramUsername},
		{"TELEGRAM_AVOID_DUPLICATES", "telegram-avoid-duplicates", "false", "true: a reply whose send failed after it may have reached Telegram goes to the dead letters instead of being sent again (at most once instead of at least once)", &raw.telegramAvoidDups},
		{"TELEGRAM_RATE_LIMIT", "telegram-rate-limit", "on", `"on": sends keep within Telegram's published budget (30 a second, 1 a second per chat, 20 a minute per group); "off" for a test server that has none`, &raw.telegramRateLimit},
		{"ONEBOT_WS_LISTEN", "onebot-ws-listen", "", "address for OneBot v11 reverse WebSocket connections (host:port)", &raw.onebotListen},
		{"ONEBOT_WS_URL", "onebot-ws-url", "", "OneBot v11 implementation's WebSocket URL to dial (forward mode)", &raw.onebotURL},
		{"ONEBOT_ACCESS_TOKEN", "onebot-access-token", "", "OneBot access token", &raw.onebotToken},
		{"ONEBOT_AVOID_DUPLICATES", "onebot-avoid-duplicates", "false", "true: a reply whose send failed after it may have reached the OneBot implementation goes to the dead letters instead of being sent again (at most once instead of at least once)", &raw.onebotAvoidDups},
		{"WEBCHAT_ADDR", "webchat-addr", "127.0.0.1:8080", `address of the browser chat (host:port), or "off" when another adapter is set`, &raw.webchatAddr},
		{"METRICS_ADDR", "metrics-addr", "", "address to serve Prometheus /metrics and the dead letters (GET /deadletters, POST /deadletters/replay) on (host:port); keep it on localhost or an internal network; off when empty", &raw.metricsAddr},
		{"LOG_FORMAT", "log-format", "console", `log format: "console" or "json"`, &raw.logFormat},
		{"SHUTDOWN_TIMEOUT", "shutdown-timeout", "30s", "how long to let pending replies finish on SIGINT/SIGTERM", &raw.shutdownTimeout},
		{"DEAD_LETTERS_FILE", "dead-letters-file", "", "with DATA_DIR=off: file that keeps undelivered replies across restarts, saved at exit, replayed at start; off when empty", &raw.deadLettersFile},
		{"DATA_DIR", "data-dir", "", `directory of the journal that keeps events and replies across crashes (an embedded NATS server's store); default: a per-user state directory ($XDG_STATE_HOME/herald); "off" keeps everything in memory`, &raw.dataDir},
		{"DATA_SYNC", "data-sync", "default", `"default" (written to disk within 2 minutes: survives the process dying, SIGKILL and OOM) or "always" (every write synced: survives a power loss, about ten times the cost per write)`, &raw.dataSync},
		{"NATS_URL", "nats-url", "", "NATS server or cluster (nats://host:4222, several separated by commas) that keeps the journal instead of the embedded one; processes of the bot on one NATS share its chats and platform accounts", &raw.natsURL},
		{"HERALD_BOT", "herald-bot", "", `the bot's name in NATS (its streams and buckets): processes with one name are one bot; default "herald"`, &raw.botName},
		{"HERALD_NODE", "herald-node", "", "with NATS_URL: this process's name among the bot's processes, unique among the live ones; default host name and process ID", &raw.nodeName},
	}
	bySetting := map[*string]setting{}
	fs := flag.NewFlagSet("bot", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	for _, s := range settings {
		// The usage text shows the built-in default, never the
		// environment's value: that may be a token.
		fs.StringVar(s.dst, s.flag, s.def, s.usage+" (env "+s.env+")")
		bySetting[s.dst] = s
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, s := range settings {
		if v, ok := lookup(getenv, s.env); ok && !given[s.flag] {
			*s.dst = v // flags win over the environment
		}
	}
	// A setting's error may quote a value holding a secret (the token in
	// an endpoint's path, a webhook URL whose path is the token, as
	// Telegram suggests): the secrets are redacted wherever they appear.
	secrets := redact.New(strings.TrimSpace(raw.telegramToken), raw.webhookSecret, raw.onebotToken)
	bad := func(dst *string, format string, a ...any) error {
		return &settingError{s: bySetting[dst], err: errors.New(secrets.String(fmt.Sprintf(format, a...)))}
	}

	cfg := config{
		telegramToken:         strings.TrimSpace(raw.telegramToken),
		telegramEndpoint:      strings.TrimSpace(raw.telegramEndpoint),
		telegramWebhookURL:    strings.TrimSpace(raw.webhookURL),
		telegramWebhookListen: strings.TrimSpace(raw.webhookListen),
		telegramWebhookSecret: raw.webhookSecret,
		telegramUsername:      strings.TrimPrefix(strings.TrimSpace(raw.telegramUsername), "@"),
		onebotListen:          strings.TrimSpace(raw.onebotListen),
		onebotURL:             strings.TrimSpace(raw.onebotURL),
		onebotToken:           raw.onebotToken,
		webchatAddr:           strings.TrimSpace(raw.webchatAddr),
		metricsAddr:           strings.TrimSpace(raw.metricsAddr),
		logFormat:             strings.TrimSpace(raw.logFormat),
		deadLettersFile:       strings.TrimSpace(raw.deadLettersFile),
	}
	switch sync := strings.TrimSpace(raw.dataSync); sync {
	case "default", "":
	case "always":
		cfg.dataSyncAlways = true
	default:
		return config{}, bad(&raw.dataSync, `want "default" or "always", got %q`, raw.dataSync)
	}
	cfg.natsURL = strings.TrimSpace(raw.natsURL)
	if cfg.natsURL != "" {
		for _, u := range strings.Split(cfg.natsURL, ",") {
			if err := checkURL(strings.TrimSpace(u), "nats", "tls"); err != nil {
				return config{}, bad(&raw.natsURL, "%v", err)
			}
		}
	}
	switch dir := strings.TrimSpace(raw.dataDir); {
	case strings.EqualFold(dir, "off"):
	case cfg.natsURL != "" && dir != "":
		return config{}, bad(&raw.dataDir, "set either DATA_DIR (the embedded server) or NATS_URL (an external one), not both")
	case cfg.natsURL != "":
	case dir != "":
		cfg.dataDir = dir
	default:
		d, err := defaultDataDir(getenv)
		if err != nil {
			return config{}, bad(&raw.dataDir, "no default (%v): set one, or off", err)
		}
		cfg.dataDir = d
	}
	cfg.botName = strings.TrimSpace(raw.botName)
	if cfg.botName != "" && !botName.MatchString(cfg.botName) {
		return config{}, bad(&raw.botName, "want 1 to 64 letters, digits, - and _, got %q", raw.botName)
	}
	cfg.nodeName = strings.TrimSpace(raw.nodeName)
	switch {
	case cfg.nodeName != "" && cfg.natsURL == "":
		return config{}, bad(&raw.nodeName, "names a process among several on one NATS: set NATS_URL too")
	case len(cfg.nodeName) > 64 || strings.ContainsFunc(cfg.nodeName, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return config{}, bad(&raw.nodeName, "want at most 64 printable characters")
	}
	if cfg.deadLettersFile != "" && (cfg.dataDir != "" || cfg.natsURL != "") {
		return config{}, bad(&raw.deadLettersFile, "the journal keeps undelivered replies: use DEAD_LETTERS_FILE only with DATA_DIR=off")
	}
	if f := cfg.deadLettersFile; f != "" {
		if st, err := os.Stat(filepath.Dir(f)); err != nil || !st.IsDir() {
			return config{}, bad(&raw.deadLettersFile, "want a file in an existing directory, got %q", raw.deadLettersFile)
		}
	}

	for _, b := range []struct {
		raw *string
		dst *bool
	}{{&raw.telegramAvoidDups, &cfg.telegramAvoidDups}, {&raw.onebotAvoidDups, &cfg.onebotAvoidDups}} {
		v, err := strconv.ParseBool(strings.TrimSpace(*b.raw))
		if err != nil {
			return config{}, bad(b.raw, "want true or false, got %q", *b.raw)
		}
		*b.dst = v
	}

	switch strings.TrimSpace(raw.telegramRateLimit) {
	case "on":
	case "off":
		cfg.telegramNoLimits = true
	default:
		return config{}, bad(&raw.telegramRateLimit, `want "on" or "off", got %q`, raw.telegramRateLimit)
	}

	d, err := time.ParseDuration(strings.TrimSpace(raw.shutdownTimeout))
	if err != nil || d <= 0 {
		return config{}, bad(&raw.shutdownTimeout, "want a positive duration such as 30s, got %q", raw.shutdownTimeout)
	}
	cfg.shutdownTimeout = d

	switch cfg.logFormat {
	case "console", "json":
	default:
		return config{}, bad(&raw.logFormat, `want "console" or "json", got %q`, raw.logFormat)
	}

	if cfg.telegramToken != "" && !telegramToken.MatchString(cfg.telegramToken) {
		return config{}, bad(&raw.telegramToken, "not a bot token (want digits, a colon, then letters, digits, '_' or '-', as @BotFather gives)")
	}
	if u := cfg.telegramUsername; u != "" && !telegramUsername.MatchString(u) {
		return config{}, bad(&raw.telegramUsername, "want 1 to 64 letters, digits and _, got %q", raw.telegramUsername)
	}
	if cfg.telegramWebhookSecret != "" && !webhookSecret.MatchString(cfg.telegramWebhookSecret) {
		return config{}, bad(&raw.webhookSecret, "want 1 to 256 of A-Z, a-z, 0-9, '_' and '-'")
	}
	if cfg.telegramEndpoint != "" {
		if strings.Count(cfg.telegramEndpoint, "%s") != 2 || strings.Count(cfg.telegramEndpoint, "%") != 2 {
			return config{}, bad(&raw.telegramEndpoint, "want a URL format with two %%s (token, method), got %q", cfg.telegramEndpoint)
		}
		if err := checkURL(fmt.Sprintf(cfg.telegramEndpoint, "TOKEN", "getMe"), "http", "https"); err != nil {
			return config{}, bad(&raw.telegramEndpoint, "%v", err)
		}
		if cfg.telegramToken == "" {
			return config{}, bad(&raw.telegramToken, "missing: required with TELEGRAM_API_ENDPOINT")
		}
	}
	if cfg.telegramWebhookURL != "" || cfg.telegramWebhookListen != "" || cfg.telegramWebhookSecret != "" {
		if cfg.telegramToken == "" {
			return config{}, bad(&raw.telegramToken, "missing: required for the Telegram webhook")
		}
		if cfg.telegramWebhookURL == "" {
			return config{}, bad(&raw.webhookURL, "missing: required with TELEGRAM_WEBHOOK_LISTEN or TELEGRAM_WEBHOOK_SECRET")
		}
		if err := checkURL(cfg.telegramWebhookURL, "https", "http"); err != nil {
			return config{}, bad(&raw.webhookURL, "%v", err)
		}
		if cfg.telegramWebhookListen == "" {
			return config{}, bad(&raw.webhookListen, "missing: required with TELEGRAM_WEBHOOK_URL")
		}
		if err := checkAddr(cfg.telegramWebhookListen); err != nil {
			return config{}, bad(&raw.webhookListen, "%v", err)
		}
	}

	if cfg.onebotListen != "" && cfg.onebotURL != "" {
		return config{}, bad(&raw.onebotURL, "set either ONEBOT_WS_LISTEN (reverse) or ONEBOT_WS_URL (forward), not both")
	}
	if cfg.onebotListen != "" {
		if err := checkAddr(cfg.onebotListen); err != nil {
			return config{}, bad(&raw.onebotListen, "%v", err)
		}
	}
	if cfg.onebotURL != "" {
		if err := checkURL(cfg.onebotURL, "ws", "wss"); err != nil {
			return config{}, bad(&raw.onebotURL, "%v", err)
		}
		if u, _ := url.Parse(cfg.onebotURL); u.User != nil {
			return config{}, bad(&raw.onebotURL, "a user name or password in the URL is not supported; give the access token with ONEBOT_ACCESS_TOKEN")
		}
	}
	if cfg.onebotToken != "" && cfg.onebotListen == "" && cfg.onebotURL == "" {
		return config{}, bad(&raw.onebotToken, "set but neither ONEBOT_WS_LISTEN nor ONEBOT_WS_URL is")
	}

	others := cfg.telegramToken != "" || cfg.onebotListen != "" || cfg.onebotURL != ""
	switch {
	case strings.EqualFold(cfg.webchatAddr, "off"):
		if !others {
			return config{}, bad(&raw.webchatAddr, `"off" needs another adapter (TELEGRAM_BOT_TOKEN, ONEBOT_WS_LISTEN or ONEBOT_WS_URL)`)
		}
		cfg.webchatAddr = ""
	case cfg.webchatAddr == "":
		return config{}, bad(&raw.webchatAddr, `empty: give host:port, or "off"`)
	default:
		if err := checkAddr(cfg.webchatAddr); err != nil {
			return config{}, bad(&raw.webchatAddr, "%v", err)
		}
	}
	if cfg.metricsAddr != "" && !strings.EqualFold(cfg.metricsAddr, "off") {
		if err := checkAddr(cfg.metricsAddr); err != nil {
			return config{}, bad(&raw.metricsAddr, "%v", err)
		}
	} else {
		cfg.metricsAddr = ""
	}
	return cfg, nil
}

// defaultDataDir returns the per-user state directory for the journal:
// $XDG_STATE_HOME/herald, else ~/.local/state/herald — never the working
// directory.
func defaultDataDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "herald"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", err
		}
	}
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("home directory %q is not absolute", home)
	}
	return filepath.Join(home, ".local", "state", "herald"), nil
}

func lookup(getenv func(string) string, key string) (string, bool) {
	v := getenv(key)
	return v, v != ""
}

// checkURL checks that raw is a URL with a host and one of schemes. Its
// errors show the URL with its password and query values replaced, as
// they may hold a secret (OneBot's ?access_token=), and an unparseable URL
// not at all.
func checkURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("malformed URL (not shown: it may hold a secret)")
	}
	if u.Host == "" {
		return fmt.Errorf("malformed URL %q: no host", shownURL(u))
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return fmt.Errorf("URL %q: port %q is not a number from 0 to 65535", shownURL(u), p)
		}
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return fmt.Errorf("URL %q: scheme must be %s", shownURL(u), strings.Join(schemes, " or "))
}

// shownURL returns u as it may be printed: its password and every query
// value replaced with redact.Placeholder (stricter than redact.URL: any
// query value of a URL a user typed may be a secret).
func shownURL(u *url.URL) string {
	c := *u
	if _, ok := c.User.Password(); ok {
		c.User = url.UserPassword(c.User.Username(), redact.Placeholder)
	}
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			q[k] = []string{redact.Placeholder}
		}
		c.RawQuery = q.Encode()
	}
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", addr)
	}
	if port == "" {
		return errors.New("missing port in " + addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q in %q: want a number from 0 to 65535 or a service's name", port, addr)
	}
	return nil
}
