package webchat

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/httpserve"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/internal/runid"
	"github.com/heraldbot/herald/platform"
)

// Bounds of the server Run starts (see Run).
const (
	// headerTimeout bounds reading a request's header.
	headerTimeout = 10 * time.Second
	// readTimeout bounds reading a whole request; the page sends no
	// request bodies.
	readTimeout = 10 * time.Second
	// idleTimeout closes idle keep-alive connections. The page needs none
	// once it has loaded.
	idleTimeout = time.Minute
	// httpHeadroom is the connections the server holds beyond
	// Config.MaxConnections tabs: loading the page (a browser opens up to
	// six connections per host), a refused tab, keep-alive connections
	// (closed first when the cap is reached).
	httpHeadroom = 32
)

// DefaultName is the adapter's [Adapter.Name] and the Platform of its
// events.
const DefaultName = "webchat"

// Errors of the adapter. Send errors wrap ErrNoConnection (retryable) or
// ErrInvalidChatID (marked [platform.Permanent]).
var (
	// ErrNoConnection means the target chat has no open tab, so the
	// message was not accepted. It is not permanent: the tab may be
	// reloading, and a retry a moment later succeeds.
	ErrNoConnection = errors.New("webchat: no open tab for this chat")

	// ErrInvalidChatID means the target chat ID cannot name a web chat
	// (see the package doc for the forms of IDs).
	ErrInvalidChatID = errors.New("webchat: invalid chat ID")

	// ErrAlreadyRunning is returned by a second call of Run. It is
	// [platform.ErrAlreadyRunning].
	ErrAlreadyRunning = platform.ErrAlreadyRunning
)

// RoomChatID returns the ID of the group chat that tabs opened with
// ?room=room join, for sending to a room the bot has not heard from.
func RoomChatID(room string) string { return roomPrefix + room }

// Adapter is the local browser chat; see the package doc. Create one with
// [New]; the zero value is not usable. Its methods are safe for concurrent
// use.
//
// The memory of the files an Adapter keeps (see [Config.UploadBytes]) is
// given back when the Adapter is garbage collected.
//
// An Adapter runs once: [Adapter.Run] serves the page and delivers events
// until its context ends, and a later Run returns ErrAlreadyRunning (unless
// the earlier one failed to listen). The [platform.Sender] from
// [Adapter.Sender] works before, during and after Run; without open tabs
// it fails with ErrNoConnection.
type Adapter struct {
	cfg      Config
	log      *zap.Logger
	rlog     *ratelog.Logger // log for what a tab or request can repeat
	handler  http.Handler
	upgrader websocket.Upgrader
	guard    *guard
	events   chan platform.Event
	ready    chan struct{}
	msgSeq   atomic.Uint64 // last message ID given out
	// receiving is Run's Inbound.Receiving: closed, the adapter takes no
	// more events (see taking).
	receiving atomic.Pointer[<-chan struct{}]
	conns     sync.WaitGroup

	runMu   sync.Mutex // serialises the start of Run
	started bool

	mu      sync.Mutex        // guards the fields below, chats and every conn's session state
	active  bool              // Run is delivering events; tabs may connect
	addr    string            // listening address while Run serves
	srv     *httpserve.Server // Run's server while it serves
	tcp     *tcpListener      // its listener
	open    map[*conn]struct{}
	pending int // connections being upgraded
	eventID uint64
	run     string // a token of the adapter, before eventID in IDs
	chats   *chats

	presses  presses          // button presses waiting for an answer
	fileKeys map[string]*conn // the open tabs by the key they fetch files with
	files    *fileStore       // the files kept by reference
	slots    chan struct{}    // upload slots: a frame over ReadLimit is being read
	fetches  chan struct{}    // fetch slots: a file is being sent to a tab
}

// New returns an Adapter for cfg, or an error wrapping ErrInvalidConfig
// when a field is out of range.
func New(cfg Config) (*Adapter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	zl := cfg.Logger.With(zap.String("platform", DefaultName))
	a := &Adapter{
		run:    runid.New(),
		cfg:    cfg,
		log:    zl,
		rlog:   ratelog.New(zl, 0),
		events: make(chan platform.Event, cfg.EventBuffer),
		ready:  make(chan struct{}),
		open:   make(map[*conn]struct{}),
		chats: newChats(historyLimits{
			MaxChats:        cfg.MaxChats,
			HistorySize:     cfg.HistorySize,
			HistoryBytes:    cfg.HistoryBytes,
			MaxHistoryBytes: cfg.MaxHistoryBytes,
		}),
		guard:    newGuard(cfg.AllowedOrigins),
		fileKeys: make(map[string]*conn),
		files:    newFileStore(cfg.UploadBytes),
		slots:    make(chan struct{}, cfg.UploadSlots),
		fetches:  make(chan struct{}, fileFetchSlots),
	}
	a.upgrader = websocket.Upgrader{
		HandshakeTimeout: cfg.WriteTimeout,
		CheckOrigin:      a.checkOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			a.rlog.Warn("webchat: websocket handshake refused",
				zap.Int("status", status), zap.String("remote", r.RemoteAddr), zap.Error(reason))
			http.Error(w, "webchat: "+http.StatusText(status), status)
		},
	}
	a.files.dir = cfg.FileDir
	a.files.diskFailed = func(err error) {
		a.rlog.Warn("webchat: cannot write a file to disk; keeping it in memory", zap.String("dir", cfg.FileDir), zap.Error(err))
	}
	a.handler = a.hostGuard(a.newHandler())
	// The files kept off the heap go with the adapter: once nothing
	// reaches it, nothing can read them.
	runtime.AddCleanup(a, (*fileStore).release, a.files)
	return a, nil
}

// Name returns "webchat".
func (a *Adapter) Name() string { return DefaultName }

// Sender returns the adapter's [platform.Sender]; see [Sender.Send].
func (a *Adapter) Sender() platform.Sender { return &Sender{a: a} }

// Handler returns the adapter's HTTP handler: the chat page at "/", its
// files under "/static/", the WebSocket at "/ws", and the chat's files
// that the page shows by reference under "/file/" (see the package doc's
// Files). Mount it elsewhere
// with http.StripPrefix (the page uses relative URLs) and set
// [Config.NoServer] to serve it only there. The WebSocket answers 503
// Service Unavailable while Run is not running. A request that arrives on
// a loopback address with a Host that is not a loopback name gets 403
// Forbidden (see the package doc's Security section).
func (a *Adapter) Handler() http.Handler { return a.handler }

// Ready returns a channel that is closed once Run accepts connections:
// its listener is bound (or, with [Config.NoServer], it delivers events).
// It is never closed if Run fails to start.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// Addr returns the address Run listens on, such as "127.0.0.1:41234", or
// "" when Run is not serving (before [Adapter.Ready] is closed, after Run
// returns, and with [Config.NoServer]).
func (a *Adapter) Addr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addr
}

// URL returns the chat page's address, such as "http://127.0.0.1:8080/",
// or "" when [Adapter.Addr] is "". An unspecified host (":0", "0.0.0.0")
// becomes "localhost".
func (a *Adapter) URL() string {
	addr := a.Addr()
	if addr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// Run serves the chat and calls in.Handle, from Run's own goroutine and
// one event at a time, for each message a tab sends and each button a tab
// presses, in the order the adapter received them (a refused event is
// dropped: the engine logged it). Handle should return quickly: events
// wait in a buffer of [Config.EventBuffer] meanwhile, and tabs get "busy"
// errors when it is full.
//
// Once in.Receiving closes, Run takes no more events — a message or button
// press is refused with a "stopping" error frame, and events not yet
// handed over are dropped — but keeps running, its tabs connected and its
// Sender working, so the replies still pending reach them, until ctx ends.
// Listening only (in.Listen), it returns at once: the page is served by
// the process that leads the chat.
//
// Unless [Config.NoServer] is set, Run listens on [Config.Addr] and serves
// [Adapter.Handler] on its own http.Server; if it cannot listen (the port
// is taken) it returns an error that wraps the listener's error and says
// which address failed, and Run may be called again. That server reads a
// request's header within 10 s and the whole request within 10 s (the page
// sends no request bodies), writes each response within
// [Config.WriteTimeout], closes keep-alive connections idle for a minute,
// and holds at most [Config.MaxConnections] + 32 connections, closing the
// longest idle one to make room for a new one (see MaxConnections). Its
// own errors are logged at debug level, rate-limited.
//
// When ctx ends, Run stops: it refuses new connections and sends (which
// then fail with ErrNoConnection), shuts its server down (waiting at most
// [Config.WriteTimeout] for requests in flight), sends each open tab its
// queued messages and a close frame (status 1001, going away; each tab's
// flush is bounded by WriteTimeout), waits for every connection's
// goroutines to finish, and returns nil. Events not yet
// handed to Handle are dropped. Run returns a non-nil error only when it
// could not start or its server failed.
func (a *Adapter) Run(ctx context.Context, in platform.Inbound) error {
	if in.Listen {
		return nil
	}
	if in.Handle == nil {
		return errors.New("webchat: Run: nil Handle func")
	}
	handle := func(ev platform.Event) { _ = in.Handle(ev) }
	a.runMu.Lock()
	if a.started {
		a.runMu.Unlock()
		return fmt.Errorf("webchat: Run: %w", ErrAlreadyRunning)
	}
	var ln net.Listener
	if !a.cfg.NoServer {
		var err error
		ln, err = net.Listen("tcp", a.cfg.Addr)
		if err != nil {
			a.runMu.Unlock()
			return fmt.Errorf("webchat: cannot listen on %s (is another program using the port? set Config.Addr to another address): %w", a.cfg.Addr, err)
		}
	}
	a.started = true
	a.receiving.Store(&in.Receiving)
	a.runMu.Unlock()

	var (
		srv      *httpserve.Server
		serveErr = make(chan error, 1)
		serving  sync.WaitGroup
	)
	if ln != nil {
		srv = httpserve.New(a.handler, httpserve.Limits{
			ReadHeaderTimeout: headerTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      a.cfg.WriteTimeout,
			IdleTimeout:       idleTimeout,
			MaxConns:          a.cfg.MaxConnections + httpHeadroom,
		}, log.New(serverLog{a.rlog}, "", 0))
	}
	var tl *tcpListener
	if ln != nil {
		tl = &tcpListener{Listener: ln, conns: make(map[string]*tcpConn)}
	}
	a.mu.Lock()
	a.active = true
	if ln != nil {
		a.addr = ln.Addr().String()
		a.srv, a.tcp = srv, tl
	}
	a.mu.Unlock()
	if ln != nil {
		serving.Go(func() { serveErr <- srv.Serve(tl) })
		a.log.Info("webchat: chat page ready; open it in a browser", zap.String("url", a.URL()))
	}
	close(a.ready)

	var runErr error
loop:
	for {
		select {
		case ev := <-a.events:
			if !a.taking() {
				a.rlog.Debug("webchat: event dropped: Run takes no more events", zap.String("chat", ev.Chat.ID))
				continue
			}
			handle(ev)
		case <-ctx.Done():
			break loop
		case err := <-serveErr:
			runErr = fmt.Errorf("webchat: serving %s: %w", a.cfg.Addr, err)
			break loop
		}
	}

	// Take every tab out of its chat first, so that a send from now on
	// fails with ErrNoConnection rather than racing with the close.
	a.mu.Lock()
	a.active = false
	a.addr = ""
	a.srv, a.tcp = nil, nil
	open := make([]*conn, 0, len(a.open))
	for c := range a.open {
		open = append(open, c)
		a.dropLocked(c)
	}
	a.mu.Unlock()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.WriteTimeout)
		if err := srv.HTTP.Shutdown(sctx); err != nil {
			srv.HTTP.Close()
		}
		cancel()
	}
	for _, c := range open {
		c.shut(websocket.CloseGoingAway, "server shutting down", false)
	}
	serving.Wait()
	a.conns.Wait()
	a.log.Debug("webchat: stopped", zap.Int("dropped_events", len(a.events)))
	return runErr
}

// tcpListener keeps the TCP connections it accepts, by address, until
// they close. Run's server hands a handler its connections wrapped, so
// that the TCP connection under a tab, whose kernel buffers conn bounds
// and discards, can only be found here (see tcpConnOf).
type tcpListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[string]*tcpConn
}

// tcpConn is a connection tcpListener accepted.
type tcpConn struct {
	*net.TCPConn
	l    *tcpListener
	key  string
	once sync.Once
}

// connKey names a connection by its two addresses.
func connKey(nc net.Conn) string { return nc.LocalAddr().String() + " " + nc.RemoteAddr().String() }

// Accept returns the next connection, kept until it closes.
func (l *tcpListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc, nil
	}
	c := &tcpConn{TCPConn: tc, l: l, key: connKey(tc)}
	l.mu.Lock()
	l.conns[c.key] = c
	l.mu.Unlock()
	return c, nil
}

// Close closes the connection and forgets it.
func (c *tcpConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c.key)
		c.l.mu.Unlock()
	})
	return c.TCPConn.Close()
}

// find returns the open connection with nc's addresses, or nil.
func (l *tcpListener) find(nc net.Conn) *net.TCPConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.conns[connKey(nc)]; c != nil {
		return c.TCPConn
	}
	return nil
}

// tcpConnOf returns the TCP connection under nc, a connection of a tab,
// or nil if there is none (a server of the user's that hands its handlers
// other connections, a test's pipe).
func (a *Adapter) tcpConnOf(nc net.Conn) *net.TCPConn {
	if tc, ok := nc.(*net.TCPConn); ok {
		return tc
	}
	a.mu.Lock()
	l := a.tcp
	a.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.find(nc)
}

// serverLog passes the errors of Run's server (a handler's panic, a failed
// accept, a connection closed at its cap) to the rate-limited log, as
// warnings.
type serverLog struct{ rl *ratelog.Logger }

// Write logs one line of the server's error log.
func (l serverLog) Write(p []byte) (int, error) {
	l.rl.Warn("webchat: http server error", zap.String("error", strings.TrimSpace(string(p))))
	return len(p), nil
}

// taking reports whether Run takes events: its Inbound.Receiving is open.
func (a *Adapter) taking() bool {
	p := a.receiving.Load()
	return p == nil || (platform.Inbound{Receiving: *p}).Taking()
}

// nextMessageID returns a new message ID.
func (a *Adapter) nextMessageID() string { return strconv.FormatUint(a.msgSeq.Add(1), 10) }

// nextEventIDLocked returns a new event ID; IDs increase in the order events
// are queued.
func (a *Adapter) nextEventIDLocked() string {
	a.eventID++
	return a.run + "-" + strconv.FormatUint(a.eventID, 10)
}
