package webchat

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Defaults of [Config]'s zero fields.
const (
	DefaultAddr            = "127.0.0.1:8080"
	DefaultBotName         = "Herald"
	DefaultHistorySize     = 200
	DefaultHistoryBytes    = 4 << 20
	DefaultMaxHistoryBytes = 128 << 20
	DefaultMaxChats        = 1000
	DefaultMaxConnections  = 256
	DefaultQueueSize       = 256
	DefaultQueueBytes      = 8 << 20
	DefaultEventBuffer     = 256
	DefaultReadLimit       = 64 << 10
	DefaultPingInterval    = 30 * time.Second
	DefaultPongWait        = 60 * time.Second
	DefaultWriteTimeout    = 10 * time.Second
	DefaultMaxUpload       = 4 << 20
	DefaultUploadBytes     = 64 << 20
	DefaultUploadSlots     = 4
	DefaultUploadStall     = 5 * time.Second
)

// ErrInvalidConfig is wrapped by the errors [New] returns for a Config it
// cannot use.
var ErrInvalidConfig = errors.New("webchat: invalid config")

// Config configures an [Adapter]. The zero value is a valid configuration:
// a chat on http://127.0.0.1:8080/ with the defaults below. Negative numbers
// and durations are refused by [New].
type Config struct {
	// Addr is the TCP address Run listens on, in the form "host:port".
	// Empty means DefaultAddr, "127.0.0.1:8080": only this machine can
	// connect, and requests must name a loopback host (see
	// AllowedOrigins). A port of 0 picks a free port ("127.0.0.1:0");
	// [Adapter.Addr] tells which once [Adapter.Ready] is closed. Addr is
	// unused when NoServer is set.
	Addr string

	// NoServer makes Run start no HTTP server of its own: mount
	// [Adapter.Handler] on a server of yours, and Run only delivers the
	// events of its connections until its context ends. False, the zero
	// value, means Run serves Handler on Addr. Your server's own bounds
	// (header, read and idle timeouts, a cap on connections) then apply
	// instead of Run's; the adapter still bounds the tabs
	// (MaxConnections, QueueSize, QueueBytes, WriteTimeout), and each
	// one's kernel send buffer when the server hands the handler plain
	// TCP connections (an http.Server without TLS does).
	NoServer bool

	// Logger receives the adapter's logs. What a tab or request can
	// repeat at will (bad frames, refusals) is logged rate-limited, once
	// per kind and 10 s with a count of the lines left out (see the
	// package doc). Nil means zap.NewNop().
	Logger *zap.Logger

	// BotName is the name the page shows for the bot's messages. Empty
	// means DefaultBotName, "Herald".
	BotName string

	// AllowedOrigins lists the browser origins ("scheme://host[:port]",
	// compared without regard to case) whose pages may open the
	// WebSocket, besides the page's own origin; "*" allows every origin.
	// Nil or empty means the page's own origin only (the Origin header's
	// host must equal the request's Host), which is what the embedded page
	// needs. Connections from other origins get 403.
	//
	// The host names of these origins are also the only names, besides
	// localhost and loopback IP addresses, that a request arriving on a
	// loopback address may give as its Host; others get 403, against DNS
	// rebinding (see the package doc's Security section). So behind a
	// proxy that passes a public name on to a loopback Addr, list the
	// public origin. "*" turns this Host check off too.
	AllowedOrigins []string

	// HistorySize is the number of messages kept per chat and sent to a
	// tab when it connects; older ones are dropped. Zero means
	// DefaultHistorySize, 200.
	HistorySize int

	// HistoryBytes bounds the bytes of each chat's history: messages are
	// kept as the page receives them (JSON, with the bytes of attachments
	// of at most 32 KiB as base64; larger files are kept in the adapter's
	// file store, bounded by UploadBytes, and a message holds only a
	// reference to them), and the oldest are dropped while a chat's
	// messages together are larger. A message larger than HistoryBytes (or
	// MaxHistoryBytes) on its own reaches the open tabs but is not kept,
	// so its buttons do not work and a reload does not show it; so does
	// an edit that makes a kept message that large, which takes the
	// message out of the history. An edited message counts with its new
	// size. Zero means DefaultHistoryBytes, 4 MiB.
	HistoryBytes int

	// MaxHistoryBytes bounds the bytes of all chats' histories together.
	// Past it, the least recently used chats with no open tab are
	// forgotten, and then, if need be, the oldest messages of the chats
	// with open tabs are dropped. Zero means DefaultMaxHistoryBytes,
	// 128 MiB.
	MaxHistoryBytes int

	// MaxChats bounds the number of chats whose history is kept; past it,
	// the least recently used chat with no open tab is forgotten. Zero
	// means DefaultMaxChats, 1000.
	MaxChats int

	// MaxConnections bounds the number of open tabs (WebSocket
	// connections, upgrades in progress included). A tab over it is
	// refused with a WebSocket that is closed at once with status 1013
	// (try again later) and a reason, which the page shows while it
	// retries; an HTTP error status would be hidden from the page's
	// script.
	//
	// The server Run starts holds at most MaxConnections + 32
	// connections in all: the tabs, and room for loading the page,
	// refused tabs and keep-alive connections. When a connection arrives
	// at that cap, the one that has waited longest without a request in
	// progress (idle after one, or not having sent one) is closed to
	// make room, so a flood of idle connections cannot shut tabs out.
	// Zero means DefaultMaxConnections, 256.
	MaxConnections int

	// QueueSize is the number of frames that may wait to be written to
	// one tab. A tab whose queue is full is disconnected (it reconnects
	// and reloads the history) so that a slow tab never blocks a send.
	// Zero means DefaultQueueSize, 256.
	QueueSize int

	// QueueBytes bounds the bytes of the frames waiting to be written to
	// one tab, the one being written included; a frame that would take a
	// tab past it disconnects the tab, as a full QueueSize does. A frame
	// is always accepted into an empty queue, however large, so that a
	// big history or message can reach a tab that keeps up. The bytes
	// counted are often shared: a message sent to a chat is one frame
	// for all its tabs, and a history frame is made of the chat's kept
	// messages, not a copy of them. Zero means DefaultQueueBytes, 8 MiB.
	QueueBytes int

	// EventBuffer is the number of inbound events that may wait for Run to
	// hand them to its handle func; when it is full, a tab's message is
	// refused with a "busy" error frame. Zero means DefaultEventBuffer,
	// 256.
	EventBuffer int

	// ReadLimit is the largest frame, in bytes, accepted from a tab; a
	// larger frame closes the connection with status 1009. Zero means
	// DefaultReadLimit, 64 KiB.
	ReadLimit int64

	// NoUploads turns off users' files: the page shows no button to
	// attach one, and a file frame is refused. False, the zero value,
	// lets users send files (see MaxUpload).
	NoUploads bool

	// MaxUpload is the largest file, in bytes, a user may send from the
	// page. A file frame may be that large (base64, about 4/3 of it, and
	// 128 KiB more) although ReadLimit is smaller. A frame over ReadLimit
	// is read as it arrives, its base64 decoded straight into room
	// reserved for it in the file store (MaxUpload bytes, within
	// UploadBytes), so it is never held whole; at most UploadSlots are
	// read at once, whatever the number of tabs, and each must come whole
	// within PongWait of taking its slot and never stall for longer than
	// UploadStall. A tab whose frame waits for a slot, or for room, longer
	// than PongWait, or whose frame stalls or comes too slowly, is
	// disconnected (the page reconnects; the file is not sent). Zero means
	// DefaultMaxUpload, 4 MiB.
	MaxUpload int

	// UploadBytes bounds the memory of the adapter's file store, all
	// chats together: the files users sent, kept for [Adapter.Download],
	// for sending them again by FileID and for showing them; the bot's
	// files larger than 32 KiB, kept for the chat's tabs to fetch; the
	// room reserved for the files being read from tabs (MaxUpload each);
	// and the bytes of forgotten files that a tab is still fetching.
	// Keeping a file or reserving room forgets the oldest files, past
	// UploadBytes or 10,000 files, and a download or send of a forgotten
	// user's file fails for good, while the messages that showed a
	// forgotten file keep their place with the file gone. Files over
	// 32 KiB are kept on disk once read (see FileDir), and the room of a
	// file being read is outside the Go heap (on Unix), so the store
	// costs the process at most its reservations in memory, not its
	// files, nor the twice as much the garbage collector lets a heap grow
	// to. Zero means DefaultUploadBytes, 64 MiB; it must be at least
	// MaxUpload.
	UploadBytes int

	// FileDir is the directory where the file store writes each file over
	// 32 KiB it keeps: a file of its own, removed from the directory as
	// soon as it is made, so the bytes are reachable only by the adapter,
	// are freed when forgotten or when the process ends (a crash
	// included), and never fill memory; the kernel's page cache keeps
	// what it can spare of them. The directory holds at most UploadBytes
	// of such files. Where a file cannot be written there (a full disk),
	// it is kept in memory, and the failure logged; on systems other
	// than Unix, files are always kept in memory. Empty means
	// os.TempDir() — where that is a tmpfs, which lives in memory, set a
	// directory on disk; a directory that is set must exist.
	FileDir string

	// UploadSlots is the number of frames over ReadLimit (files) read at
	// once across all tabs. Zero means DefaultUploadSlots, 4.
	UploadSlots int

	// UploadStall is the longest a frame over ReadLimit may go without
	// bringing more of itself while it holds an upload slot: a tab that
	// stops sending in the middle of a file is disconnected once it has
	// been silent for UploadStall, and its slot goes to the next file.
	// Zero means DefaultUploadStall, 5s.
	UploadStall time.Duration

	// PingInterval is how often the server pings each tab. Zero means
	// DefaultPingInterval, 30s. It must be shorter than PongWait.
	PingInterval time.Duration

	// PongWait is how long a connection may stay silent (no pong, no
	// frame) before it is closed. Zero means DefaultPongWait, 60s.
	PongWait time.Duration

	// WriteTimeout bounds each write to a tab: a frame is handed to the
	// socket in pieces of at most 32 KiB, and a tab that has not taken a
	// piece (or a ping) within WriteTimeout — it does not read, or its
	// network is gone — is closed, and its connection reset so that the
	// kernel drops what it still held for it. A tab that takes a long
	// history steadily may need longer in all. A file a tab fetches is
	// written the same way, each piece within WriteTimeout (and the whole
	// within 2 minutes). WriteTimeout also bounds the WebSocket handshake,
	// the writing of each other HTTP response of the server Run starts,
	// and the flush of a tab's queue when Run shuts down. Zero means
	// DefaultWriteTimeout, 10s.
	WriteTimeout time.Duration
}

// withDefaults returns c with its zero fields set to their defaults, or an
// error wrapping ErrInvalidConfig.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	setInt := func(v *int, def int, name string) {
		switch {
		case *v < 0:
			bad("%s is negative (%d)", name, *v)
		case *v == 0:
			*v = def
		}
	}
	setDur := func(v *time.Duration, def time.Duration, name string) {
		switch {
		case *v < 0:
			bad("%s is negative (%v)", name, *v)
		case *v == 0:
			*v = def
		}
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.BotName = cleanName(c.BotName); c.BotName == "" {
		c.BotName = DefaultBotName
	}
	setInt(&c.HistorySize, DefaultHistorySize, "HistorySize")
	setInt(&c.HistoryBytes, DefaultHistoryBytes, "HistoryBytes")
	setInt(&c.MaxHistoryBytes, DefaultMaxHistoryBytes, "MaxHistoryBytes")
	setInt(&c.MaxChats, DefaultMaxChats, "MaxChats")
	setInt(&c.MaxConnections, DefaultMaxConnections, "MaxConnections")
	setInt(&c.QueueSize, DefaultQueueSize, "QueueSize")
	setInt(&c.QueueBytes, DefaultQueueBytes, "QueueBytes")
	setInt(&c.EventBuffer, DefaultEventBuffer, "EventBuffer")
	switch {
	case c.ReadLimit < 0:
		bad("ReadLimit is negative (%d)", c.ReadLimit)
	case c.ReadLimit == 0:
		c.ReadLimit = DefaultReadLimit
	}
	setInt(&c.MaxUpload, DefaultMaxUpload, "MaxUpload")
	setInt(&c.UploadBytes, DefaultUploadBytes, "UploadBytes")
	setInt(&c.UploadSlots, DefaultUploadSlots, "UploadSlots")
	if c.UploadBytes < c.MaxUpload {
		bad("UploadBytes (%d) is less than MaxUpload (%d)", c.UploadBytes, c.MaxUpload)
	}
	if c.FileDir != "" {
		if st, err := os.Stat(c.FileDir); err != nil || !st.IsDir() {
			bad("FileDir %q is not a directory", c.FileDir)
		}
	}
	setDur(&c.PingInterval, DefaultPingInterval, "PingInterval")
	setDur(&c.PongWait, DefaultPongWait, "PongWait")
	setDur(&c.WriteTimeout, DefaultWriteTimeout, "WriteTimeout")
	setDur(&c.UploadStall, DefaultUploadStall, "UploadStall")
	if c.PingInterval > 0 && c.PongWait > 0 && c.PingInterval >= c.PongWait {
		bad("PingInterval (%v) must be shorter than PongWait (%v)", c.PingInterval, c.PongWait)
	}
	origins := make([]string, 0, len(c.AllowedOrigins))
	for _, o := range c.AllowedOrigins {
		norm, err := normalizeOrigin(o)
		if err != nil {
			bad("AllowedOrigins: %v", err)
			continue
		}
		origins = append(origins, norm)
	}
	c.AllowedOrigins = origins
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// normalizeOrigin checks an AllowedOrigins entry and returns it in lower
// case without a trailing slash.
func normalizeOrigin(o string) (string, error) {
	if o == "*" {
		return o, nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q is not an origin like \"http://host:port\"", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}
