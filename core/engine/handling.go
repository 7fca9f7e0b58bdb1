package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// A handling is what the engine does with one event: it runs the matching
// handlers (the first run) and, for a handler that waits in Next or
// Prompt, runs them again from the top each time an event arrives that
// may be the one it waits for (a replay). The handling's effects — sends,
// waits, answers, state reads and writes, Once results — form one log,
// numbered by their place in it; every run takes its effects in the same
// order, and a replay gets each recorded one back instead of doing it
// again. So a waiting conversation is its log, not a goroutine: between
// two events it holds no goroutine and no handler slot.
//
// The effects' places name them across processes and restarts too
// (effectID): a handler run again on its event after a crash makes its
// sends under the same ids, which the journal knows.

// ErrWaiting is what Next and Prompt return when the handler must wait for
// an event that has not arrived: return it, as any error, and the engine
// runs the handler again, from the top, when the event comes (see
// Context.Next). It is no failure: the engine neither logs it nor gives
// it to the WithOnError function, and handler middleware should pass it
// on as it is. What a handler does after it got ErrWaiting — sends,
// answers, writes — is not done.
var ErrWaiting = errors.New("engine: the conversation waits for its next event")

// ErrDiverged is wrapped by the error given to the WithOnError function
// when a handler run again did not take the effects its first run took,
// in the same order (see Context.Next): its conversation ends there.
var ErrDiverged = errors.New("engine: the handler did not do again what it did before")

// maxEffects caps a handling's log: a conversation that goes on past it
// ends with an error.
const maxEffects = 1024

type effectKind uint8

const (
	fxSend effectKind = iota + 1
	fxWait
	fxAnswer
	fxState
	fxOnce
)

var effectNames = [...]string{fxSend: "a send", fxWait: "a wait", fxAnswer: "an answer", fxState: "a session access", fxOnce: "a Once"}

// effect is one entry of a handling's log. It is kept small: a waiting
// conversation is its log.
type effect struct {
	kind effectKind
	done bool   // a wait that ended
	sum  uint64 // what the effect was, hashed: a replay must take the same
	what string // what it was, in words, for a report of a divergence
	// v is what the effect gave: a send's *future.Future, or its outcome
	// once the handling waits (sendOutcome); the *platform.Event a wait
	// took, or the error it ended with; an answer's error; a state
	// access's or a Once's stateValue.
	v any
}

// sendOutcome is a send's outcome, kept in place of its Future.
type sendOutcome struct {
	res platform.SendResult
	err error
}

// stateValue is what a state access or a Once gave.
type stateValue struct {
	val []byte
	err error
}

// send returns the Future of a send effect.
func (fx *effect) send() *future.Future[platform.SendResult] {
	switch v := fx.v.(type) {
	case *future.Future[platform.SendResult]:
		return v
	case sendOutcome:
		return future.Resolved(v.res, v.err)
	}
	return future.Resolved(platform.SendResult{}, ErrDiverged)
}

// error returns the error an effect gave, or nil.
func (fx *effect) error() error {
	switch v := fx.v.(type) {
	case error:
		return v
	case sendOutcome:
		return v.err
	case stateValue:
		return v.err
	case *future.Future[platform.SendResult]:
		if v.IsDone() {
			_, err := v.Result()
			return err
		}
	}
	return nil
}

// compactLocked replaces the Futures of the log's sends that are done by
// their outcomes: a waiting handling keeps no more than it must. h.mu
// must be held.
func (h *handling) compactLocked() {
	for i := range h.log {
		if f, ok := h.log[i].v.(*future.Future[platform.SendResult]); ok && f.IsDone() {
			res, err := f.Result()
			h.log[i].v = sendOutcome{res, err}
		}
	}
}

// handling is the state of one event's handling across its runs.
type handling struct {
	start       platform.Event
	rec         journal.Record
	redelivered bool
	ended       bool // the handling ended for good: a send needs no mark

	mu   sync.Mutex
	log  []effect
	wait *waitSpec // its last wait, until it is over
	x    *handlingExtra
}

// handlingExtra is what few handlings have, kept apart so that a waiting
// handling is small.
type handlingExtra struct {
	taken   []journal.Record // the records of the events its waits took
	presses []platform.Event // the presses its waits took
	// answered holds, by answerKey, the presses and queries answered or
	// being answered.
	answered map[string]bool
	// hookSends are the error hook's sends, by id: a replay that calls
	// the hook again gets them back.
	hookSends map[string]*future.Future[platform.SendResult]
	question  *failedQuestion // a question that failed while not waiting
}

// extraLocked returns h.x, made if need be. h.mu must be held.
func (h *handling) extraLocked() *handlingExtra {
	if h.x == nil {
		h.x = new(handlingExtra)
	}
	return h.x
}

// key returns the inbound key of h's chat.
func (h *handling) key() string { return inboundKey(h.start) }

// hookSend returns the error hook's send id made before, or nil.
func (h *handling) hookSend(id string) *future.Future[platform.SendResult] {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.x == nil {
		return nil
	}
	return h.x.hookSends[id]
}

// keepHookSend keeps the error hook's send id, f, for a replay.
func (h *handling) keepHookSend(id string, f *future.Future[platform.SendResult]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	x := h.extraLocked()
	if x.hookSends == nil {
		x.hookSends = make(map[string]*future.Future[platform.SendResult])
	}
	x.hookSends[id] = f
}

// settled reports whether the handling ended for good (journal.Send).
func (h *handling) settled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ended
}

// effectID returns the id of the effect at pos among those of the error
// hook's call errs (0: the handlers'), for the journal: the platform, the
// event's ID and the place; "" for an event without an ID.
func (h *handling) effectID(errs, pos int) string {
	if h.start.ID == "" {
		return ""
	}
	id := h.start.Platform + ":" + h.start.ID + "/"
	if errs > 0 {
		id += "e" + strconv.Itoa(errs) + "."
	}
	return id + strconv.Itoa(pos+1)
}

// waitSpec is what a waiting handling waits for: the events from its
// user (or anyone's, with anyone) in its chat.
type waitSpec struct {
	h        *handling
	deadline time.Time // when the wait ends with context.DeadlineExceeded
	question int       // the place of Prompt's question, whose failure ends the wait; -1: none
	seq      uint64    // its order among the waits, for the expiry heap's ties
	index    int       // its place in the expiry heap, -1 when not in it
	next     *waitSpec // the next wait under the same convKey
	ended    error     // why a resumption was asked for: the deadline, the question
	parked   bool      // in the index, between runs
	messages bool      // it takes only the user's messages (Next with a nil accept)
	anyone   bool      // it takes the events of anyone in the chat
	resuming bool      // a task to resume it is queued
}

// conv returns the key w waits under.
func (w *waitSpec) conv() string {
	ev := &w.h.start
	if w.anyone {
		return convKey(ev.Platform, ev.Chat.ID, "")
	}
	return convKey(ev.Platform, ev.Chat.ID, ev.From.ID)
}

// convKey returns the key under which a handling waits for events from
// user in chat (user "" for anyone in the chat) of platform p.
func convKey(p, chat, user string) string { return p + "\x00" + chat + "\x00" + user }

// sum hashes the parts of an effect's content.
func sum(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// brief returns s cut to a length a log line can show.
func brief(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// runState is one run of a handling: what the Contexts of its handlers
// share.
type runState struct {
	main scope // the handlers' effects

	// offer is the event this run was started to offer to the handling's
	// wait, with its record; offerTaken is set once the wait took it.
	offer      *platform.Event
	offerRec   journal.Record
	offerTaken bool
	// resume is why this run was started besides an offer: the wait's
	// deadline passed, or Prompt's question failed.
	resume error

	// waiting is set once a wait found no event to take: the run is
	// over, and the effects asked for from now on are not made.
	waiting bool
	// diverged is set once a replay found an effect other than the one
	// recorded: the handling ends with it.
	diverged error
	// hookCalls counts the calls of the error hook in the run.
	hookCalls int
}

// scope numbers effects: the handlers' of a run, or those of one call of
// the error hook, which are not replayed and have ids of their own.
type scope struct {
	pos  int // the next effect's place
	errs int // the error hook's call, 0 for the handlers'
	// anon: effects without ids (those of middleware an offered event
	// passes through).
	anon bool
}

// take returns the recorded effect at c's next place, or nil if the run is
// past the log (the effect is live), and the place: -1 for an effect that
// is neither recorded nor replayed (the error hook's, middleware's). A
// recorded effect of another kind or content is a divergence: take
// returns an error wrapping ErrDiverged, and ErrWaiting once the run
// waits.
func (c *Context) take(kind effectKind, s uint64, what string) (*effect, int, error) {
	st := c.ev
	h, r := st.h, st.run
	sc := c.scope()
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.diverged != nil {
		return nil, -1, r.diverged
	}
	if r.waiting {
		return nil, -1, ErrWaiting
	}
	pos := sc.pos
	sc.pos++
	if sc.errs > 0 || sc.anon {
		return nil, -1, nil
	}
	if pos < len(h.log) {
		fx := &h.log[pos]
		if fx.kind != kind || fx.sum != s {
			r.diverged = fmt.Errorf("%w: at its effect %d it asked for %s (%q) where it had asked for %s (%q)",
				ErrDiverged, pos+1, effectNames[kind], brief(what), effectNames[fx.kind], fx.what)
			return nil, -1, r.diverged
		}
		return fx, pos, nil
	}
	if pos >= maxEffects {
		r.diverged = fmt.Errorf("engine: the handling took more than %d effects: %w", maxEffects, ErrDiverged)
		return nil, -1, r.diverged
	}
	return nil, pos, nil
}

// effectID returns the journal's id of c's effect at pos, "" for none.
func (c *Context) effectID(pos int) string {
	sc := c.scope()
	if sc.anon {
		return ""
	}
	if sc.errs > 0 {
		return c.ev.h.effectID(sc.errs, sc.pos-1)
	}
	return c.ev.h.effectID(0, pos)
}

// record records fx at place pos of the log; pos -1 is no place.
func (st *eventState) record(pos int, fx effect) {
	if pos < 0 {
		return
	}
	h := st.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(fx.what) > 80 {
		fx.what = brief(fx.what)
	}
	for len(h.log) < pos {
		h.log = append(h.log, effect{}) // the places of goroutines' effects still under way
	}
	if pos == len(h.log) {
		h.log = append(h.log, fx)
	} else {
		h.log[pos] = fx
	}
}

// conversations are the handlings that wait, by where they wait, and the
// heap of their deadlines served by one timer.
type conversations struct {
	mu      sync.Mutex
	waiting map[string]*waitSpec // by convKey: the oldest, linked to the others by next
	n       int
	expiry  expiryHeap
	timer   *time.Timer
	timerAt time.Time
	seq     uint64
	closed  bool
}

// park records that w's handling waits: by w.conv, and by its deadline.
func (e *Engine) park(w *waitSpec) {
	w.h.mu.Lock()
	w.h.compactLocked()
	w.h.mu.Unlock()
	if e.parkLocked(w) {
		e.askResume(w) // its question failed as it parked
	}
}

// parkLocked is park's part under the lock; it reports whether the wait
// ended meanwhile and must be resumed.
func (e *Engine) parkLocked(w *waitSpec) (resume bool) {
	cs := &e.convs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed || w.parked {
		return false // the engine stops: a journal keeps the handling's events
	}
	if cs.waiting == nil {
		cs.waiting = make(map[string]*waitSpec)
	}
	key := w.conv()
	w.next = nil
	if first := cs.waiting[key]; first == nil {
		cs.waiting[key] = w
	} else {
		last := first
		for last.next != nil {
			last = last.next
		}
		last.next = w
	}
	w.parked = true
	cs.n++
	cs.seq++
	w.seq = cs.seq
	cs.expiry.push(w)
	if first := cs.expiry[0]; cs.timerAt.IsZero() || first.deadline.Before(cs.timerAt) {
		cs.armLocked(e, first.deadline)
	}
	return w.ended != nil
}

// armLocked sets the expiry timer to at.
func (cs *conversations) armLocked(e *Engine, at time.Time) {
	d := max(time.Until(at), 0)
	if cs.timer == nil {
		cs.timer = time.AfterFunc(d, e.expireWaits) // a timeout: the waits' deadlines
	} else {
		cs.timer.Reset(d)
	}
	cs.timerAt = at
}

// unparkLocked removes w from the waiting handlings; it reports whether
// it was there.
func (cs *conversations) unparkLocked(w *waitSpec) bool {
	if !w.parked {
		return false
	}
	w.parked = false
	key := w.conv()
	if first := cs.waiting[key]; first == w {
		if w.next == nil {
			delete(cs.waiting, key)
		} else {
			cs.waiting[key] = w.next
		}
	} else {
		for x := first; x != nil; x = x.next {
			if x.next == w {
				x.next = w.next
				break
			}
		}
	}
	w.next = nil
	cs.n--
	if w.index >= 0 {
		cs.expiry.remove(w.index)
	}
	return true
}

// waitingFor returns the waits that may take ev, oldest first: its user's
// in its chat, then those of the chat's that take anyone's.
func (e *Engine) waitingFor(ev *platform.Event) []*waitSpec {
	cs := &e.convs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.n == 0 || ev.Chat.ID == "" {
		return nil
	}
	var out []*waitSpec
	for _, key := range []string{convKey(ev.Platform, ev.Chat.ID, ev.From.ID), convKey(ev.Platform, ev.Chat.ID, "")} {
		for w := cs.waiting[key]; w != nil; w = w.next {
			if w.messages && ev.Kind != platform.EventMessage {
				continue
			}
			out = append(out, w)
		}
		if ev.From.ID == "" {
			break // the two keys are one
		}
	}
	return out
}

// expireWaits runs when the expiry timer fires: it asks the handlings
// whose waits ended to resume.
func (e *Engine) expireWaits() {
	cs := &e.convs
	var due []*waitSpec
	cs.mu.Lock()
	now := time.Now()
	for len(cs.expiry) > 0 && !cs.expiry[0].deadline.After(now) {
		w := cs.expiry.pop()
		w.ended = context.DeadlineExceeded
		due = append(due, w)
	}
	cs.timerAt = time.Time{}
	if len(cs.expiry) > 0 {
		cs.armLocked(e, cs.expiry[0].deadline)
	}
	cs.mu.Unlock()
	for _, w := range due {
		e.askResume(w)
	}
}

// askResume queues a task that runs w's handling again with the reason its
// wait ended (w.ended), on its chat's key, unless one is queued.
func (e *Engine) askResume(w *waitSpec) {
	cs := &e.convs
	cs.mu.Lock()
	if w.resuming || cs.closed {
		cs.mu.Unlock()
		return
	}
	w.resuming = true
	cs.mu.Unlock()
	err := e.in.Push(w.h.key(), func(context.Context) error {
		cs.mu.Lock()
		w.resuming = false
		reason := w.ended
		still := cs.unparkLocked(w)
		cs.mu.Unlock()
		if still && reason != nil {
			e.runHandling(w.h, &runState{resume: reason})
		}
		return nil
	})
	if err != nil {
		cs.mu.Lock()
		w.resuming = false
		cs.mu.Unlock()
	}
}

// offer offers ev, just taken, to the handlings that wait for it, oldest
// first, and reports whether one took it. It runs on ev's chat's task,
// through the handler middleware (an event a conversation takes is
// handled by middleware as any other).
func (e *Engine) offer(ev *platform.Event, rec journal.Record) (taken bool) {
	waits := e.waitingFor(ev)
	if len(waits) == 0 {
		return false
	}
	if len(e.opts.handlerMiddleware) > 0 {
		hctx := newHandlerContext(e.in.Base(), e.opts.handlerTimeout)
		defer hctx.end(nil)
		st := e.newEventState(hctx, &handling{start: *ev}, &runState{main: scope{anon: true}})
		e.run(&Context{ev: st}, chain(func(*Context) error {
			taken = e.offerTo(waits, ev, rec)
			return nil
		}, e.opts.handlerMiddleware))
		st.endRun()
		return taken
	}
	return e.offerTo(waits, ev, rec)
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

// offerTo runs the handlings of waits again, one at a time, offering ev,
// until one takes it.
func (e *Engine) offerTo(waits []*waitSpec, ev *platform.Event, rec journal.Record) bool {
	cs := &e.convs
	for _, w := range waits {
		cs.mu.Lock()
		still := cs.unparkLocked(w)
		cs.mu.Unlock()
		if !still {
			continue
		}
		r := &runState{offer: ev, offerRec: rec}
		e.runHandling(w.h, r)
		if r.offerTaken {
			e.awaited.Add(1)
			return true
		}
	}
	return false
}

// closeConversations stops parking waits: the engine stops, and a
// journal keeps the events of those that wait.
func (e *Engine) closeConversations() {
	cs := &e.convs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	if cs.timer != nil {
		cs.timer.Stop()
	}
}

// questionFailed resumes h, if it waits for the answer to its Prompt's
// question at place q, now that the question's send failed with err: the
// user cannot answer what they never got.
func (e *Engine) questionFailed(h *handling, q int, err error) {
	h.mu.Lock()
	w := h.wait
	if w == nil || w.question != q {
		h.extraLocked().question = &failedQuestion{at: q, err: err}
		h.mu.Unlock()
		return // not waiting (yet): the wait sees it
	}
	h.mu.Unlock()
	e.convs.mu.Lock()
	w.ended = fmt.Errorf("%w: %w", ErrPromptNotSent, err)
	parked := w.parked
	e.convs.mu.Unlock()
	if parked {
		e.askResume(w)
	}
	// Else the run that waits now parks it after this and sees the
	// failure at its next run — or, still running, sees it in the log.
}

// failedQuestion is a Prompt's question whose send failed.
type failedQuestion struct {
	at  int
	err error
}

// expiryHeap is a min-heap of waits by deadline.
type expiryHeap []*waitSpec

func (h *expiryHeap) push(w *waitSpec) {
	*h = append(*h, w)
	w.index = len(*h) - 1
	h.up(w.index)
}

func (h *expiryHeap) pop() *waitSpec {
	w := (*h)[0]
	h.remove(0)
	return w
}

func (h *expiryHeap) remove(i int) {
	a := *h
	n := len(a) - 1
	a[i].index = -1
	if i != n {
		a[i] = a[n]
		a[i].index = i
	}
	a[n] = nil
	*h = a[:n]
	if i < n {
		h.down(i)
		h.up(i)
	}
}

func (h expiryHeap) less(i, j int) bool {
	return h[i].deadline.Before(h[j].deadline) || h[i].deadline.Equal(h[j].deadline) && h[i].seq < h[j].seq
}

func (h expiryHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h expiryHeap) down(i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// reportDivergence logs a handling that diverged, at most once a message
// every interval.
func (e *Engine) reportDivergence(h *handling, err error) {
	e.limitedLog.Warn("engine: a handler run again diverged from its first run; its conversation ends",
		zap.String("platform", h.start.Platform), zap.String("event", h.start.ID), zap.Error(err))
}
