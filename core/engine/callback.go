package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// answerTimeout bounds one answer to a button press or an inline query.
const answerTimeout = 5 * time.Second

// interactions is what an event's handling does besides sending: the
// presses and inline queries it answered, the presses its handlers took
// with Next, and its chat action. The Contexts of one event share it.
type interactions struct {
	mu       sync.Mutex
	answered map[string]bool  // by answerKey: presses and queries answered, or being answered
	presses  []platform.Event // presses Next took, answered empty at the end unless answered
	action   *chatAction      // the chat action shown, or nil
	ended    bool             // endInteractions ran: no chat action starts
}

// answerKey names ev among the presses and queries of one handling: by
// its QueryID, else its ID; an event with neither is the handling's own.
func answerKey(ev platform.Event) string {
	switch {
	case ev.QueryID != "":
		return "q:" + ev.QueryID
	case ev.ID != "":
		return "i:" + ev.ID
	}
	return "own"
}

// claimLocked marks the event of key id answered and reports whether it
// was not before. i.mu must be held.
func (i *interactions) claimLocked(id string) bool {
	if i.answered[id] {
		return false
	}
	if i.answered == nil {
		i.answered = make(map[string]bool)
	}
	i.answered[id] = true
	return true
}

// claim is claimLocked with the lock taken.
func (i *interactions) claim(id string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.claimLocked(id)
}

// release undoes a claim after an answer that failed, but may succeed when
// tried again.
func (i *interactions) release(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.answered, id)
}

// adapter returns the engine's adapter named name, or nil.
func (e *Engine) adapter(name string) platform.Adapter {
	for _, a := range e.adapters {
		if a.Name() == name {
			return a
		}
	}
	return nil
}

// Answer answers the button press the handler runs for (an
// [platform.EventCallback]) with text: a passing notification, or, with
// alert, an alert the user must dismiss; an empty text shows nothing. It
// is shorthand for AnswerCallback(c.Event(), platform.CallbackAnswer{Text:
// text, Alert: alert}); see AnswerCallback.
func (c *Context) Answer(text string, alert bool) error {
	return c.AnswerCallback(c.Event(), platform.CallbackAnswer{Text: text, Alert: alert})
}

// AnswerCallback answers the button press ev, the handler's own event or
// one its Next returned, with a, and returns once the platform took the
// answer (within 5 s). Platforms that wait for an answer (Telegram) show
// the button busy until then: answer first, then do the slow work.
//
// A press is answered at most once. When the handling of the event ends
// (its handlers returned) and a press the handling had — its own event or
// one Next took — was not answered, the engine answers it empty, at once,
// so the button stops being busy; an adapter may also answer a press
// itself when no answer came in time (Telegram's, 10 s after it arrived).
// An answer that fails for a reason that may pass (a network error) may
// be tried again; the others stand.
//
// AnswerCallback returns nil on success; a permanent error wrapping
// platform.ErrInvalidMessage for an event that is not a press; one
// wrapping platform.ErrUnsupported on a platform without answers (the
// adapter is no platform.CallbackAnswerer: nothing waits for one, and a
// handler may reply instead); one wrapping platform.ErrAlreadyAnswered
// for a press answered before; and otherwise the adapter's error.
func (c *Context) AnswerCallback(ev platform.Event, a platform.CallbackAnswer) error {
	if ev.Kind != platform.EventCallback {
		return platform.Permanent(fmt.Errorf("engine: answering event %s: %w: it is a %s, not a button press", ev.ID, platform.ErrInvalidMessage, ev.Kind))
	}
	if _, ok := c.ev.e.adapter(ev.Platform).(platform.CallbackAnswerer); !ok {
		return platform.Permanent(fmt.Errorf("engine: answering a button press on %s: %w", ev.Platform, platform.ErrUnsupported))
	}
	act := &c.ev.act
	key := answerKey(ev)
	if !act.claim(key) {
		return platform.Permanent(fmt.Errorf("engine: button press %s: %w", ev.ID, platform.ErrAlreadyAnswered))
	}
	ctx, cancel := context.WithTimeout(c.ev.ctx, answerTimeout)
	defer cancel()
	_, err := c.ev.e.interact(ctx, ev.Platform, journal.Interaction{Op: journal.OpAnswerCallback, Event: ev, Answer: a})
	if err != nil && !platform.IsPermanent(err) {
		act.release(key)
	}
	return err
}

// tookPress notes that a handler's Next took got, so that the end of the
// handling answers it if it is an unanswered press.
//
//go:noinline
func (ev *eventState) tookPress(got *platform.Event) {
	if got.Kind != platform.EventCallback {
		return
	}
	ev.act.mu.Lock()
	defer ev.act.mu.Unlock()
	ev.act.presses = append(ev.act.presses, *got)
}

// endInteractions ends what st's handling left going once its handlers
// returned: it stops the chat action, waiting for its goroutine, and
// answers empty every press of the handling (its own event, and those Next
// took) that no handler answered. Each answer is bounded by answerTimeout
// and by a forced shutdown; a press the adapter answered itself is logged
// at debug level, other failures as warnings, at most one a message every
// 10 s.
func (e *Engine) endInteractions(st *eventState) {
	act := &st.act
	act.mu.Lock()
	act.ended = true
	action := act.action
	act.action = nil
	presses := act.presses
	if st.event.Kind == platform.EventCallback {
		presses = append([]platform.Event{st.event}, presses...)
	}
	var unanswered []platform.Event
	for _, p := range presses {
		if act.claimLocked(answerKey(p)) {
			unanswered = append(unanswered, p)
		}
	}
	act.mu.Unlock()
	action.stop()
	for _, p := range unanswered {
		if _, ok := e.adapter(p.Platform).(platform.CallbackAnswerer); !ok {
			continue
		}
		// The handling's context may have ended (a time limit): the
		// answer still goes, bounded by its own and by a forced shutdown.
		ctx, cancel := context.WithTimeout(e.in.Base(), answerTimeout)
		_, err := e.interact(ctx, p.Platform, journal.Interaction{Op: journal.OpAnswerCallback, Event: p})
		cancel()
		fields := []zap.Field{zap.String("platform", p.Platform), zap.String("event", p.ID), zap.Error(err)}
		switch {
		case err == nil:
		case errors.Is(err, platform.ErrAlreadyAnswered):
			e.log.Debug("engine: the adapter answered the button press already", fields...)
		default:
			e.limitedLog.Warn("engine: answering an unanswered button press failed", fields...)
		}
	}
}
