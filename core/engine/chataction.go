package engine

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// ChatActionInterval is how often [Context.ChatAction] shows its action
// again while the handling goes on: Telegram shows one for 5 s.
const ChatActionInterval = 4 * time.Second

// chatAction is a chat action shown by a goroutine of the engine's.
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

// ChatAction shows action ("typing", "upload_photo": see
// platform.ChatAction) in the event's chat while the handler works on its
// answer: now, and again every ChatActionInterval (4 s), until the event's
// handlers send something after the call (Reply, Send, Edit, Delete), a
// handler calls StopChatAction or ChatAction again (the new action takes
// the old one's place), or the handling of the event ends. The platform
// itself hides the action when the bot's message arrives.
//
// ChatAction returns at once: a goroutine of the engine's shows the
// action, and it has ended by the time the handling has. Chat actions are
// not messages: they do not go through the sender chain (no rate limit,
// retry or dead letter) nor the dispatcher's order; a failed one is logged
// at debug level, and a permanent failure ends the repetition.
//
// It returns ErrNoChat for an event without a chat, a permanent error
// wrapping platform.ErrUnsupported on a platform without chat actions (the
// adapter is no platform.ChatActor), one wrapping
// platform.ErrInvalidMessage for an empty action, and the handler's
// context's error once the handling ended.
func (c *Context) ChatAction(action platform.ChatAction) error {
	ev := c.ev
	if ev.event.Chat.ID == "" {
		return ErrNoChat
	}
	if _, ok := ev.e.adapter(ev.event.Platform).(platform.ChatActor); !ok {
		return platform.Permanent(fmt.Errorf("engine: chat action on %s: %w", ev.event.Platform, platform.ErrUnsupported))
	}
	if action == "" {
		return platform.Permanent(fmt.Errorf("engine: %w: an empty chat action", platform.ErrInvalidMessage))
	}
	if ev.replaying(c) {
		return nil // shown when the handler first ran
	}
	sends := ev.sends.Load()
	ctx, cancel := context.WithCancel(ev.ctx)
	a := &chatAction{cancel: cancel, done: make(chan struct{})}
	ev.act.mu.Lock()
	if ev.act.ended || ev.ctx.Err() != nil {
		ev.act.mu.Unlock()
		cancel()
		if err := ev.ctx.Err(); err != nil {
			return err
		}
		return context.Canceled
	}
	old := ev.act.action
	ev.act.action = a
	ev.act.mu.Unlock()
	old.stop()
	go func() {
		defer close(a.done)
		ev.e.showAction(ctx, ev, action, sends)
	}()
	return nil
}

// replaying reports whether c's handler is being run again over what it
// did before (see Context.Next).
func (st *eventState) replaying(c *Context) bool {
	st.h.mu.Lock()
	defer st.h.mu.Unlock()
	sc := c.scope()
	return sc.errs == 0 && !sc.anon && sc.pos < len(st.h.log)
}

// endRun stops the run's chat action, waiting for its goroutine; none
// starts after.
func (st *eventState) endRun() {
	st.act.mu.Lock()
	st.act.ended = true
	a := st.act.action
	st.act.action = nil
	st.act.mu.Unlock()
	a.stop()
}

// Typing is shorthand for ChatAction(platform.ActionTyping).
func (c *Context) Typing() error { return c.ChatAction(platform.ActionTyping) }

// StopChatAction stops the chat action ChatAction shows, if any, and
// waits until none is sent any more. The action already shown stays
// until the platform hides it (Telegram: within 5 s).
func (c *Context) StopChatAction() {
	ev := c.ev
	ev.act.mu.Lock()
	a := ev.act.action
	ev.act.action = nil
	ev.act.mu.Unlock()
	a.stop()
}

// showAction shows action in ev's chat through actor every
// ChatActionInterval until ctx ends or ev's handlers made a send since
// they had made sends sends; a retry-after the platform asks for longer
// than the interval postpones the next.
func (e *Engine) showAction(ctx context.Context, ev *eventState, action platform.ChatAction, sends int64) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if ev.sends.Load() != sends {
			return // the handler answered: the platform hides the action
		}
		wait := ChatActionInterval
		rctx, cancel := context.WithTimeout(ctx, ChatActionInterval)
		_, err := e.interact(rctx, ev.event.Platform, journal.Interaction{Op: journal.OpChatAction, Chat: ev.event.Chat, Action: action})
		cancel()
		if err != nil && ctx.Err() == nil {
			e.log.Debug("engine: showing a chat action failed", zap.String("platform", ev.event.Platform),
				zap.String("chat", ev.event.Chat.ID), zap.String("action", string(action)), zap.Error(err))
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
