package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// Conversations (Context.Next). A chat is in conversation from a handler's
// first Next until the handling of its event ends. Meanwhile HandleEvent
// still queues the chat's events, in order, and also lists them in the
// conversation; a waiting handler looks through the list, on its own
// goroutine, for the first event its accept function takes, and claims
// it. A claimed event's queued task then skips it; the others are handled
// by the matchers after the handler, in their order. No user code runs on
// the adapter's goroutine or under the engine's lock.
//
// A handler run again on an event taken up from the journal at start may
// wait for an answer the user sent while the bot was down, which arrives
// before the handler reaches Next: for such a chat the conversation is
// opened when its first recovered event is queued (see expectConversation),
// so the events queued behind it are offered to the handler's Next.

// conversation is the state of one chat in conversation.
type conversation struct {
	events  []*pendingEvent  // arrived during the conversation, oldest first
	taken   []journal.Record // journal records of the events the handler took
	changed chan struct{}    // closed when events grows or the conversation ends
	ended   error            // why it ended, once it has
}

// pendingEvent is an event queued during a conversation; whoever sets
// claimed first — a waiting handler or the event's queued task — has it.
type pendingEvent struct {
	ev      platform.Event
	rec     journal.Record // the event's journal record, or nil
	claimed atomic.Bool
}

// inboundKey returns the key under which HandleEvent queues ev: its chat,
// or, for an event without one, its user.
func inboundKey(ev platform.Event) string {
	chatID := ev.Chat.ID
	if chatID == "" {
		chatID = "user:" + ev.From.ID
	}
	return chatKey(ev.Platform, chatID)
}

// listen returns the pending event to queue ev with if its chat is in
// conversation, or nil. The caller queues ev, then calls heard or unheard.
func (e *Engine) listen(key string, ev platform.Event, rec journal.Record) *pendingEvent {
	if e.conversing.Load() == 0 {
		return nil
	}
	e.convMu.Lock()
	defer e.convMu.Unlock()
	if e.convs[key] == nil {
		return nil
	}
	return &pendingEvent{ev: ev, rec: rec}
}

// heard lists pe, queued, in its chat's conversation.
func (e *Engine) heard(key string, pe *pendingEvent) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	if c := e.convs[key]; c != nil {
		c.events = append(c.events, pe)
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// overflow ends the conversation of key with err: the chat's queue is
// full, and the answer a handler waits for may be stuck behind the event
// that was refused (an adapter such as Telegram offers it again before
// any later one), so the handler is told at once instead.
func (e *Engine) overflow(key string, err error) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	if c := e.convs[key]; c != nil && c.ended == nil {
		c.ended = fmt.Errorf("engine: the chat's queue filled up during the conversation: %w", err)
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// endConversation ends key's conversation, if any, when the handling of
// the event whose handler started it is over, and returns the journal
// records of the events its handler took: they are done with the event.
func (e *Engine) endConversation(key string) []journal.Record {
	if e.conversing.Load() == 0 {
		return nil
	}
	e.convMu.Lock()
	defer e.convMu.Unlock()
	c := e.convs[key]
	if c == nil {
		return nil
	}
	delete(e.convs, key)
	e.conversing.Add(-1)
	if c.ended == nil {
		c.ended = errHandlerDone
	}
	close(c.changed)
	return c.taken
}

// expectConversation opens key's conversation, if none is open, before
// its handler asks: the events queued from now on are listed in it. The
// handling of the event queued just before ends it, as its own Next
// would have.
func (e *Engine) expectConversation(key string) {
	e.convMu.Lock()
	defer e.convMu.Unlock()
	if e.convs[key] == nil {
		e.convs[key] = &conversation{changed: make(chan struct{})}
		e.conversing.Add(1)
	}
}

// errHandlerDone ends the waits of a conversation whose handler returned.
var errHandlerDone = context.Canceled

// await waits for the next event of ev's chat that accept takes, among
// those that arrived since the chat's conversation began; start, if not
// nil, runs once the chat is in conversation, before the wait. It is
// Context.Next's engine side.
func (e *Engine) await(ctx context.Context, st *eventState, c *conversation, accept func(platform.Event) bool) (*pendingEvent, error) {
	// Kept small: a waiting handler's goroutine keeps this frame, and those
	// below it, for as long as the user takes to answer.
	parked := false
	defer func() {
		if parked {
			e.unparkHandler(st)
		}
	}()
	for seen := 0; ; {
		var pe *pendingEvent
		var changed <-chan struct{}
		var err error
		pe, seen, changed, err = e.scan(c, seen, accept)
		if pe != nil || err != nil {
			return pe, err
		}
		if !parked {
			parked = true
			e.parkHandler(st)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.stopping:
			return nil, ErrEngineClosed
		}
	}
}

// scan looks through the events of c after the first seen for one accept
// takes, and claims it; else it returns the channel closed when c changes,
// or why c ended; and how many it has seen.
//
//go:noinline
func (e *Engine) scan(c *conversation, seen int, accept func(platform.Event) bool) (*pendingEvent, int, <-chan struct{}, error) {
	e.convMu.Lock()
	events := c.events[seen:len(c.events):len(c.events)]
	changed, ended := c.changed, c.ended
	e.convMu.Unlock()
	for _, pe := range events {
		seen++
		if !pe.claimed.Load() && e.accepts(accept, pe.ev) && pe.claimed.CompareAndSwap(false, true) {
			e.awaited.Add(1)
			if pe.rec != nil {
				e.convMu.Lock()
				c.taken = append(c.taken, pe.rec)
				e.convMu.Unlock()
			}
			return pe, seen, nil, nil
		}
	}
	return nil, seen, changed, ended
}

// parkHandler and unparkHandler take a waiting handler out of the handler
// slots and the handler timeout, and back: see executor.park.
//
//go:noinline
func (e *Engine) parkHandler(st *eventState) {
	if hc, ok := st.ctx.(*handlerContext); ok {
		hc.pause()
	}
	e.in.Park(inboundKey(st.event))
}

//go:noinline
func (e *Engine) unparkHandler(st *eventState) {
	e.in.Unpark(inboundKey(st.event))
	if hc, ok := st.ctx.(*handlerContext); ok {
		hc.resume()
	}
}

// converse puts ev's chat in conversation, if it is not, and returns it.
//
//go:noinline
func (e *Engine) converse(ev *platform.Event) (*conversation, error) {
	key := inboundKey(*ev)
	e.convMu.Lock()
	defer e.convMu.Unlock()
	if e.closed.Load() {
		return nil, ErrEngineClosed
	}
	c := e.convs[key]
	if c == nil {
		c = &conversation{changed: make(chan struct{})}
		e.convs[key] = c
		e.conversing.Add(1)
	}
	return c, nil
}

// accepts runs accept, recovering a panic: it is logged and counted like a
// handler's, and does not accept.
func (e *Engine) accepts(accept func(platform.Event) bool, ev platform.Event) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			e.handlerPanics.Add(1)
			e.log.Error("Next's accept function panicked", zap.Any("panic", r),
				zap.ByteString("stack", debug.Stack()), zap.String("platform", ev.Platform), zap.String("chat", ev.Chat.ID))
		}
	}()
	return accept(ev)
}
