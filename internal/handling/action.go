package handling

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// ChatActionInterval is how often a chat action is shown again while the
// handling goes on: Telegram shows one for 5 s.
const ChatActionInterval = 4 * time.Second

// actions is the chat action of one run of a handling. The Contexts of
// the run share it.
type actions struct {
	mu     sync.Mutex
	action *chatAction // the chat action shown, or nil
	ended  bool        // the run ended: no chat action starts
}

// chatAction is a chat action shown by a goroutine of the run's.
type chatAction struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
}

// stop stops a and waits for its goroutine; a nil a is none.
func (a *chatAction) stop() {
	if a == nil {
		return
	}
	a.cancel()
	<-a.done
}

// ChatAction shows action in the event's chat while the handler works on
// its answer: see core/context's Context.ChatAction.
func (c *Ctx) ChatAction(action platform.ChatAction) error {
	r := c.run
	if r.event.Chat.ID == "" {
		return ErrNoChat
	}
	if _, ok := r.env.Adapter(r.event.Platform).(platform.ChatActor); !ok {
		return platform.Permanent(fmt.Errorf("engine: chat action on %s: %w", r.event.Platform, platform.ErrUnsupported))
	}
	if action == "" {
		return platform.Permanent(fmt.Errorf("engine: %w: an empty chat action", platform.ErrInvalidMessage))
	}
	if c.replaying() {
		return nil // shown when the handler first ran
	}
	sends := r.sends.Load()
	ctx, cancel := context.WithCancel(r.ctx)
	a := &chatAction{cancel: cancel, done: make(chan struct{})}
	r.act.mu.Lock()
	if r.act.ended || r.ctx.Err() != nil {
		r.act.mu.Unlock()
		cancel()
		if err := r.ctx.Err(); err != nil {
			return err
		}
		return context.Canceled
	}
	old := r.act.action
	r.act.action = a
	r.act.mu.Unlock()
	old.stop()
	go func() {
		defer close(a.done)
		r.showAction(ctx, action, sends)
	}()
	return nil
}

// StopChatAction stops the chat action ChatAction shows, if any, and
// waits until none is sent any more.
func (c *Ctx) StopChatAction() {
	r := c.run
	r.act.mu.Lock()
	a := r.act.action
	r.act.action = nil
	r.act.mu.Unlock()
	a.stop()
}

// End ends the run: its chat action stops (End waits for its goroutine),
// and none starts after.
func (r *Run) End() {
	r.act.mu.Lock()
	r.act.ended = true
	a := r.act.action
	r.act.action = nil
	r.act.mu.Unlock()
	a.stop()
}

// showAction shows action in r's chat every ChatActionInterval until ctx
// ends or r's handlers made a send since they had made sends sends; a
// retry-after the platform asks for longer than the interval postpones the
// next.
func (r *Run) showAction(ctx context.Context, action platform.ChatAction, sends int64) {
	timer := time.NewTimer(0) // heartbeat: the action shown again every ChatActionInterval
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if r.sends.Load() != sends {
			return // the handler answered: the platform hides the action
		}
		wait := ChatActionInterval
		rctx, cancel := context.WithTimeout(ctx, ChatActionInterval)
		_, err := r.env.Interact(rctx, r.event.Platform, journal.Interaction{Op: journal.OpChatAction, Chat: r.event.Chat, Action: action})
		cancel()
		if err != nil && ctx.Err() == nil {
			r.env.Logger().Debug("engine: showing a chat action failed", zap.String("platform", r.event.Platform),
				zap.String("chat", r.event.Chat.ID), zap.String("action", string(action)), zap.Error(err))
			if platform.IsPermanent(err) {
				return
			}
			if d, ok := platform.RetryAfterOf(err); ok && d > wait {
				wait = d
			}
		}
		timer.Reset(wait)
	}
}

// Download fetches the file att of an event of c's platform: see
// core/context's Context.Download.
func (c *Ctx) Download(ctx context.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	env, name := c.run.env, c.run.event.Platform
	if _, ok := env.Adapter(name).(platform.Downloader); !ok {
		return nil, platform.Permanent(fmt.Errorf("engine: downloading a file on %s: %w", name, platform.ErrUnsupported))
	}
	return env.Download(ctx, name, att, maxBytes)
}
