// Package httpserve builds the HTTP servers Herald starts — the Telegram
// webhook, the OneBot reverse WebSocket, the browser chat, the example
// bot's metrics — with the bounds a listener facing a network needs: a
// deadline for a request's header and for its body, a limit on how long a
// keep-alive connection may sit idle, and a cap on open connections that a
// flood of idle ones cannot use to shut real clients (or, through the file
// descriptors they hold, the bot's own outgoing requests) out.
package httpserve

import (
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero fields of [Limits].
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxConns          = 256
)

// Limits bounds a server. The zero value is a valid configuration: every
// zero field takes its default, and a negative one switches that bound off.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's header, from the
	// moment the connection is accepted or its previous request ended.
	// 0 means 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included. A
	// connection that a handler hijacks (a WebSocket) sets its own
	// deadlines. 0 means 30 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response, from the end of its
	// request's header. 0 means none: a handler that streams bounds its
	// own writes.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request. 0 means 60 s.
	IdleTimeout time.Duration
	// MaxConns caps the connections open at once, hijacked ones (a
	// WebSocket) included. When a new connection arrives at the cap, the
	// connection that has waited longest without a request in progress
	// (idle between requests, or not yet sent one) is closed to make
	// room; with none such, the one whose client has taken nothing of
	// the server's writes for longest, 2 s at least (a client that
	// pipelines requests and reads no answer); with none such either, the
	// new connection is closed at once. 0 means
	// 256. The connections it counts are also the ones the server's
	// Shutdown closes at once when they have no request in progress (see
	// closeWaiting); with no cap (negative), Shutdown waits as net/http's
	// does, up to 5 s for a connection that has sent nothing yet.
	MaxConns int
}

func (l Limits) normalized() Limits {
	def := func(d *time.Duration, v time.Duration) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			*d = 0
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.WriteTimeout < 0 {
		l.WriteTimeout = 0
	}
	switch {
	case l.MaxConns == 0:
		l.MaxConns = DefaultMaxConns
	case l.MaxConns < 0:
		l.MaxConns = 0
	}
	return l
}

// Server is an http.Server with the bounds of a [Limits], and the listener
// that enforces its cap on connections.
type Server struct {
	// HTTP is the server: call its Shutdown and Close as usual.
	HTTP *http.Server
	ln   *listener
}

// New returns a Server for h with the bounds of lim. errorLog receives the
// server's own errors (failed TLS handshakes, a handler's panic) and a
// line for each connection closed at the cap (a new one refused, or an
// idle one closed to make room: a flood, most likely) — give it a writer
// that limits its rate; it may be nil.
func New(h http.Handler, lim Limits, errorLog *log.Logger) *Server {
	lim = lim.normalized()
	s := &Server{HTTP: &http.Server{
		Handler:           closeUnread(h),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          errorLog,
	}}
	if lim.MaxConns > 0 {
		s.ln = &listener{max: lim.MaxConns, conns: make(map[*conn]struct{}), log: errorLog}
		s.HTTP.ConnState = s.ln.track
		s.HTTP.RegisterOnShutdown(s.ln.closeWaiting)
	}
	return s
}

// Serve accepts connections on ln and serves them until the server is
// shut down, like http.Server.Serve, whose error it returns.
func (s *Server) Serve(ln net.Listener) error {
	if s.ln == nil {
		return s.HTTP.Serve(ln)
	}
	s.ln.mu.Lock()
	s.ln.Listener = ln
	s.ln.mu.Unlock()
	return s.HTTP.Serve(s.ln)
}

// Open returns the number of connections open now.
func (s *Server) Open() int {
	if s.ln == nil {
		return 0
	}
	s.ln.mu.Lock()
	defer s.ln.mu.Unlock()
	return len(s.ln.conns)
}

// Evicted returns how many connections were closed to make room for new
// ones, or refused at the cap.
func (s *Server) Evicted() uint64 {
	if s.ln == nil {
		return 0
	}
	s.ln.mu.Lock()
	defer s.ln.mu.Unlock()
	return s.ln.evicted
}

// listener caps the connections of a Server.
type listener struct {
	net.Listener
	max int
	log *log.Logger // or nil

	mu      sync.Mutex
	conns   map[*conn]struct{}
	evicted uint64
}

// logf writes a line to l.log, if there is one.
func (l *listener) logf(format string, a ...any) {
	if l.log != nil {
		l.log.Printf(format, a...)
	}
}

// conn is an accepted connection, counted until it closes.
type conn struct {
	net.Conn
	l      *listener
	once   sync.Once
	active bool      // a request is in progress, or the handler hijacked it; guarded by l.mu
	since  time.Time // when it last became idle (or was accepted); guarded by l.mu

	// writing is when a Write still blocked began (Unix nanoseconds), or
	// 0: a client that takes nothing of what it is sent (it pipelines
	// requests and never reads the answers) holds its connection busy.
	writing atomic.Int64
}

// stuckWrite is how long a Write must have been blocked for its connection
// to be closed, at the cap, to make room, as an idle one is.
const stuckWrite = 2 * time.Second

// Write writes p, noting while it is blocked.
func (c *conn) Write(p []byte) (int, error) {
	c.writing.Store(time.Now().UnixNano())
	n, err := c.Conn.Write(p)
	c.writing.Store(0)
	return n, err
}

// Close closes the connection and stops counting it.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &conn{Conn: nc, l: l, since: time.Now()}
		l.mu.Lock()
		var victim *conn
		if len(l.conns) >= l.max {
			victim = l.oldestIdleLocked()
			l.evicted++
		}
		if victim == nil && len(l.conns) >= l.max {
			l.mu.Unlock()
			nc.Close() // nothing to make room with: refuse the newcomer
			l.logf("httpserve: a connection from %s refused: %d connections open, all with a request in progress", nc.RemoteAddr(), l.max)
			continue
		}
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
			l.logf("httpserve: a connection from %s closed to make room (idle, or taking none of its answers): %d connections open", victim.RemoteAddr(), l.max)
		}
		return c, nil
	}
}

// oldestIdleLocked returns the connection that has waited longest with no
// request in progress, or, with none such, the one whose client has taken
// nothing of a write for longest, stuckWrite at least; or nil. l.mu must
// be held.
func (l *listener) oldestIdleLocked() *conn {
	var oldest *conn
	for c := range l.conns {
		if !c.active && (oldest == nil || c.since.Before(oldest.since)) {
			oldest = c
		}
	}
	if oldest == nil {
		stuckSince, since := time.Now().Add(-stuckWrite).UnixNano(), int64(0)
		for c := range l.conns {
			if w := c.writing.Load(); w != 0 && w <= stuckSince && (oldest == nil || w < since) {
				oldest, since = c, w
			}
		}
	}
	if oldest != nil {
		// It is being closed: forget it now, so that it makes room even
		// before its Close runs.
		delete(l.conns, oldest)
		oldest.once.Do(func() {})
	}
	return oldest
}

// closeWaiting closes the connections with no request in progress: the
// server's Shutdown runs it once its listeners are closed. Shutdown closes
// those idle between requests itself, but waits up to 5 s for one that has
// not sent its first request yet, in case that request is on its way
// (golang.org/issue/22682): the spare connection a browser opens ahead of
// a request it may never make held each stop of a server it had visited
// (the browser chat's) for 5 s. A request that does arrive on such a
// connection now gets no answer, as one arriving a moment after the stop
// would: its client tries again (Telegram sends an unanswered webhook
// update again).
func (l *listener) closeWaiting() {
	l.mu.Lock()
	var waiting []*conn
	for c := range l.conns {
		if !c.active {
			waiting = append(waiting, c)
		}
	}
	l.mu.Unlock()
	for _, c := range waiting {
		c.Close()
	}
}

// track is the server's ConnState hook: it marks which connections are
// busy.
func (l *listener) track(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateActive, http.StateHijacked:
		c.active = true
	case http.StateIdle:
		c.active = false
		c.since = time.Now()
	}
}
