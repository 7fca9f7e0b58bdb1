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

// interactions is the chat action of one run of a handling (the answers
// are the handling's: see handling.answered). The Contexts of the run
// share it.
type interactions struct {
	mu     sync.Mutex
	action *chatAction // the chat action shown, or nil
	ended  bool        // the run ended: no chat action starts
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
// was not before. h.mu must be held.
func (h *handling) claimLocked(id string) bool {
	x := h.extraLocked()
	if x.answered[id] {
		return false
	}
	if x.answered == nil {
		x.answered = make(map[string]bool)
	}
	x.answered[id] = true
	return true
}

// claim is claimLocked with the lock taken.
func (h *handling) claim(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.claimLocked(id)
}

// release undoes a claim after an answer that failed, but may succeed when
// tried again.
func (h *handling) release(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.x != nil {
		delete(h.x.answered, id)
	}
}

// answer is the one way the engine answers a press or an inline query
// (op): once per handling, as an effect of c's (a replay gets the first
// answer's outcome back), an answer that failed for a reason that may
// pass may be tried again; what says which one, for the error.
func (c *Context) answer(ev platform.Event, in journal.Interaction, what string) error {
	h := c.ev.h
	key := answerKey(ev)
	fx, pos, err := c.take(fxAnswer, sum(string(in.Op), key), what)
	switch {
	case err != nil:
		return err
	case fx != nil:
		return fx.error()
	}
	if !h.claim(key) {
		err := platform.Permanent(fmt.Errorf("engine: %s %s: %w", what, ev.ID, platform.ErrAlreadyAnswered))
		c.ev.record(pos, effect{kind: fxAnswer, sum: sum(string(in.Op), key), what: what, v: err})
		return err
	}
	ctx, cancel := context.WithTimeout(c.ev.ctx, answerTimeout)
	defer cancel()
	_, err = c.ev.e.interact(ctx, ev.Platform, in)
	if err != nil && !platform.IsPermanent(err) {
		h.release(key)
	}
	c.ev.record(pos, effect{kind: fxAnswer, sum: sum(string(in.Op), key), what: what, v: err})
	return err
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
	return c.answer(ev, journal.Interaction{Op: journal.OpAnswerCallback, Event: ev, Answer: a}, "button press")
}

// answerPresses answers empty every press of h — its own event, and
// those its waits took — that no handler answered, so the button stops
// being busy: when the handling ends, and while it waits. Each answer is
// bounded by answerTimeout and by a forced shutdown; a press the adapter
// answered itself is logged at debug level, other failures as warnings,
// at most one a message every 10 s.
func (e *Engine) answerPresses(h *handling) {
	h.mu.Lock()
	var presses []platform.Event
	if h.x != nil {
		presses = h.x.presses
	}
	if h.start.Kind == platform.EventCallback {
		presses = append([]platform.Event{h.start}, presses...)
	}
	var unanswered []platform.Event
	for _, p := range presses {
		if h.claimLocked(answerKey(p)) {
			unanswered = append(unanswered, p)
		}
	}
	h.mu.Unlock()
	for _, p := range unanswered {
		if _, ok := e.adapter(p.Platform).(platform.CallbackAnswerer); !ok {
			continue
		}
		// The run's context may have ended (a time limit, a wait): the
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
