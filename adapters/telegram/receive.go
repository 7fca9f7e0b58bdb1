package telegram

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldbot/herald/platform"
)

// Receives reports whether the adapter serves a webhook listener: Webhook
// mode with Webhook.Listen set. It implements [platform.Receiver].
func (a *Adapter) Receives() bool {
	return a.cfg.Mode == Webhook && a.cfg.Webhook.Listen != ""
}

// Receive serves the webhook on Webhook.Listen until ctx ends, handing
// each update's events to handle as [Adapter.RunConfirmed] does (a refused
// update is answered 503, a repeated one dropped), and never calls
// Telegram. It implements [platform.Receiver]: when a bot runs as several
// processes behind one webhook URL, each process receives, and only the
// one holding the account's lease runs RunConfirmed, which registers the
// webhook with setWebhook without listening itself while Receive runs in
// its process. Commands addressed to the bot ("/start@herald_bot") are
// recognized with Config.Username, or the username an earlier
// RunConfirmed of this Adapter learned.
//
// Receive returns nil once ctx ended, an error wrapping
// [ErrAlreadyRunning] when called during another Receive, and an error
// when the adapter is not set to receive or cannot listen.
func (a *Adapter) Receive(ctx context.Context, handle func(platform.Event) error) error {
	if handle == nil {
		return errors.New("telegram: Receive: nil handle func")
	}
	if !a.Receives() {
		return errors.New("telegram: Receive: not in Webhook mode with a Listen address")
	}
	if !a.receiving.CompareAndSwap(false, true) {
		return fmt.Errorf("telegram: Receive: %w", ErrAlreadyRunning)
	}
	defer a.receiving.Store(false)
	if a.running.Load() && a.run.Load() != nil {
		// A RunConfirmed already listens in this process.
		return fmt.Errorf("telegram: Receive: %w", ErrAlreadyRunning)
	}
	username := a.cfg.Username
	if u := a.username.Load(); username == "" && u != nil {
		username = *u
	}
	if username == "" {
		a.log.Warn("telegram: receiving without the bot's username (Config.Username): commands addressed as /cmd@bot reach the handlers as written")
	}
	rs := a.newRunState(handle, username)
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

var _ platform.Receiver = (*Adapter)(nil)
