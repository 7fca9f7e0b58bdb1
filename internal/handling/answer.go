package handling

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/platform"
)

// answerTimeout bounds one answer to a button press or an inline query.
const answerTimeout = 5 * time.Second

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
func (h *Handling) claimLocked(id string) bool {
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
func (h *Handling) claim(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.claimLocked(id)
}

// release undoes a claim after an answer that failed, but may succeed when
// tried again.
func (h *Handling) release(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.x != nil {
		delete(h.x.answered, id)
	}
}

// answer is the one way a press or an inline query (in) is answered: once
// per handling, as an effect of c's (a replay gets the first answer's
// outcome back); an answer that failed for a reason that may pass may be
// tried again. what says which one, for the error.
func (c *Ctx) answer(ev platform.Event, in journal.Interaction, what string) error {
	r := c.run
	h := r.h
	key := answerKey(ev)
	s := sum(string(in.Op), key)
	fx, pos, err := c.take(fxAnswer, s, what)
	switch {
	case err != nil:
		return err
	case fx != nil:
		return fx.error()
	}
	if !h.claim(key) {
		err := platform.Permanent(fmt.Errorf("engine: %s %s: %w", what, ev.ID, platform.ErrAlreadyAnswered))
		r.record(pos, effect{kind: fxAnswer, sum: s, what: what, v: err})
		return err
	}
	ctx, cancel := context.WithTimeout(r.ctx, answerTimeout)
	defer cancel()
	_, err = r.env.Interact(ctx, ev.Platform, in)
	if err != nil && !platform.IsPermanent(err) {
		h.release(key)
	}
	if IsOutage(err) {
		r.outage(pos, err) // answered in the run again after it
		return err
	}
	r.record(pos, effect{kind: fxAnswer, sum: s, what: what, v: err})
	return err
}

// AnswerCallback answers the button press ev with a: see core/context's
// Context.AnswerCallback.
func (c *Ctx) AnswerCallback(ev platform.Event, a platform.CallbackAnswer) error {
	_, can := c.run.env.Adapter(ev.Platform).(platform.CallbackAnswerer)
	return c.answerAs(ev, platform.EventCallback, can, "a", "button press",
		journal.Interaction{Op: journal.OpAnswerCallback, Event: ev, Answer: a})
}

// AnswerInline answers the inline query the handler runs for with a: see
// core/context's Context.AnswerInline.
func (c *Ctx) AnswerInline(a platform.InlineAnswer) error {
	ev := c.run.event
	_, can := c.run.env.Adapter(ev.Platform).(platform.InlineAnswerer)
	return c.answerAs(ev, platform.EventInlineQuery, can, "an", "inline query",
		journal.Interaction{Op: journal.OpAnswerInline, Event: ev, Inline: a})
}

// AnswerPreCheckout answers the payment's last check the handler runs for
// (an EventPreCheckout) with a: see core/context's Context.AnswerPreCheckout.
func (c *Ctx) AnswerPreCheckout(a platform.PreCheckoutAnswer) error {
	ev := c.run.event
	_, can := c.run.env.Adapter(ev.Platform).(platform.PreCheckoutAnswerer)
	return c.answerAs(ev, platform.EventPreCheckout, can, "a", "payment's check",
		journal.Interaction{Op: journal.OpAnswerPreCheckout, Event: ev, PreCheckout: a})
}

// AnswerJoinRequest approves or declines the join request the handler
// runs for: see core/context's Context.AnswerJoinRequest.
func (c *Ctx) AnswerJoinRequest(approve bool) error {
	ev := c.run.event
	_, can := c.run.env.Adapter(ev.Platform).(platform.JoinRequestAnswerer)
	return c.answerAs(ev, platform.EventJoinRequest, can, "a", "join request",
		journal.Interaction{Op: journal.OpAnswerJoinRequest, Event: ev, Approve: approve})
}

// answerAs answers ev, which must be of kind (what, after its article
// a), through in, if its adapter can (can).
func (c *Ctx) answerAs(ev platform.Event, kind platform.EventKind, can bool, a, what string, in journal.Interaction) error {
	if ev.Kind != kind {
		return platform.Permanent(fmt.Errorf("engine: answering event %s: %w: it is a %s, not %s %s", ev.ID, platform.ErrInvalidMessage, ev.Kind, a, what))
	}
	if !can {
		return platform.Permanent(fmt.Errorf("engine: answering %s %s on %s: %w", a, what, ev.Platform, platform.ErrUnsupported))
	}
	return c.answer(ev, in, what)
}

// AnswerPresses answers empty every press of h — its own event, and
// those its waits took — that no handler answered, so the button stops
// being busy: when the handling ends, and while it waits. Each answer is
// bounded by answerTimeout and by a forced shutdown (env.Base); a press
// the adapter answered itself is logged at debug level, other failures as
// warnings to warn.
func (h *Handling) AnswerPresses(env Env, warn *ratelog.Logger) {
	h.mu.Lock()
	var presses []platform.Event
	if h.x != nil {
		presses = h.x.presses
	}
	if k := h.start.Kind; k == platform.EventCallback || k == platform.EventPreCheckout {
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
		in := journal.Interaction{Op: journal.OpAnswerCallback, Event: p}
		a := env.Adapter(p.Platform)
		if p.Kind == platform.EventPreCheckout {
			// Unanswered, a payment's check is refused: the zero answer.
			in.Op = journal.OpAnswerPreCheckout
			if _, ok := a.(platform.PreCheckoutAnswerer); !ok {
				continue
			}
		} else if _, ok := a.(platform.CallbackAnswerer); !ok {
			continue
		}
		// The run's context may have ended (a time limit, a wait): the
		// answer still goes, bounded by its own and by a forced shutdown.
		ctx, cancel := context.WithTimeout(env.Base(), answerTimeout)
		_, err := env.Interact(ctx, p.Platform, in)
		cancel()
		fields := []zap.Field{zap.String("platform", p.Platform), zap.String("event", p.ID), zap.Error(err)}
		switch {
		case err == nil:
		case errors.Is(err, platform.ErrAlreadyAnswered):
			env.Logger().Debug("engine: the adapter answered the button press already", fields...)
		default:
			warn.Warn("engine: answering an unanswered button press failed", fields...)
		}
	}
}
