package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"
)

const (
	// secretHeader carries the webhook's secret token.
	secretHeader = "X-Telegram-Bot-Api-Secret-Token"
	// maxUpdateBody bounds one webhook request body.
	maxUpdateBody = 4 << 20
	// shutdownTimeout bounds the webhook server's graceful shutdown.
	shutdownTimeout = time.Second
)

// WebhookHandler returns the http.Handler that receives Telegram's webhook
// requests, for mounting in a server of your own (leave Webhook.Listen
// empty); Run's own server uses it too. It delivers updates through the
// active Run or RunConfirmed and answers:
//
//   - 405 to methods other than POST;
//   - 403 when Webhook.SecretToken is set and the
//     X-Telegram-Bot-Api-Secret-Token header differs (nothing is handled);
//   - 503 while no Run is active, and 503 with Retry-After: 1 to an update
//     whose handle refused an event (RunConfirmed), so Telegram sends the
//     update again later;
//   - 400 to a body that is not JSON or could not be read, 413 to one over
//     4 MiB;
//   - 200 to an update that was handled, and to one that is JSON but not
//     an update (it is skipped with a log line: Telegram would only send it
//     again).
//
// An update is recorded as handled only once handle took it, so a refused
// update sent again is handed on, while one Telegram sends again after it
// was taken (after a timeout) is dropped; the last 1024 update IDs are
// remembered. The handler may be called concurrently; deliveries to handle
// are one at a time.
func (a *Adapter) WebhookHandler() http.Handler { return http.HandlerFunc(a.serveWebhook) }

func (a *Adapter) serveWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if s := a.cfg.Webhook.SecretToken; s != "" &&
		subtle.ConstantTimeCompare([]byte(r.Header.Get(secretHeader)), []byte(s)) != 1 {
		a.log.Warn("telegram: refused a webhook request with a wrong secret token", zap.String("remote", r.RemoteAddr))
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	rs := a.run.Load()
	if rs == nil {
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpdateBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			a.log.Warn("telegram: refused an oversized webhook request", zap.String("remote", r.RemoteAddr))
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		// The body was cut off (the connection broke, a proxy timed out):
		// the update was not read, so it must not be answered 200, which
		// would tell Telegram it was handled.
		a.log.Warn("telegram: could not read a webhook request", zap.String("remote", r.RemoteAddr), zap.Error(err))
		http.Error(w, "could not read the body", http.StatusBadRequest)
		return
	}
	if !json.Valid(body) {
		a.log.Warn("telegram: refused a webhook request that is not JSON", zap.String("remote", r.RemoteAddr), zap.Int("bytes", len(body)))
		http.Error(w, "body is not JSON", http.StatusBadRequest)
		return
	}
	var u tgbotapi.Update
	if err := json.Unmarshal(body, &u); err != nil || u.UpdateID <= 0 {
		fields := []zap.Field{zap.Int("update_id", updateIDOf(body)), zap.Int("bytes", len(body))}
		if err != nil {
			fields = append(fields, zap.Error(err))
		}
		a.log.Warn("telegram: skipping a malformed update", fields...)
		w.WriteHeader(http.StatusOK)
		return
	}
	switch err := rs.deliver(&u); {
	case errors.Is(err, errRunEnded):
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	case err != nil:
		// Not taken: Telegram sends it again. Retry-After is advice;
		// Telegram chooses its own pace.
		a.log.Warn("telegram: a webhook update was refused; Telegram will send it again",
			zap.Int("update_id", u.UpdateID), zap.Error(err))
		w.Header().Set("Retry-After", "1")
		http.Error(w, "refused, send it again", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// runWebhook serves the webhook (if Listen is set) and registers it (if
// URL is set), then waits for ctx to end.
func (a *Adapter) runWebhook(ctx context.Context) error {
	wc := a.cfg.Webhook
	var serveErr chan error
	if wc.Listen != "" {
		ln, err := new(net.ListenConfig).Listen(ctx, "tcp", wc.Listen)
		if err != nil {
			return fmt.Errorf("telegram: webhook: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle(wc.Path, a.WebhookHandler())
		srv := &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          zap.NewStdLog(a.log),
		}
		serveErr = make(chan error, 1)
		go func() { serveErr <- srv.Serve(ln) }()
		a.setAddr(ln.Addr())
		defer func() {
			a.setAddr(nil)
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				srv.Close()
			}
			<-serveErr
		}()
		a.log.Info("telegram: serving the webhook", zap.String("addr", ln.Addr().String()), zap.String("path", wc.Path))
	}

	if wc.URL != "" {
		params := tgbotapi.Params{"url": wc.URL}
		params.AddNonEmpty("secret_token", wc.SecretToken)
		params.AddNonZero("max_connections", wc.MaxConnections)
		if a.cfg.AllowedUpdates != nil { // AddInterface would send a nil slice as "null"
			if err := params.AddInterface("allowed_updates", a.cfg.AllowedUpdates); err != nil {
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
		serveErr <- err // for the deferred shutdown
		return fmt.Errorf("telegram: webhook server: %w", err)
	}
}
