package onebot

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/httpserve"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/internal/runid"
	"github.com/heraldbot/herald/platform"
)

// DefaultName is the adapter's platform name, [platform.Event.Platform] of its
// events.
const DefaultName = "onebot"

// Adapter is a OneBot v11 adapter: it receives events from, and sends
// messages through, OneBot implementations (go-cqhttp, NapCat, Lagrange, …)
// over WebSocket, in reverse or forward mode (see [Mode]).
//
// Create one with [New]; the zero value is not usable. Run receives events;
// Sender sends; in reverse mode, Handler accepts the implementations'
// connections. All methods are safe for concurrent use.
type Adapter struct {
	cfg       Config
	log       *zap.Logger
	upgrader  websocket.Upgrader
	red       *redact.Redactor // keeps cfg's secrets out of logs and errors
	rl        *ratelog.Logger  // log, for lines that can repeat per frame, event or request
	url       string           // cfg.URL, redacted
	echo      atomic.Uint64    // action echo numbers
	seq       atomic.Uint64    // event sequence numbers
	run       string           // a token of the adapter, before seq in IDs
	receiving <-chan struct{}  // the active Run's Inbound.Receiving, under mu

	mu       sync.Mutex
	running  bool                 // a Run is active, until its stop has finished; another Run gets ErrAlreadyRunning
	stopping bool                 // the active Run is stopping: connections are refused
	handle   func(platform.Event) // Run's handle; nil when not running
	conns    map[*conn]struct{}   // every open connection
	bySelf   map[int64]*conn      // identified connections by self ID
	addr     net.Addr             // Run's listener, in reverse mode with Listen
	srv      *httpserve.Server    // Run's server, in reverse mode with Listen
	served   int                  // reverse connections admitted (being upgraded or served), at most MaxConnections
	wg       sync.WaitGroup       // reverse connections being served

	handleMu sync.Mutex // serialises calls of handle
}

// New returns an adapter for cfg. It fails, with an error wrapping
// [ErrInvalidConfig] that names the field, when cfg is not valid: an unknown
// Mode, a forward URL that is missing, not ws:// or wss://, or with user
// info, Listen set in forward mode, a negative duration, ReconnectMin above
// ReconnectMax, and so on. The error never shows the access token or the
// URL's secrets. New starts nothing; [Adapter.Run] does.
func New(cfg Config) (*Adapter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	red := redact.New(cfg.AccessToken, cfg.URL)
	log := cfg.Logger.With(zap.String("platform", cfg.Name), zap.Stringer("mode", cfg.Mode))
	return &Adapter{
		run:      runid.New(),
		rl:       ratelog.New(log, ratelog.DefaultInterval),
		upgrader: websocket.Upgrader{HandshakeTimeout: cfg.WriteTimeout},
		red:      red,
		url:      red.String(redact.URL(cfg.URL)),
		cfg:      cfg,
		log:      log,
		conns:    make(map[*conn]struct{}),
		bySelf:   make(map[int64]*conn),
	}, nil
}

// Name returns the adapter's name: [Config.Name], DefaultName ("onebot")
// unless configured.
func (a *Adapter) Name() string { return a.cfg.Name }

// Limits returns the adapter's send budget: [Config.Limits], by default
// [DefaultLimits]. The engine rate-limits the adapter's sends by it
// unless configured otherwise (engine.WithRateLimit).
func (a *Adapter) Limits() platform.Limits { return a.cfg.Limits }

// Run connects and receives events until ctx ends, calling in.Handle for each
// message, notice and request event (meta events are handled here and not
// passed on). handle is never called concurrently with itself, and events
// of one bot arrive in the order its connection delivered them; it is not
// called after Run returns. handle runs on the connection's reader, which
// also reads action responses, so it must return quickly and must never
// wait for a send through this adapter (queue the event, as the engine
// does); a handle that blocks for two ping intervals gets the connection
// dropped.
//
// In reverse mode with [Config.Listen] set, Run serves [Adapter.Handler] at
// [Config.Path] with its own HTTP server, bounded as Listen's doc says
// (timeouts, a cap on connections that evicts idle ones first), and shuts
// it down when ctx ends.
// Without Listen, Run accepts the connections that reach Handler in the
// caller's server; Handler refuses connections while Run is not running.
// In forward mode Run dials [Config.URL] and redials with backoff whenever
// the connection fails or drops.
//
// When ctx ends, Run refuses new connections, closes every open one (their
// pending sends fail with [ErrConnectionLost]), waits for their goroutines,
// a handle call in progress included, and returns nil. It returns an error
// when it cannot go on: Listen's address cannot be bound, or in forward mode
// the implementation refused the access token ([ErrUnauthorized]).
//
// One Run at a time: a call of Run while another is active, including one
// whose context has ended but which is still closing its connections,
// returns [ErrAlreadyRunning] at once and changes nothing. Once Run has returned,
// Run may be called again.
//
// Once in.Receiving closes, Run takes no more events (those that arrive
// are dropped, logged at debug level) but keeps its connections open, so
// the Sender still sends the replies pending, until ctx ends. Listening
// only (in.Listen), it returns at once: the process that leads the
// account holds its connections.
func (a *Adapter) Run(ctx context.Context, in platform.Inbound) error {
	if in.Listen {
		return nil
	}
	handle := func(platform.Event) {}
	if in.Handle != nil {
		handle = func(ev platform.Event) { _ = in.Handle(ev) } // the engine logged a refusal
	}
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return fmt.Errorf("onebot: Run: %w", ErrAlreadyRunning)
	}
	a.running, a.handle, a.receiving = true, handle, in.Receiving
	a.mu.Unlock()
	defer a.stop()

	if a.cfg.Mode == Forward {
		return a.runForward(ctx)
	}
	return a.runReverse(ctx)
}

// stop ends Run: it refuses new connections, closes the open ones, waits
// until their goroutines have returned, and only then lets another Run
// start.
//
// INVARIANT: a.wg.Add is called only under mu while running and not
// stopping. stop sets stopping under mu before it waits, and running stays
// true until the wait is over, so no Add (of this Run or of a next one)
// can race with the Wait, and every served connection is waited for.
func (a *Adapter) stop() {
	a.mu.Lock()
	a.stopping = true
	open := make([]*conn, 0, len(a.conns))
	for c := range a.conns {
		open = append(open, c)
	}
	a.mu.Unlock()
	for _, c := range open {
		c.close(errShutdown)
	}
	a.wg.Wait()
	a.mu.Lock()
	a.handle, a.receiving = nil, nil
	a.running, a.stopping = false, false
	a.mu.Unlock()
}

// deliver passes an event to Run's handle, one call at a time.
func (a *Adapter) deliver(ev platform.Event) {
	a.mu.Lock()
	if !(platform.Inbound{Receiving: a.receiving}).Taking() {
		a.mu.Unlock()
		a.rl.Debug("onebot: event dropped: Run takes no more events", zap.String("chat", ev.Chat.ID))
		return
	}
	h := a.handle
	a.mu.Unlock()
	if h == nil {
		return
	}
	a.handleMu.Lock()
	defer a.handleMu.Unlock()
	h(ev)
}

// adopt registers a new connection and closes the bot's previous one, which
// it replaces. It reports false, after closing c, when Run is not running.
// A caller that got true must call unregister when c is done.
func (a *Adapter) adopt(c *conn) bool {
	old, ok := a.register(c)
	if !ok {
		c.close(errShutdown)
		return false
	}
	if old != nil {
		old.close(errReplaced)
	}
	return true
}

// register adds a new connection. A connection with a self ID replaces the
// bot's previous one, which it returns for the caller to close (outside the
// lock). ok is false when Run is not running or is stopping; the caller
// then closes c.
func (a *Adapter) register(c *conn) (old *conn, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.acceptingLocked() {
		return nil, false
	}
	a.conns[c] = struct{}{}
	if id := c.selfID.Load(); id != 0 {
		old = a.bySelf[id]
		a.bySelf[id] = c
	}
	return old, true
}

// acceptingLocked reports whether Run takes new connections: it is running and
// not stopping. The caller holds mu.
func (a *Adapter) acceptingLocked() bool { return a.running && !a.stopping }

// identify records that c is bot id's connection, unless it has a self ID
// already (learned is then false), and returns the connection it replaces,
// if any. The ID and the route are set under one lock: a connection that
// Bots lists under an ID is the one a send for that ID takes, never a
// moment before.
func (a *Adapter) identify(c *conn, id int64) (learned bool, old *conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !c.selfID.CompareAndSwap(0, id) {
		return false, nil
	}
	if _, open := a.conns[c]; !open {
		return true, nil
	}
	old = a.bySelf[id]
	if old == c {
		return true, nil
	}
	a.bySelf[id] = c
	return true, old
}

// unregister forgets a closed connection.
func (a *Adapter) unregister(c *conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.conns, c)
	if id := c.selfID.Load(); id != 0 && a.bySelf[id] == c {
		delete(a.bySelf, id)
	}
}

// pick returns the connection a send for bot selfID (0: any) goes through.
func (a *Adapter) pick(selfID int64) (*conn, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if selfID != 0 {
		if c := a.bySelf[selfID]; c != nil && !c.closed() {
			return c, nil
		}
		return nil, errNotConnected(selfID)
	}
	var only *conn
	n := 0
	for c := range a.conns {
		if !c.closed() {
			only = c
			n++
		}
	}
	switch n {
	case 0:
		return nil, ErrNotConnected
	case 1:
		return only, nil
	}
	return nil, platform.Permanent(ErrAmbiguousChat)
}

func errNotConnected(selfID int64) error {
	return &notConnectedError{selfID: selfID}
}

type notConnectedError struct{ selfID int64 }

func (e *notConnectedError) Error() string {
	return ErrNotConnected.Error() + ": no connection for self ID " + strconv.FormatInt(e.selfID, 10)
}

func (e *notConnectedError) Unwrap() error { return ErrNotConnected }

// Bot describes one connected bot account, as [Adapter.Bots] saw it. It is
// a plain value, a snapshot that does not change, safe to copy and to share
// between goroutines; the zero value describes no bot.
type Bot struct {
	SelfID            int64         // the bot's QQ ID; 0 while not yet known (forward mode)
	Remote            string        // the implementation's network address
	Since             time.Time     // when the connection opened
	HeartbeatInterval time.Duration // from the last heartbeat event; 0 before the first
}

// Bots returns the bots connected now, ordered by self ID.
func (a *Adapter) Bots() []Bot {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Bot, 0, len(a.conns))
	for c := range a.conns {
		if c.closed() {
			continue
		}
		out = append(out, Bot{
			SelfID:            c.selfID.Load(),
			Remote:            c.remote,
			Since:             c.since,
			HeartbeatInterval: time.Duration(c.heartbeat.Load()),
		})
	}
	slices.SortFunc(out, func(x, y Bot) int {
		switch {
		case x.SelfID < y.SelfID:
			return -1
		case x.SelfID > y.SelfID:
			return 1
		}
		return 0
	})
	return out
}

// Addr returns the address Run's own server listens on, in reverse mode
// with [Config.Listen] set (useful with port 0), and nil before Run has
// bound it or in other configurations.
func (a *Adapter) Addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addr
}

// nextSeq returns the next event's sequence token: the adapter's own
// token and a number, so that an event's ID is not one a journal saw in a
// run before this one.
func (a *Adapter) nextSeq() string {
	return a.run + "." + strconv.FormatUint(a.seq.Add(1), 10)
}
