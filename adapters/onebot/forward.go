package onebot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/backoff"
)

// runForward dials URL and serves the connection, redialling with backoff
// after every failure or drop, until ctx ends.
//
// Backoff: attempt counts consecutive failures. A connection that stayed up
// for at least ReconnectMax resets it, so after a long healthy connection
// the next wait is near ReconnectMin; a connection that drops sooner counts
// as a failure, so an implementation that accepts and at once hangs up is
// not hammered.
func (a *Adapter) runForward(ctx context.Context) error {
	attempt := 0
	for {
		c, err := a.dial(ctx)
		switch {
		case ctx.Err() != nil:
			if c != nil {
				_ = c.ws.Close()
			}
			return nil
		case errors.Is(err, ErrUnauthorized):
			return err
		case err != nil:
			a.log.Warn("onebot: dial failed", zap.Error(err), zap.Int("attempt", attempt))
		default:
			up := time.Now()
			a.serveForward(ctx, c)
			if ctx.Err() != nil {
				return nil
			}
			if time.Since(up) >= a.cfg.ReconnectMax {
				attempt = 0
			}
		}
		d := reconnectDelay(attempt, a.cfg.ReconnectMin, a.cfg.ReconnectMax, rand.Float64())
		attempt++
		a.log.Info("onebot: reconnecting", zap.Duration("in", d))
		if !backoff.Sleep(ctx, d) {
			return nil
		}
	}
}

// dial opens a connection to URL. A 401 or 403 handshake answer is
// ErrUnauthorized. Its errors name URL with its secrets redacted.
func (a *Adapter) dial(ctx context.Context) (*conn, error) {
	h := http.Header{}
	if a.cfg.AccessToken != "" {
		h.Set("Authorization", "Bearer "+a.cfg.AccessToken)
	}
	ws, resp, err := a.cfg.Dialer.DialContext(ctx, a.cfg.URL, h)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		// a.url is redacted, and so is the dependency's error, whose text
		// may hold a URL (a proxy's, say) or the token.
		if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
			return nil, fmt.Errorf("%w: %s answered %s", ErrUnauthorized, a.url, a.red.String(resp.Status))
		}
		if errors.Is(err, websocket.ErrBadHandshake) && resp != nil {
			return nil, fmt.Errorf("onebot: dial %s: handshake answered %s", a.url, a.red.String(resp.Status))
		}
		return nil, fmt.Errorf("onebot: dial %s: %w", a.url, a.red.Error(err))
	}
	// Some implementations name the bot in the handshake answer; otherwise
	// the lifecycle connect event will.
	var selfID int64
	if resp != nil {
		if id, err := strconv.ParseInt(strings.TrimSpace(resp.Header.Get("X-Self-ID")), 10, 64); err == nil && id > 0 {
			selfID = id
		}
	}
	return newConn(a, ws, ws.RemoteAddr().String(), selfID), nil
}

// serveForward serves one forward connection until it drops or ctx ends.
func (a *Adapter) serveForward(ctx context.Context, c *conn) {
	if !a.adopt(c) {
		return
	}
	defer a.unregister(c)
	closed := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		defer close(closed)
		c.close(errShutdown)
	})
	a.log.Info("onebot: connected", zap.String("url", a.url))
	c.serve()
	if !stopWatch() {
		<-closed // the close ran or is running; let it finish before returning
	}
}
