package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/httpserve"
)

const (
	// secretHeader carries the webhook's secret token.
	secretHeader = "X-Telegram-Bot-Api-Secret-Token"
	// maxUpdateBody bounds one webhook request body.
	maxUpdateBody = 4 << 20
	// smallUpdateBody is the largest webhook body (by its Content-Length)
	// read without a share of the body budget: Telegram's updates take a
	// few KiB, and the connection cap bounds what small bodies hold.
	smallUpdateBody = 64 << 10
	// webhookBodyBudget bounds the bytes of larger bodies (or bodies of
	// unknown length, counted as maxUpdateBody) read at once: four of the
	// largest.
	webhookBodyBudget = 4 * maxUpdateBody
	// budgetWait bounds how long a large body waits for room in the
	// budget before its request is answered 503.
	budgetWait = time.Second
	// shutdownTimeout bounds the webhook server's graceful shutdown.
	shutdownTimeout = time.Second
)

// webhookLimits bounds the server a run serves the webhook with: a
// request's header must come within 10 s and the whole request within
// 10 s (a stalled body is cut), the answer be written within 20 s, a
// keep-alive connection may sit idle for 60 s, and at most 256 connections
// are open at once, the longest idle closed first to make room (Telegram
// opens at most MaxConnections, 100 at most).
var webhookLimits = httpserve.Limits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      20 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxConns:          256,
}

// WebhookHandler returns the http.Handler that receives Telegram's webhook
// requests, for mounting in a server of your own (leave Webhook.Listen
// empty); Run's own server uses it too. It delivers updates through the
// active Run and answers:
//
//   - 405 to methods other than POST;
//   - 403 when Webhook.SecretToken is set and the
//     X-Telegram-Bot-Api-Secret-Token header differs (nothing is handled,
//     and the body is not read);
//   - 503 while no Run is active, and 503 with Retry-After: 1 to an update
//     whose handle refused an event, so Telegram sends the
//     update again later;
//   - 413 to a body over 4 MiB, before reading it when its Content-Length
//     says so;
//   - 503 with Retry-After: 1 to a large body that finds no room to be
//     read (below);
//   - 400 to a body that is not JSON or could not be read (it was cut
//     off, or came too slowly for the server);
//   - 200 to an update that was handled, and to one that is JSON but not
//     an update (it is skipped with a log line: Telegram would only send it
//     again).
//
// Memory for bodies is bounded: a body of up to 64 KiB (by its
// Content-Length; Telegram's updates take a few KiB) is read at once,
// while larger bodies, and bodies of unknown length counted as 4 MiB,
// share a budget of 16 MiB read at a time. A request whose body does not
// fit waits for room, in order, for at most a second or until its
// context ends, and is then answered 503 with Retry-After: 1, which
// Telegram answers by sending it again later. So a flood of large bodies
// holds at most 16 MiB of them, plus 64 KiB per connection the server
// allows.
//
// An update is recorded as handled only once handle took it, so a refused
// update sent again is handed on, while one Telegram sends again after it
// was taken (after a timeout) is dropped and counted ([Stats] Duplicates);
// the last 1024 update IDs are remembered. The handler may be called
// concurrently; deliveries to handle are one at a time. Its warnings (a
// wrong secret, a malformed or refused update, an oversized body) are
// logged at most once per kind every 10 s, and counted in [Stats].
func (a *Adapter) WebhookHandler() http.Handler { return http.HandlerFunc(a.serveWebhook) }

func (a *Adapter) serveWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		a.stats.invalid.Add(1)
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if s := a.cfg.Webhook.SecretToken; s != "" &&
		subtle.ConstantTimeCompare([]byte(r.Header.Get(secretHeader)), []byte(s)) != 1 {
		a.stats.forbidden.Add(1)
		a.limited.Warn("telegram: refused a webhook request with a wrong secret token", zap.String("remote", r.RemoteAddr))
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	rs := a.run.Load()
	if rs == nil {
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	if r.ContentLength > maxUpdateBody {
		a.tooLarge(w, r)
		return
	}
	if n := r.ContentLength; n < 0 || n > smallUpdateBody {
		if n < 0 {
			n = maxUpdateBody
		}
		ctx, cancel := context.WithTimeout(r.Context(), budgetWait)
		ok := a.budget.acquire(ctx, n)
		cancel()
		if !ok {
			a.stats.busy.Add(1)
			a.limited.Warn("telegram: too many large webhook bodies being read; answering 503",
				zap.String("remote", r.RemoteAddr), zap.Int64("bytes", r.ContentLength))
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy, send it again", http.StatusServiceUnavailable)
			return
		}
		defer a.budget.release(n)
	}
	body, err := readBody(w, r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			a.tooLarge(w, r)
			return
		}
		// The body was cut off (the connection broke, it came too slowly):
		// the update was not read, so it must not be answered 200, which
		// would tell Telegram it was handled.
		a.stats.invalid.Add(1)
		a.limited.Warn("telegram: could not read a webhook request", zap.String("remote", r.RemoteAddr), zap.Error(err))
		http.Error(w, "could not read the body", http.StatusBadRequest)
		return
	}
	if !json.Valid(body) {
		a.stats.invalid.Add(1)
		a.limited.Warn("telegram: refused a webhook request that is not JSON", zap.String("remote", r.RemoteAddr), zap.Int("bytes", len(body)))
		http.Error(w, "body is not JSON", http.StatusBadRequest)
		return
	}
	u, err := decodeUpdate(body)
	if err != nil {
		fields := []zap.Field{zap.Int("update_id", updateIDOf(body)), zap.Int("bytes", len(body))}
		if !errors.Is(err, errNoUpdateID) {
			fields = append(fields, zap.Error(err))
		}
		a.stats.malformed.Add(1)
		a.limited.Warn("telegram: skipping a malformed update", fields...)
		w.WriteHeader(http.StatusOK)
		return
	}
	switch err := rs.deliver(u); {
	case errors.Is(err, errRunEnded):
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	case err != nil:
		// Not taken: Telegram sends it again. Retry-After is advice;
		// Telegram chooses its own pace.
		a.limited.Warn("telegram: a webhook update was refused; Telegram will send it again",
			zap.Int("update_id", u.UpdateID), zap.Error(a.red.Error(err)))
		w.Header().Set("Retry-After", "1")
		http.Error(w, "refused, send it again", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// tooLarge answers a request whose body is over maxUpdateBody with 413.
func (a *Adapter) tooLarge(w http.ResponseWriter, r *http.Request) {
	a.stats.invalid.Add(1)
	a.limited.Warn("telegram: refused an oversized webhook request", zap.String("remote", r.RemoteAddr), zap.Int64("bytes", r.ContentLength))
	http.Error(w, "too large", http.StatusRequestEntityTooLarge)
}

// readBody reads r's body, at most maxUpdateBody bytes: into a buffer of
// exactly its Content-Length when that is known, so reading takes no more
// memory than the body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, maxUpdateBody)
	if n := r.ContentLength; n >= 0 {
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}

// byteBudget is a counting semaphore of bytes, granted in order of
// request. It is safe for concurrent use.
type byteBudget struct {
	size int64

	mu      sync.Mutex
	used    int64
	waiters []*budgetWaiter // in order of arrival
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when granted
}

func newByteBudget(size int64) *byteBudget { return &byteBudget{size: size} }

// acquire takes n bytes (at most the whole budget) and reports true, or
// reports false, having taken nothing, if ctx ends first. Requests are
// granted in order: a small one does not pass a large one that waits.
func (b *byteBudget) acquire(ctx context.Context, n int64) bool {
	n = min(n, b.size)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.size {
		b.used += n
		b.mu.Unlock()
		return true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return true
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		b.used -= n
	default:
		b.waiters = slices.DeleteFunc(b.waiters, func(x *budgetWaiter) bool { return x == w })
	}
	b.grantLocked()
	return false
}

// release gives back n bytes taken with acquire.
func (b *byteBudget) release(n int64) {
	n = min(n, b.size)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.grantLocked()
}

// grantLocked grants the waiters at the head of the line that fit. b.mu
// must be held.
func (b *byteBudget) grantLocked() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.size {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
}

// runWebhook serves the webhook (if listen and Listen is set: a listening Run
// serves it otherwise) and registers it (if URL is set), then waits for
// ctx to end.
func (a *Adapter) runWebhook(ctx context.Context, listen bool) error {
	wc := a.cfg.Webhook
	var serveErr chan error
	if listen && wc.Listen != "" {
		stop, errc, err := a.listenWebhook(ctx)
		if err != nil {
			return err
		}
		defer stop()
		serveErr = errc
	}

	if wc.URL != "" {
		params := tgbotapi.Params{"url": wc.URL}
		params.AddNonEmpty("secret_token", wc.SecretToken)
		params.AddNonZero("max_connections", wc.MaxConnections)
		if types := a.allowedUpdates(); types != nil { // never nil; AddInterface would send a nil slice as "null"
			if err := params.AddInterface("allowed_updates", types); err != nil {
				return fmt.Errorf("telegram: setWebhook: %w", err)
			}
		}
		err := a.retrying(ctx, func(ctx context.Context) error {
			_, err := a.makeRequest(ctx, "setWebhook", params)
			return err
		})
		if err != nil {
			return err
		}
	}
	if wc.SecretToken == "" {
		a.log.Warn("telegram: the webhook has no secret token; anyone who knows its URL can send updates")
	}

	select {
	case <-ctx.Done():
		return nil
	case err := <-serveErr:
		return fmt.Errorf("telegram: webhook server: %w", err)
	}
}

// listenWebhook starts the webhook's server on Webhook.Listen; stop shuts
// it down (within the stop context's time, then hard), and serveErr gets
// the error that ended it early, if any (stop then ends at once).
func (a *Adapter) listenWebhook(ctx context.Context) (stop func(), serveErr chan error, err error) {
	wc := a.cfg.Webhook
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", wc.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("telegram: webhook: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(wc.Path, a.WebhookHandler())
	srv := httpserve.New(mux, a.web, log.New(serverLog{a}, "", 0))
	serveErr = make(chan error, 1)
	served := make(chan struct{})
	go func() {
		defer close(served)
		serveErr <- srv.Serve(ln)
	}()
	a.setAddr(ln.Addr(), srv)
	a.log.Info("telegram: serving the webhook", zap.String("addr", ln.Addr().String()), zap.String("path", a.red.String(wc.Path)))
	return func() {
		a.setAddr(nil, nil)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if srv.HTTP.Shutdown(sctx) != nil {
			srv.HTTP.Close()
		}
		<-served
	}, serveErr, nil
}

// serverLog writes the webhook server's own errors (a failed accept, a
// handler's panic) to the adapter's log, with the token and secret
// redacted and at most one line every 10 s.
type serverLog struct{ a *Adapter }

func (l serverLog) Write(p []byte) (int, error) {
	l.a.limited.Warn("telegram: webhook server error", zap.String("error", l.a.red.String(strings.TrimSpace(string(p)))))
	return len(p), nil
}
