package telegram

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/platform"
)

// Mode says how an [Adapter] receives updates. The zero value, "", means
// [Polling]. Mode is a string so it can come straight from configuration:
// Mode("webhook") is [Webhook].
type Mode string

// The ways of receiving updates.
const (
	// Polling asks Telegram for updates with long-polling getUpdates calls.
	// It needs no public address and is the default.
	Polling Mode = "polling"
	// Webhook lets Telegram POST each update to a public HTTPS URL.
	Webhook Mode = "webhook"
)

// DefaultPollTimeout is how long one getUpdates call waits for an update
// when [Config.PollTimeout] is zero.
const DefaultPollTimeout = 30 * time.Second

// Config configures an [Adapter]. Only Token is required: the zero value of
// every other field means the documented default, so the zero Config is
// invalid only for lack of a token. New copies it, AllowedUpdates
// included, so changing a Config afterwards does not affect the adapter;
// the HTTPClient and Logger it points to are shared and must be safe for
// concurrent use, as http.Client and zap.Logger are.
type Config struct {
	// Name is the adapter's name ([Adapter.Name]): every event's Platform
	// and the first part of the engine's keys for the bot's chats, rate
	// limits (engine.WithRateLimit) and journal. Empty means DefaultName,
	// "telegram". Give each bot its own when one engine runs several:
	// they then have separate budgets, queues and keys. 1 to 64 letters,
	// digits, "_", "-" and "." (no ":", which separates a key's parts).
	Name string

	// Username is the bot's username, without "@", for commands addressed
	// to it ("/start@herald_bot"). Run learns it from getMe and needs none;
	// a listening Run (platform.Inbound Listen), which never calls
	// Telegram, uses it (or the one an earlier Run of the Adapter learned).
	// Empty
	// there means such commands reach the handlers as written.
	Username string

	// Token is the bot's token from @BotFather, such as
	// "123456:AAE-x_yz": digits, a colon, then letters, digits, "_" and
	// "-" (New refuses anything else, so the token needs no escaping in a
	// URL). It is required. It is part of every request URL and never
	// appears in the adapter's errors or log lines.
	Token string

	// APIEndpoint is the Bot API URL as a format with two %s verbs, the
	// token and then the method, like tgbotapi.APIEndpoint
	// ("https://api.telegram.org/bot%s/%s"), which is what empty means.
	// Point it at a local Bot API server, or at a telegramtest.Server's
	// Endpoint in tests.
	APIEndpoint string

	// FileEndpoint is the URL of the files getFile names, as a format with
	// two %s verbs, the token and then the file_path, like
	// tgbotapi.FileEndpoint ("https://api.telegram.org/file/bot%s/%s").
	// Empty means APIEndpoint with its "/bot%s/" replaced by
	// "/file/bot%s/", which is the Bot API's own layout and a
	// telegramtest.Server's; with an APIEndpoint of another form,
	// [Adapter.Download] then fails. A local Bot API server in --local
	// mode gives absolute paths on its own disk instead, which the adapter
	// does not read.
	FileEndpoint string

	// Mode says how updates arrive: [Polling] (what empty means) or
	// [Webhook].
	Mode Mode

	// PollTimeout is how long one long-polling getUpdates call waits for an
	// update before Telegram answers with none. Zero means
	// [DefaultPollTimeout] (30 s); it is rounded down to whole seconds, and
	// values under a second mean one second. Negative values are invalid.
	// Unused in Webhook mode.
	PollTimeout time.Duration

	// AllowedUpdates lists the update types to receive, such as "message"
	// and "callback_query", for getUpdates and setWebhook. Nil means every
	// type of Bot API 10.2 ([UpdateTypes]), chat_member, message_reaction
	// and message_reaction_count included, which Telegram sends only when
	// asked (reactions only to a bot that is an administrator). An empty,
	// non-nil list is sent as it is, which Telegram reads as its own
	// default: every type but those three.
	AllowedUpdates []string

	// Webhook configures Webhook mode; it is unused in Polling mode.
	Webhook WebhookConfig

	// HTTPClient sends every request. Nil means a client of the adapter's
	// own, with no Timeout (each request is bounded by its context: Send's
	// ctx; for getUpdates, PollTimeout plus a grace period), whose
	// transport keeps MaxIdleConns idle connections to the Bot API for
	// reuse, dials within 10 s, completes a TLS handshake within 10 s and
	// waits for a response's header at most PollTimeout plus 15 s (so
	// long polls are never cut), uses HTTP/2 where the server offers it,
	// and takes proxies from the environment (HTTPS_PROXY, NO_PROXY), as
	// http.DefaultTransport does. A client with a Timeout must allow more
	// than PollTimeout in Polling mode, or New fails.
	HTTPClient *http.Client

	// MaxIdleConns is how many idle connections to the Bot API the
	// adapter's own client (HTTPClient nil) keeps open for reuse. Zero
	// means [DefaultMaxIdleConns] (514: the 512 sends Herald's dispatcher
	// runs at once by default, its MaxInflight, plus the long poll and a
	// callback answer). Over HTTP/1.1 (a local Bot API server, or a proxy
	// speaking it) each request in flight needs a connection of its own,
	// and one the transport cannot keep idle is closed, so the next send
	// opens another: with http.DefaultTransport's 2 per host, 52,000
	// replies opened about 45,000 connections. Raise it with the
	// dispatcher's MaxInflight. Over HTTP/2 (api.telegram.org) one
	// connection carries many requests, and the setting matters little.
	// Negative values are invalid; it is unused with HTTPClient.
	MaxIdleConns int

	// Logger receives the adapter's log lines. Nil means zap.NewNop().
	// Lines that could repeat for every update, request or send (a refused
	// or malformed update, a wrong secret, a retried part) are written at
	// most once per message every 10 s, the next one counting those left
	// out in a "suppressed" field.
	Logger *zap.Logger

	// AvoidDuplicates makes sends whose outcome is unknown fail for good
	// instead of being retried. A sendMessage (sendPhoto, sendDocument)
	// whose request was written and then got no answer — the connection
	// was reset, the answer did not come before the attempt's deadline —
	// or got a 5xx or an answer that is not Bot API JSON (a proxy's error
	// page) may have been delivered: a proxy that resets connections right
	// after the Bot API accepted a message makes every retry a duplicate.
	// Such errors always match [platform.ErrMaybeDelivered].
	//
	// False, the zero value, keeps them retryable: Herald's retry
	// middleware sends the message again, so it is delivered at least once,
	// possibly twice. True marks them [platform.Permanent], so they go to
	// the dead letters instead: delivered at most once, at the risk of
	// giving up on a message that did not arrive after all. Choose it when
	// a duplicate is worse than a lost message.
	//
	// Failures that surely mean "not sent" are unaffected and stay
	// retryable: a refused dial, a name that does not resolve, a context
	// that ended or a connection that broke before the request was
	// written; so are Telegram's own refusals (429 retry-after, other 4xx
	// permanent). Edits are never ambiguous: an edit that is repeated
	// answers "message is not modified", which is success, so their
	// errors keep their kinds. The parts after the first of a long message
	// fail permanently either way (see [Adapter.Send]); with
	// AvoidDuplicates, an ambiguous failure of one is not retried in place
	// either.
	AvoidDuplicates bool

	// NoDrafts makes streamed replies ([platform.Stream]) to private chats
	// show as a message that is edited, as in groups, instead of a message
	// draft (sendMessageDraft) followed by the final message. The adapter
	// falls back to edits by itself when Telegram refuses a draft.
	NoDrafts bool

	// NoCommandMenu makes [Adapter.SetCommands] do nothing, so the
	// engine's call at start leaves the bot's commands menu as it is (set
	// with @BotFather, say).
	NoCommandMenu bool

	// Limits, if not nil, is the send budget [Adapter.Limits] publishes
	// instead of Telegram's, which the engine applies to the adapter's
	// sends unless configured otherwise (engine.WithRateLimit). A bot's
	// tests against the fake Bot API of package telegramtest, which has
	// no budget unless asked, set &platform.Limits{} (none) to run at full
	// speed. Its rates and bursts must not be negative.
	Limits *platform.Limits
}

// WebhookConfig configures Webhook mode, as part of a [Config], which New
// copies. Its zero value serves nothing, registers nothing, checks no
// secret and means one connection: the handler from
// [Adapter.WebhookHandler] must then be mounted elsewhere and the webhook
// registered some other way.
type WebhookConfig struct {
	// Listen is the TCP address a run ([Adapter.Run])
	// serves the webhook on with its own http.Server, such as ":8443" or
	// "127.0.0.1:8080". Empty means the run serves nothing: mount
	// [Adapter.WebhookHandler] in a server of your own. The run serves
	// plain HTTP; Telegram needs HTTPS, so put a TLS terminating proxy in
	// front. The server gives a request's header 10 s and the whole
	// request 10 s, closes keep-alive connections idle for 60 s and keeps
	// at most 256 connections open, closing the one idle longest to make
	// room for a new one.
	Listen string

	// Path is the URL path the run's server answers updates on. Empty means
	// "/". It must start with "/".
	Path string

	// SecretToken is sent to setWebhook as secret_token; Telegram then puts
	// it in the X-Telegram-Bot-Api-Secret-Token header of every update, and
	// requests without it are refused with 403. 1 to 256 characters of
	// A-Z, a-z, 0-9, "_" and "-". Empty means requests are not checked
	// (not recommended: anyone who finds the URL can inject updates). It
	// never appears in the adapter's errors or log lines ("<secret>"
	// replaces it), so it should be long and random: a short one would
	// mangle log text that happens to contain it.
	SecretToken string

	// URL is the public HTTPS URL Telegram posts updates to; a run
	// registers it with setWebhook before waiting for updates. Empty means
	// the run does not call setWebhook: the webhook is registered some
	// other way.
	URL string

	// MaxConnections is sent to setWebhook as max_connections: how many
	// requests Telegram makes to the webhook at once, 1 to 100. Zero means
	// 1 (Telegram's own default is 40): Telegram then sends one update at
	// a time and the next only after the previous was answered, so the
	// adapter hands updates on in the order Telegram has them, each chat's
	// in order. A larger value lets a busy bot receive faster, but updates
	// then arrive in parallel and Telegram does not document that a
	// chat's updates are kept in order, so a chat's messages may reach
	// handlers out of order. Unused when URL is empty.
	MaxConnections int
}

// DefaultMaxIdleConns is the idle connections the adapter's own HTTP
// client keeps when [Config.MaxIdleConns] is zero: the 512 sends Herald's
// dispatcher runs at once by default, plus the long poll and a callback
// answer.
const DefaultMaxIdleConns = 512 + 2

// The adapter's own HTTP client's transport bounds; see [Config.HTTPClient].
const (
	dialTimeout         = 10 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	dialKeepAlive       = 30 * time.Second
	// idleConnTimeout closes a connection idle that long, before a server
	// is likely to (nginx, in front of api.telegram.org, keeps them 75 s
	// by default): reusing one the server is closing fails after the
	// request was written, an ambiguous failure.
	idleConnTimeout = 60 * time.Second
)

// newHTTPClient returns the adapter's own HTTP client: see
// [Config.HTTPClient].
func newHTTPClient(pollTimeout time.Duration, maxIdle int) *http.Client {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   maxIdle,
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: pollTimeout + pollGrace,
		ExpectContinueTimeout: time.Second,
	}}
}

// maxWebhookConnections is the most max_connections setWebhook accepts.
const maxWebhookConnections = 100

// usernamePattern is the form of a bot's username.
var usernamePattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// tokenPattern is the form of a bot token.
var tokenPattern = regexp.MustCompile(`^[0-9]+:[A-Za-z0-9_-]+$`)

// pollGrace is added to the poll timeout to bound one getUpdates request.
const pollGrace = 15 * time.Second

// withDefaults checks cfg and fills in its defaults. Its errors never contain
// the token.
func (cfg Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		// The values quoted may hold the token or the secret (an endpoint
		// or URL with the token in it): redact them.
		msg := redact.New(cfg.Token, cfg.Webhook.SecretToken).String(fmt.Sprintf(format, args...))
		return Config{}, fmt.Errorf("%w: %s", ErrInvalidConfig, msg)
	}
	if cfg.Token == "" {
		return bad("no token")
	}
	if !tokenPattern.MatchString(cfg.Token) {
		return bad("the token is not of the form @BotFather gives: digits, a colon, then letters, digits, _ and -")
	}
	if cfg.APIEndpoint == "" {
		cfg.APIEndpoint = tgbotapi.APIEndpoint
	}
	if strings.Count(cfg.APIEndpoint, "%s") != 2 || strings.Count(cfg.APIEndpoint, "%") != 2 {
		return bad("APIEndpoint %q must have exactly two %%s verbs (token, method)", cfg.APIEndpoint)
	}
	if u, err := url.Parse(fmt.Sprintf(cfg.APIEndpoint, "token", "method")); err != nil ||
		(u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("APIEndpoint %q is not an http or https URL format", cfg.APIEndpoint)
	}
	if _, err := url.Parse(fmt.Sprintf(cfg.APIEndpoint, cfg.Token, "method")); err != nil {
		// The token where the format puts it (a host's label, say) breaks
		// the URL: every request would fail. The error quotes the token.
		return bad("APIEndpoint %q makes no URL with the token in it", cfg.APIEndpoint)
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if !platform.ValidName(cfg.Name) {
		return bad("name %q is not 1 to 64 letters, digits, _, - and .", cfg.Name)
	}
	if cfg.Username = strings.TrimPrefix(cfg.Username, "@"); cfg.Username != "" && !usernamePattern.MatchString(cfg.Username) {
		return bad("username %q is not 1 to 64 letters, digits and _", cfg.Username)
	}
	if cfg.FileEndpoint == "" && strings.Contains(cfg.APIEndpoint, "/bot%s/") {
		cfg.FileEndpoint = strings.Replace(cfg.APIEndpoint, "/bot%s/", "/file/bot%s/", 1)
	}
	if cfg.FileEndpoint != "" {
		if strings.Count(cfg.FileEndpoint, "%s") != 2 || strings.Count(cfg.FileEndpoint, "%") != 2 {
			return bad("FileEndpoint %q must have exactly two %%s verbs (token, file path)", cfg.FileEndpoint)
		}
		if u, err := url.Parse(fmt.Sprintf(cfg.FileEndpoint, "token", "path")); err != nil ||
			(u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("FileEndpoint %q is not an http or https URL format", cfg.FileEndpoint)
		}
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = Polling
	case Polling, Webhook:
	default:
		return bad("unknown mode %q", cfg.Mode)
	}
	switch {
	case cfg.PollTimeout < 0:
		return bad("negative PollTimeout %v", cfg.PollTimeout)
	case cfg.PollTimeout == 0:
		cfg.PollTimeout = DefaultPollTimeout
	case cfg.PollTimeout < time.Second:
		cfg.PollTimeout = time.Second
	}
	if cfg.Limits != nil {
		if err := cfg.Limits.Validate(); err != nil {
			return bad("Limits: %v", err)
		}
	}
	cfg.PollTimeout = cfg.PollTimeout.Truncate(time.Second)
	cfg.AllowedUpdates = slices.Clone(cfg.AllowedUpdates) // nil stays nil
	if cfg.Webhook.Path == "" {
		cfg.Webhook.Path = "/"
	}
	if !strings.HasPrefix(cfg.Webhook.Path, "/") {
		return bad("webhook path %q does not start with /", cfg.Webhook.Path)
	}
	if s := cfg.Webhook.SecretToken; s != "" && !validSecret(s) {
		return bad("webhook secret token must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
	}
	switch n := cfg.Webhook.MaxConnections; {
	case n == 0:
		cfg.Webhook.MaxConnections = 1
	case n < 0 || n > maxWebhookConnections:
		return bad("webhook MaxConnections %d is not between 1 and %d", n, maxWebhookConnections)
	}
	if cfg.Webhook.URL != "" {
		u, err := url.Parse(cfg.Webhook.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return bad("webhook URL %q is not an https URL", cfg.Webhook.URL)
		}
	}
	switch {
	case cfg.MaxIdleConns < 0:
		return bad("negative MaxIdleConns %d", cfg.MaxIdleConns)
	case cfg.MaxIdleConns == 0:
		cfg.MaxIdleConns = DefaultMaxIdleConns
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newHTTPClient(cfg.PollTimeout, cfg.MaxIdleConns)
	}
	if t := cfg.HTTPClient.Timeout; cfg.Mode == Polling && t > 0 && t <= cfg.PollTimeout {
		return bad("HTTPClient.Timeout %v must exceed PollTimeout %v, or long polls fail", t, cfg.PollTimeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return cfg, nil
}

func validSecret(s string) bool {
	if len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
