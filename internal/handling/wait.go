package handling

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldbot/herald/platform"
)

// Next waits for the next event from the user (anyone, with anyone) in
// the chat that accept accepts: see core/context's Context.Next.
func (c *Ctx) Next(ctx context.Context, accept func(platform.Event) bool, anyone bool) (platform.Event, error) {
	return c.wait(ctx, accept, -1, anyone)
}

// Prompt replies with msg and waits for the user's answer: see
// core/context's Context.Prompt.
func (c *Ctx) Prompt(ctx context.Context, msg platform.OutboundMessage) (platform.Event, error) {
	r := c.run
	if r.chatKey == "" {
		return platform.Event{}, ErrNoChat
	}
	f, q := c.send(r.chatKey, r.event.Chat, msg, true)
	if f.IsDone() {
		_, err := f.Result()
		switch {
		case errors.Is(err, ErrWaiting) || errors.Is(err, ErrDiverged):
			return platform.Event{}, err
		case q < 0 && err != nil: // refused before it was queued: no question to answer
			return platform.Event{}, fmt.Errorf("%w: %w", ErrPromptNotSent, err)
		}
	}
	return c.wait(ctx, nil, q, false)
}

// wait is Next; question is the place of Prompt's question, or -1.
func (c *Ctx) wait(ctx context.Context, accept func(platform.Event) bool, question int, anyone bool) (platform.Event, error) {
	r := c.run
	env, h := r.env, r.h
	if r.event.Chat.ID == "" {
		return platform.Event{}, ErrNoChat
	}
	if c.scope().errs > 0 || c.scope().middleware {
		return platform.Event{}, errNoWait
	}
	if err := r.ctx.Err(); err != nil {
		return platform.Event{}, err // the run is over: a goroutine it left cannot wait
	}
	user := r.event.From.ID
	messages := accept == nil
	switch {
	case messages && anyone:
		accept = func(ev platform.Event) bool { return ev.Kind == platform.EventMessage }
	case messages:
		accept = func(ev platform.Event) bool { return ev.Kind == platform.EventMessage && ev.From.ID == user }
	case !anyone:
		inner := accept
		accept = func(ev platform.Event) bool { return ev.From.ID == user && inner(ev) }
	}
	what := "a wait"
	if anyone {
		what = "a wait in the chat"
	}
	fx, pos, err := c.take(fxWait, sum(what), what)
	switch {
	case err != nil:
		return platform.Event{}, err
	case fx != nil && fx.done:
		if got, ok := fx.v.(*platform.Event); ok {
			return *got, nil
		}
		return platform.Event{}, fx.error()
	}
	end := func(got *platform.Event, err error) (platform.Event, error) {
		fx := effect{kind: fxWait, sum: sum(what), what: what, done: true, v: err}
		if got != nil {
			fx.v = got
		}
		r.record(pos, fx)
		h.mu.Lock()
		h.wait = nil
		h.mu.Unlock()
		if got != nil {
			return *got, nil
		}
		return platform.Event{}, err
	}
	if err := ctx.Err(); err != nil && fx == nil {
		return end(nil, err)
	}
	switch {
	case r.offer != nil && !r.offerTaken && env.IsCancel(r.offer, user):
		r.offerTaken = true
		h.mu.Lock()
		if r.offerRec != nil {
			h.extraLocked().taken = append(h.extraLocked().taken, r.offerRec)
		}
		h.mu.Unlock()
		return end(nil, ErrCancelled)
	case r.offer != nil && !r.offerTaken:
		if env.Accepts(accept, *r.offer) {
			r.offerTaken = true
			got := *r.offer
			h.mu.Lock()
			if r.offerRec != nil {
				h.extraLocked().taken = append(h.extraLocked().taken, r.offerRec)
			}
			if got.Kind == platform.EventCallback {
				h.extraLocked().presses = append(h.extraLocked().presses, got)
			}
			h.mu.Unlock()
			return end(&got, nil)
		}
	case r.resume != nil:
		reason := r.resume
		r.resume = nil
		return end(nil, reason)
	}
	if question >= 0 {
		if err := h.questionError(question); err != nil {
			return end(nil, fmt.Errorf("%w: %w", ErrPromptNotSent, err))
		}
	}
	// Nothing to take: the handling waits, until the deadline it had when
	// it first waited here.
	h.mu.Lock()
	w := h.wait
	h.mu.Unlock()
	if fx == nil || w == nil {
		deadline := r.waitBase().Add(env.ConversationWait())
		if d, ok := ctx.Deadline(); ok {
			deadline = d
		}
		w = &Wait{h: h, deadline: deadline, question: question, index: -1, messages: messages, anyone: anyone}
		if fx == nil {
			r.record(pos, effect{kind: fxWait, sum: sum(what), what: what})
		}
	}
	h.mu.Lock()
	if question >= 0 {
		// Again, as the wait is set: a question that failed since the
		// look above found no wait (questionFailed), and left its error
		// for this one to see.
		if err := h.questionErrorLocked(question); err != nil {
			h.mu.Unlock()
			return end(nil, fmt.Errorf("%w: %w", ErrPromptNotSent, err))
		}
	}
	r.waiting = true
	w.ended = nil
	h.wait = w
	h.mu.Unlock()
	if rc, ok := r.ctx.(*RunContext); ok {
		rc.End(ErrWaiting) // the run is over: what it left waiting ends
	}
	return platform.Event{}, ErrWaiting
}

// waitBase returns when a wait r begins started: now, or, for a run of a
// handling taken up after a restart, when the last event the run took
// arrived (the platform's time), so that a wait's bound counts from when
// it first began, not from the restart. A ctx with a deadline of its own
// is bound by it regardless.
func (r *Run) waitBase() time.Time {
	now := time.Now()
	if !r.recovered {
		return now
	}
	at := r.event.Time
	if r.offer != nil && r.offerTaken {
		at = r.offer.Time
	}
	if at.IsZero() || at.After(now) {
		return now
	}
	return at
}
