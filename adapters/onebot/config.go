package onebot

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/platform"
)

// Mode says which side opens the WebSocket connection.
type Mode int

// The connection modes. Both use the implementation's Universal role: events
// and actions share one connection.
const (
	// Reverse: the OneBot implementation dials the adapter ("reverse
	// WebSocket" in its configuration). Several implementations (bot
	// accounts) may be connected at once. This is the zero value.
	Reverse Mode = iota
	// Forward: the adapter dials the implementation's WebSocket server
	// ("forward WebSocket", port 6700 by default) and keeps reconnecting.
	Forward
)

// String returns "reverse" or "forward".
func (m Mode) String() string {
	switch m {
	case Reverse:
		return "reverse"
	case Forward:
		return "forward"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Default values of [Config] fields.
const (
	DefaultPath           = "/onebot/v11/ws"
	DefaultActionTimeout  = 30 * time.Second
	DefaultReconnectMin   = time.Second
	DefaultReconnectMax   = 30 * time.Second
	DefaultPingInterval   = 30 * time.Second
	DefaultWriteTimeout   = 10 * time.Second
	DefaultReadLimit      = 4 << 20
	DefaultMaxConnections = 64
)

// Config configures an [Adapter]. The zero value is a valid configuration
// for a reverse-mode adapter whose [Adapter.Handler] the caller mounts in
// its own HTTP server, with no access token; every field says what its zero
// value means. [New] validates it and returns an error naming the first bad
// field.
type Config struct {
	// Name is the adapter's name ([Adapter.Name]): every event's Platform
	// and the first part of the engine's keys for the adapter's chats,
	// rate limits (engine.WithRateLimit) and journal. Empty means
	// DefaultName, "onebot". Give each adapter its own when one engine
	// runs several (say, one per QQ account in forward mode): they then
	// have separate budgets, queues and keys. 1 to 64 letters, digits,
	// "_", "-" and "." (see [platform.ValidName]).
	Name string

	// Mode selects reverse (zero value) or forward WebSocket.
	Mode Mode

	// Listen is the TCP address Run serves the reverse endpoint on, such as
	// ":6701" or "127.0.0.1:6701", with its own HTTP server. That server
	// is bounded for a listener facing a network: a handshake's request
	// must arrive within 10 s, a keep-alive connection is closed after 30 s
	// idle, and it holds at most MaxConnections + 64 TCP connections
	// (WebSocket connections included), closing the longest idle one to
	// make room, so that a flood of idle connections can neither exhaust
	// the process's file descriptors nor keep an implementation out.
	// Empty means Run serves nothing and the caller mounts
	// [Adapter.Handler] in its own server, which should be bounded the
	// same way. Reverse mode only; it must be empty in forward mode.
	Listen string

	// Path is the URL path Run's server answers on in reverse mode. Empty
	// means DefaultPath ("/onebot/v11/ws"). It must start with "/".
	Path string

	// URL is the implementation's Universal WebSocket endpoint that forward
	// mode dials, such as "ws://127.0.0.1:6700/". Required in forward mode
	// (scheme ws or wss, with a host, without user info); must be empty in
	// reverse mode. It may carry the access token as the access_token
	// query parameter instead of AccessToken: the adapter never logs it,
	// nor puts it in an error, with its secrets (such query parameters, a
	// password) in the clear.
	URL string

	// AccessToken is the shared secret. In reverse mode a connection must
	// present it as "Authorization: Bearer <token>" (or "Token <token>") or
	// as the access_token query parameter: missing gets 401, wrong 403. In
	// forward mode it is sent as "Authorization: Bearer <token>". It is
	// never logged nor put in an error. Empty
	// means no authentication: anyone who can reach the endpoint can act as
	// a bot, so then bind Listen to a loopback address.
	AccessToken string

	// MaxConnections bounds the reverse endpoint's WebSocket connections
	// (bots): those open and those being upgraded. More get 503 Service
	// Unavailable, before the upgrade (an implementation retries later;
	// one that reconnects while its old connection still counts waits
	// until that one is closed). With Listen, Run's server keeps room for
	// 64 more TCP connections (handshakes, refused or idle ones) beyond
	// it, so such a 503 can always be sent. Zero means
	// DefaultMaxConnections (64); negative is invalid. Forward mode has
	// one connection and ignores it.
	MaxConnections int

	// ActionTimeout bounds the wait for the response to one action (a
	// send); the send's context may end it sooner. Zero means
	// DefaultActionTimeout (30s); negative is invalid.
	ActionTimeout time.Duration

	// ReconnectMin and ReconnectMax bound forward mode's reconnect backoff:
	// the wait starts near ReconnectMin, doubles after each failed attempt
	// and is capped at ReconnectMax, each wait jittered between half and all
	// of its size; a connection that stayed up for ReconnectMax resets it.
	// Zero means DefaultReconnectMin (1s) and DefaultReconnectMax (30s);
	// negative values, or a minimum above the maximum, are invalid.
	ReconnectMin, ReconnectMax time.Duration

	// PingInterval is how often the adapter pings each connection. A
	// connection from which nothing (not even a pong) arrives for twice
	// PingInterval is closed. Zero means DefaultPingInterval (30s); negative
	// turns pings and the read deadline off.
	PingInterval time.Duration

	// WriteTimeout bounds writing one frame. Zero means DefaultWriteTimeout
	// (10s); negative is invalid.
	WriteTimeout time.Duration

	// ReadLimit is the largest frame accepted, in bytes; a larger frame
	// closes the connection (WebSocket cannot skip it). Zero means
	// DefaultReadLimit (4 MiB); negative is invalid.
	ReadLimit int64

	// AvoidDuplicates chooses what becomes of a send whose outcome is
	// unknown: at least once (false) or at most once (true). OneBot
	// implementations have answered "failed" for messages they did deliver
	// (go-cqhttp's retcode 100 under risk control), and a send that got no
	// response in time (ActionTimeout, or the send's context ending, as a
	// per-attempt timeout does), or whose connection dropped after its
	// action frame was written, may have been delivered too. Such
	// ambiguous errors always match [platform.ErrMaybeDelivered] (which
	// [ErrMaybeDelivered] is), whatever this setting says.
	//
	// False, the zero value, keeps them retryable, as OneBot v11 has it
	// (only retcodes 1400, 1401, 1403 and 1404 are permanent), and the
	// retry middleware tries them again: at least once. WARNING: such a
	// retry can post a message twice. True also marks them
	// [platform.Permanent], so that they go to the dead letters instead of
	// being retried: at most once, at the risk of giving up on a message
	// that was not delivered after all (check the dead letters, and replay
	// those that never arrived). Choose it when a duplicate is worse than
	// a lost message. The setting means the same as the Telegram adapter's
	// of the same name.
	//
	// Errors that certainly mean "not sent" are unaffected and never match
	// platform.ErrMaybeDelivered: no connection, a connection lost before
	// the action frame was written, a connection too busy to write it, or
	// the send's context ending before then (all retryable), and retcodes
	// 1400, 1401, 1403 and 1404 (permanent).
	AvoidDuplicates bool

	// Limits is the send budget [Adapter.Limits] publishes, which the
	// engine applies to the adapter's sends — replies, dead-letter
	// replays and the backlog of a restart alike — unless configured
	// otherwise (engine.WithRateLimit, which can also turn it off). The
	// zero value means [DefaultLimits], the conservative budget for QQ
	// accounts. Its rates and bursts must not be negative. A budget
	// applies to all the bots (accounts) the adapter serves together:
	// give each account its own adapter (Name) for separate budgets.
	Limits platform.Limits

	// CQCodeText makes Send parse an outbound message's Text as a CQ-code
	// string, so text can carry mentions, faces and other segments: build
	// it with [CQ] and [At], and escape untrusted text with [EscapeText].
	// False (the zero value) sends Text literally, so a user's words echoed
	// back can never turn into CQ codes.
	CQCodeText bool

	// Dialer dials forward mode's connection. Nil means a dialer with a 10s
	// handshake timeout and the environment's proxy settings.
	Dialer *websocket.Dialer

	// HTTPClient fetches the files of received messages for
	// [Adapter.Download]. Nil means a client that gives up on a server
	// that has not answered within 30 s, follows at most 5 redirects
	// (to http and https URLs only), and takes at most 2 minutes per
	// download.
	HTTPClient *http.Client

	// Logger receives connection and protocol diagnostics. Nil means
	// zap.NewNop(). Lines that a peer can cause once per frame, event or
	// request — malformed frames, unknown or skipped events, events
	// dropped once Run takes no more events, refused handshakes, errors of Run's own
	// server — are rate limited: the first of each kind is written at once,
	// later ones within 10 s are counted, and the next one written carries
	// the count in a "suppressed" field. Secrets are never logged.
	Logger *zap.Logger
}

// ErrInvalidConfig is wrapped by [New]'s errors.
var ErrInvalidConfig = errors.New("onebot: invalid config")

// withDefaults validates c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	red := redact.New(c.AccessToken, c.URL)
	bad := func(field, format string, args ...any) (Config, error) {
		// The text may quote URL: keep its secrets out.
		return Config{}, fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, red.String(fmt.Sprintf(format, args...)))
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if !platform.ValidName(c.Name) {
		return bad("Name", "%q is not 1 to 64 letters, digits, _, - and .", c.Name)
	}
	if c.Limits == (platform.Limits{}) {
		c.Limits = DefaultLimits()
	}
	if err := c.Limits.Validate(); err != nil {
		return bad("Limits", "a negative rate or burst (%+v)", c.Limits)
	}
	switch c.Mode {
	case Reverse:
		if c.URL != "" {
			return bad("URL", "set in reverse mode; it is the forward-mode dial address (use Listen)")
		}
	case Forward:
		if c.Listen != "" {
			return bad("Listen", "set in forward mode; forward mode dials URL and serves nothing")
		}
		if c.URL == "" {
			return bad("URL", "required in forward mode (such as ws://127.0.0.1:6700/)")
		}
		u, err := url.Parse(c.URL)
		if err != nil {
			return bad("URL", "%v", err)
		}
		if u.Scheme != "ws" && u.Scheme != "wss" {
			return bad("URL", "scheme %q: want ws or wss", u.Scheme)
		}
		if u.Host == "" {
			return bad("URL", "no host in %q", red.String(redact.URL(c.URL)))
		}
		if u.User != nil {
			// The WebSocket client refuses it on every dial.
			return bad("URL", "user info in %q: a WebSocket URL cannot carry it (set AccessToken)", red.String(redact.URL(c.URL)))
		}
	default:
		return bad("Mode", "unknown mode %d", int(c.Mode))
	}
	if c.Path == "" {
		c.Path = DefaultPath
	}
	if !strings.HasPrefix(c.Path, "/") {
		return bad("Path", "%q does not start with /", c.Path)
	}
	if c.MaxConnections < 0 {
		return bad("MaxConnections", "negative (%d)", c.MaxConnections)
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.ActionTimeout < 0 {
		return bad("ActionTimeout", "negative (%v)", c.ActionTimeout)
	}
	if c.ActionTimeout == 0 {
		c.ActionTimeout = DefaultActionTimeout
	}
	if c.ReconnectMin < 0 || c.ReconnectMax < 0 {
		return bad("ReconnectMin/ReconnectMax", "negative (%v, %v)", c.ReconnectMin, c.ReconnectMax)
	}
	if c.ReconnectMin == 0 {
		c.ReconnectMin = DefaultReconnectMin
		if c.ReconnectMax != 0 {
			c.ReconnectMin = min(c.ReconnectMin, c.ReconnectMax)
		}
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = max(DefaultReconnectMax, c.ReconnectMin)
	}
	if c.ReconnectMin > c.ReconnectMax {
		return bad("ReconnectMin", "%v is above ReconnectMax %v", c.ReconnectMin, c.ReconnectMax)
	}
	if c.PingInterval == 0 {
		c.PingInterval = DefaultPingInterval
	}
	if c.WriteTimeout < 0 {
		return bad("WriteTimeout", "negative (%v)", c.WriteTimeout)
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.ReadLimit < 0 {
		return bad("ReadLimit", "negative (%d)", c.ReadLimit)
	}
	if c.ReadLimit == 0 {
		c.ReadLimit = DefaultReadLimit
	}
	if c.Dialer == nil {
		c.Dialer = &websocket.Dialer{
			Proxy:            websocket.DefaultDialer.Proxy,
			HandshakeTimeout: 10 * time.Second,
		}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = defaultHTTPClient()
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c, nil
}
