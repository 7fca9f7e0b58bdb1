package telegram

import (
	"context"
	"fmt"

	"github.com/heraldbot/herald/platform"
)

// Receives reports whether the adapter serves a webhook listener: Webhook
// mode with Webhook.Listen set. Then, when a bot runs as several processes
// behind one webhook URL, each process listens (Run with Inbound.Listen)
// and only the one that leads the account registers the webhook with
// setWebhook, without listening itself while another Run listens in its
// process.
func (a *Adapter) Receives() bool {
	return a.cfg.Mode == Webhook && a.cfg.Webhook.Listen != ""
}

// receive serves the webhook on Webhook.Listen until ctx ends, handing
// each update's events to in.Handle as Run does (a refused update is answered
// 503, a repeated one dropped), and never calls Telegram: Run listening
// only. Commands addressed to the bot ("/start@herald_bot") are
// recognized with Config.Username, or the username an earlier Run of this
// Adapter learned. It returns nil once ctx ended, an error wrapping
// [ErrAlreadyRunning] when called during another listening Run, and an
// error when the adapter cannot listen.
func (a *Adapter) receive(ctx context.Context, in platform.Inbound) error {
	if !a.receiving.CompareAndSwap(false, true) {
		return fmt.Errorf("telegram: Run listening: %w", ErrAlreadyRunning)
	}
	defer a.receiving.Store(false)
	if a.running.Load() && a.run.Load() != nil {
		// A leading Run already listens in this process.
		return fmt.Errorf("telegram: Run listening: %w", ErrAlreadyRunning)
	}
	username := a.cfg.Username
	if u := a.username.Load(); username == "" && u != nil {
		username = *u
	}
	if username == "" {
		a.log.Warn("telegram: receiving without the bot's username (Config.Username): commands addressed as /cmd@bot reach the handlers as written")
	}
	rs := a.newRunState(in, username)
	a.run.Store(rs)
	defer func() {
		a.run.Store(nil)
		rs.close() // after this, handle is never called again
	}()
	stop, serveErr, err := a.listenWebhook(ctx)
	if err != nil {
		return err
	}
	defer stop()
	select {
	case <-ctx.Done():
		return nil
	case err := <-serveErr:
		return fmt.Errorf("telegram: webhook server: %w", a.red.Error(err))
	}
}
