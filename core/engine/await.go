package engine

import (
	"context"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// The handlers waiting in Context.Next, by inbound chat key, oldest first.
// HandleEvent offers each event to its chat's waiters before queueing it.

// awaiter is one handler waiting in Context.Next.
type awaiter struct {
	accept func(platform.Event) bool
	got    chan platform.Event // buffered: one event, sent once
}

// inboundKey returns the key under which HandleEvent queues ev: its chat,
// or, for an event without one, its user.
func inboundKey(ev platform.Event) string {
	chatID := ev.Chat.ID
	if chatID == "" {
		chatID = "user:" + ev.From.ID
	}
	return ev.Platform + ":" + chatID
}

// engineAwaiter is the engine as core/context's Awaiter, for Context.Next;
// a type of its own keeps Await out of Engine's methods.
type engineAwaiter Engine

// Await waits for the next event of ev's chat that accept accepts.
func (a *engineAwaiter) Await(ctx context.Context, ev platform.Event, accept func(platform.Event) bool) (platform.Event, error) {
	e := (*Engine)(a)
	key := inboundKey(ev)
	w := &awaiter{accept: accept, got: make(chan platform.Event, 1)}
	e.awaitMu.Lock()
	if e.closed.Load() {
		e.awaitMu.Unlock()
		return platform.Event{}, ErrEngineClosed
	}
	e.awaiting[key] = append(e.awaiting[key], w)
	e.awaitMu.Unlock()

	select {
	case got := <-w.got:
		return got, nil
	case <-ctx.Done():
	case <-e.stopping:
	}
	if !e.forget(key, w) {
		// An event was handed over as the wait ended: it is the
		// handler's, not lost.
		return <-w.got, nil
	}
	if err := ctx.Err(); err != nil {
		return platform.Event{}, err
	}
	return platform.Event{}, ErrEngineClosed
}

// forget removes w from the waiters of key; it reports false if w was no
// longer there (an event was handed to it).
func (e *Engine) forget(key string, w *awaiter) bool {
	e.awaitMu.Lock()
	defer e.awaitMu.Unlock()
	ws := e.awaiting[key]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			if len(ws) == 0 {
				delete(e.awaiting, key)
			} else {
				e.awaiting[key] = ws
			}
			return true
		}
	}
	return false
}

// handOver gives ev to the oldest waiter of its chat that accepts it, and
// reports whether one did. A panicking accept is logged and counted like a
// handler's, and does not accept.
func (e *Engine) handOver(ev platform.Event) bool {
	key := inboundKey(ev)
	e.awaitMu.Lock()
	defer e.awaitMu.Unlock()
	ws := e.awaiting[key]
	for i, w := range ws {
		if !e.accepts(w, ev) {
			continue
		}
		ws = append(ws[:i], ws[i+1:]...)
		if len(ws) == 0 {
			delete(e.awaiting, key)
		} else {
			e.awaiting[key] = ws
		}
		w.got <- ev // never blocks: one event per waiter, buffered
		return true
	}
	return false
}

func (e *Engine) accepts(w *awaiter, ev platform.Event) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			e.handlerPanics.Add(1)
			e.log.Error("Next's accept function panicked", zap.Any("panic", r),
				zap.ByteString("stack", debug.Stack()), zap.String("platform", ev.Platform), zap.String("chat", ev.Chat.ID))
		}
	}()
	return w.accept(ev)
}
