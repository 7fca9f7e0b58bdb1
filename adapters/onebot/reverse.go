package onebot

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/httpserve"
)

// Handler returns the reverse WebSocket endpoint: an http.Handler that
// accepts connections from OneBot implementations configured for a
// Universal reverse WebSocket. Mount it in your own server, or set
// [Config.Listen] and let Run serve it. Run's own server bounds header and
// idle times and the number of connections; a server of your own facing a
// network should too (ReadHeaderTimeout, IdleTimeout, a connection cap),
// since Handler only bounds the WebSocket connections it accepts
// ([Config.MaxConnections]) and the write of its handshake answer
// ([Config.WriteTimeout]).
//
// A connection is refused with an HTTP error, before the upgrade, when:
//   - an access token is configured and none is given (401) or the given
//     one is wrong (403); the token is read from "Authorization: Bearer
//     <token>" (or the older "Token <token>") or the access_token query
//     parameter, and compared in constant time;
//   - X-Self-ID is missing or not a positive integer (400);
//   - X-Client-Role is "API" or "Event" (400): this adapter needs events and
//     actions on one connection, so configure the implementation's reverse
//     WebSocket as Universal (a missing X-Client-Role counts as Universal);
//   - [Config.MaxConnections] connections are open or being upgraded
//     already (503);
//   - Run is not running or is stopping (503), or the adapter is in
//     forward mode (404).
//
// Several bots (self IDs) may be connected at once. A new connection with
// the self ID of an open one replaces it: the old connection is closed and
// its pending sends fail with [ErrConnectionLost] (retryable), which is
// what an implementation reconnecting after a network failure needs.
func (a *Adapter) Handler() http.Handler { return http.HandlerFunc(a.serveReverse) }

func (a *Adapter) serveReverse(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Mode != Reverse {
		http.Error(w, "onebot: adapter is in forward mode", http.StatusNotFound)
		return
	}
	if a.cfg.AccessToken != "" {
		tok, ok := requestToken(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="onebot"`)
			http.Error(w, "onebot: access token required", http.StatusUnauthorized)
			a.rl.Warn("onebot: connection without access token refused", zap.String("remote", r.RemoteAddr))
			return
		}
		if !tokenEqual(tok, a.cfg.AccessToken) {
			http.Error(w, "onebot: wrong access token", http.StatusForbidden)
			a.rl.Warn("onebot: connection with wrong access token refused", zap.String("remote", r.RemoteAddr))
			return
		}
	}
	selfID, err := strconv.ParseInt(strings.TrimSpace(r.Header.Get("X-Self-ID")), 10, 64)
	if err != nil || selfID <= 0 {
		http.Error(w, "onebot: X-Self-ID header missing or not a positive integer", http.StatusBadRequest)
		a.rl.Warn("onebot: connection without a valid X-Self-ID refused", zap.String("remote", r.RemoteAddr))
		return
	}
	if role := strings.TrimSpace(r.Header.Get("X-Client-Role")); role != "" && !strings.EqualFold(role, "Universal") {
		http.Error(w, fmt.Sprintf("onebot: X-Client-Role %q not supported: configure a Universal reverse WebSocket", role), http.StatusBadRequest)
		a.rl.Warn("onebot: connection with unsupported role refused", zap.String("role", clip(role)), zap.Int64("self_id", selfID), zap.String("remote", r.RemoteAddr))
		return
	}

	a.mu.Lock()
	if !a.acceptingLocked() {
		a.mu.Unlock()
		http.Error(w, "onebot: adapter not running", http.StatusServiceUnavailable)
		return
	}
	if a.served >= a.cfg.MaxConnections {
		a.mu.Unlock()
		a.rl.Warn("onebot: connection refused: too many connections",
			zap.Int("max", a.cfg.MaxConnections), zap.Int64("self_id", selfID), zap.String("remote", r.RemoteAddr))
		http.Error(w, "onebot: too many connections", http.StatusServiceUnavailable)
		return
	}
	a.served++
	a.wg.Add(1) // INVARIANT: only while accepting, so stop's Wait sees every connection (see stop).
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.served--
		a.mu.Unlock()
		a.wg.Done()
	}()

	ws, err := a.upgrader.Upgrade(w, r, nil) // writes the HTTP error itself
	if err != nil {
		a.rl.Warn("onebot: upgrade failed", zap.Error(a.red.Error(err)), zap.String("remote", r.RemoteAddr))
		return
	}
	c := newConn(a, ws, r.RemoteAddr, selfID)
	if !a.adopt(c) {
		return
	}
	defer a.unregister(c)
	c.log.Info("onebot: bot connected", zap.Int64("self_id", selfID))
	c.serve()
}

// requestToken returns the access token a request presents, if any.
func requestToken(r *http.Request) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
		if ok && (strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "Token")) {
			return strings.TrimSpace(tok), true
		}
	}
	if q := r.URL.Query(); q.Has("access_token") {
		return q.Get("access_token"), true
	}
	return "", false
}

// tokenEqual compares tokens in constant time, hashing first so that not
// even the length leaks.
func tokenEqual(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// handshakeRoom is how many TCP connections Run's own server holds beyond
// MaxConnections: room for handshakes in progress, refused ones and idle
// keep-alive connections, so that WebSocket connections never fill the cap
// and a newcomer can always be answered (a 503 when MaxConnections is
// reached), evicting the longest idle connection if need be.
const handshakeRoom = 64

// Bounds of Run's own server (see listenLimits).
const (
	listenHeaderTimeout = 10 * time.Second // the handshake request's header
	listenReadTimeout   = 10 * time.Second // the whole handshake request; it has no body
	listenIdleTimeout   = 30 * time.Second // a keep-alive connection between requests
)

// listenLimits are the bounds of Run's own server: a handshake's request
// must arrive within 10 s (header and all) and its answer be written
// within WriteTimeout, a keep-alive connection is closed after 30 s idle,
// and at most MaxConnections + handshakeRoom connections are open, hijacked
// WebSocket connections included; at the cap, a new connection evicts the
// one that has been idle (no request in progress) longest. Served bots
// never count as idle.
func listenLimits(cfg Config) httpserve.Limits {
	return httpserve.Limits{
		ReadHeaderTimeout: listenHeaderTimeout,
		ReadTimeout:       listenReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       listenIdleTimeout,
		MaxConns:          cfg.MaxConnections + handshakeRoom,
	}
}

// serverLog returns the logger for the errors of Run's own server (a
// failed accept, a handler's panic): each line goes to the rate-limited
// log, redacted, since a peer may cause one per connection.
func (a *Adapter) serverLog() *log.Logger { return log.New(serverLogWriter{a}, "", 0) }

// serverLogWriter writes the lines of serverLog.
type serverLogWriter struct{ a *Adapter }

func (w serverLogWriter) Write(p []byte) (int, error) {
	w.a.rl.Warn("onebot: HTTP server error", zap.String("error", w.a.red.String(strings.TrimSpace(string(p)))))
	return len(p), nil
}

// runReverse serves Listen until ctx ends, or just waits when the caller
// serves Handler itself.
func (a *Adapter) runReverse(ctx context.Context) error {
	if a.cfg.Listen == "" {
		<-ctx.Done()
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("onebot: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(a.cfg.Path, a.Handler())
	srv := httpserve.New(mux, listenLimits(a.cfg), a.serverLog())
	a.mu.Lock()
	a.addr, a.srv = ln.Addr(), srv
	a.mu.Unlock()
	a.log.Info("onebot: serving reverse WebSocket", zap.Stringer("addr", ln.Addr()), zap.String("path", a.cfg.Path))

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	// Shutdown stops the listener and idle connections; the hijacked
	// WebSocket connections are closed by stop when Run returns.
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.HTTP.Shutdown(shutCtx); err != nil {
		_ = srv.HTTP.Close()
	}
	if serveErr == nil {
		serveErr = <-errc
	}
	a.mu.Lock()
	a.addr, a.srv = nil, nil
	a.mu.Unlock()
	if errors.Is(serveErr, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("onebot: serve: %w", serveErr)
}
