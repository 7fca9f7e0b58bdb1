package handling

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/internal/executor"
	"github.com/heraldbot/herald/platform"
)

// Errors with which a handler's effects can end, besides the sender's own
// errors. Package core/context documents them for bot authors.
var (
	ErrWaiting       = errors.New("engine: the conversation waits for its next event")
	ErrDiverged      = errors.New("engine: the handler did not do again what it did before")
	ErrCancelled     = errors.New("engine: the user cancelled the conversation")
	ErrNoChat        = errors.New("engine: no chat to send to")
	ErrNoUser        = errors.New("engine: no user")
	ErrPromptNotSent = errors.New("engine: prompt not sent")
	ErrClosed        = errors.New("engine: closed")
)

// errCutOff is what take returns once a forced shutdown cut a run off:
// the engine is closed, and so is its dispatcher.
var errCutOff = fmt.Errorf("%w: %w", ErrClosed, executor.ErrClosed)

// errNoWait is what Next returns in the error hook.
var errNoWait = errors.New("engine: the error hook cannot wait for events")

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

// Handling is the state of one event's handling across its runs. Make it
// with New.
type Handling struct {
	start       platform.Event
	key         string // InboundKey(start)
	rec         journal.Record
	redelivered bool

	mu    sync.Mutex
	ended bool // End was called
	// settling is closed once End marked the handling's events done;
	// settledOK says they all were: a send needs no mark.
	settling  chan struct{}
	settledOK bool
	log       []effect
	wait      *Wait // its last wait, until it is over
	x         *extra
}

// extra is what few handlings have, kept apart so that a waiting handling
// is small.
type extra struct {
	taken   []journal.Record // the records of the events its waits took
	presses []platform.Event // the presses its waits took
	// answered holds, by answerKey, the presses and queries answered or
	// being answered.
	answered map[string]bool
	// hookSends are the error hook's sends, by id: a replay that calls
	// the hook again gets them back.
	hookSends map[string]*future.Future[platform.SendResult]
	question  *failedQuestion // a question that failed while not waiting
	// unrecorded are the records of effects made that an outage of the
	// journal refused (outage.go).
	unrecorded []unrecorded
}

// failedQuestion is a Prompt's question whose send failed.
type failedQuestion struct {
	at  int
	err error
}

// New returns the handling of start, recorded by the journal as rec (nil
// for none); redelivered says it was taken up from the journal at start
// or from another process: its handlers run again, and their sends may
// repeat delivered ones.
func New(start platform.Event, rec journal.Record, redelivered bool) *Handling {
	return &Handling{start: start, key: InboundKey(start), rec: rec, redelivered: redelivered}
}

// Event returns the event h handles.
func (h *Handling) Event() platform.Event { return h.start }

// EventRef returns the event h handles in place, for a caller that only
// reads it and would otherwise keep a copy of its own.
func (h *Handling) EventRef() *platform.Event { return &h.start }

// Key returns the inbound key of h's chat (see InboundKey).
func (h *Handling) Key() string { return h.key }

// extraLocked returns h.x, made if need be. h.mu must be held.
func (h *Handling) extraLocked() *extra {
	if h.x == nil {
		h.x = new(extra)
	}
	return h.x
}

// settled reports whether the handling ended for good (journal.Send):
// its events are marked done, so that it never runs again — not while
// the removal of its own waits for its covered sends (journal.Holder).
// While End marks them, it waits for the outcome: a send delivered
// meanwhile is marked as delivered unless they were.
func (h *Handling) settled() bool {
	h.mu.Lock()
	ended, settling := h.ended, h.settling
	h.mu.Unlock()
	if !ended {
		return false
	}
	<-settling
	if hd, ok := h.rec.(journal.Holder); ok && hd.Holding() {
		// Its removal waits for its covered sends: it may run again.
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.settledOK
}

// tellParked tells the records of h's events that implement
// journal.Parker whether h waits for its user (see Waits: called under
// its lock, so that the records hear parks and unparks in their order).
func (h *Handling) tellParked(waiting bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.rec.(journal.Parker); ok {
		p.Parked(waiting)
	}
	if h.x != nil {
		for _, r := range h.x.taken {
			if p, ok := r.(journal.Parker); ok {
				p.Parked(waiting)
			}
		}
	}
}

// HandedOver reports whether the journal handed one of h's events to
// another member while h waited (see journal.Parker): h must not run here
// again.
func (h *Handling) HandedOver() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.rec.(journal.Parker); ok && p.HandedOver() {
		return true
	}
	if h.x != nil {
		for _, r := range h.x.taken {
			if p, ok := r.(journal.Parker); ok && p.HandedOver() {
				return true
			}
		}
	}
	return false
}

// Waiting returns h's wait after a run that waits, or nil.
func (h *Handling) Waiting() *Wait {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wait
}

// End ends h for good: done marks the records of its events done — its
// own (nil for none) and those its waits took — and reports whether all
// were. A send of h that ends while done runs waits for its outcome (see
// settled).
func (h *Handling) End(done func(own journal.Record, taken []journal.Record) bool) {
	h.mu.Lock()
	h.ended = true
	h.wait = nil
	var taken []journal.Record
	if h.x != nil {
		taken = h.x.taken
		h.x.taken = nil
	}
	settling := make(chan struct{})
	h.settling = settling
	h.mu.Unlock()
	ok := done(h.rec, taken)
	h.mu.Lock()
	h.settledOK = ok
	h.mu.Unlock()
	close(settling)
}

// hookSend returns the error hook's send id made before, or nil.
func (h *Handling) hookSend(id string) *future.Future[platform.SendResult] {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.x == nil {
		return nil
	}
	return h.x.hookSends[id]
}

// keepHookSend keeps the error hook's send id, f, for a replay.
func (h *Handling) keepHookSend(id string, f *future.Future[platform.SendResult]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	x := h.extraLocked()
	if x.hookSends == nil {
		x.hookSends = make(map[string]*future.Future[platform.SendResult])
	}
	x.hookSends[id] = f
}

// compactLocked replaces the Futures of the log's sends that are done by
// their outcomes: a waiting handling keeps no more than it must. h.mu
// must be held.
func (h *Handling) compactLocked() {
	for i := range h.log {
		if f, ok := h.log[i].v.(*future.Future[platform.SendResult]); ok && f.IsDone() {
			res, err := f.Result()
			h.log[i].v = sendOutcome{res, err}
		}
	}
}

// sent keeps the outcome of the send at pos in place of its Future if h
// waits: a waiting handling keeps no more than it must (compactLocked
// does it for the sends done before it parked).
func (h *Handling) sent(pos int, res platform.SendResult, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.wait == nil || pos >= len(h.log) {
		return
	}
	if _, ok := h.log[pos].v.(*future.Future[platform.SendResult]); ok {
		h.log[pos].v = sendOutcome{res, err}
	}
}

// effectID returns the id of the effect at pos among those of the error
// hook's call errs (0: the handlers'; -1: the handler middleware's of an
// offered event), for the journal: the platform, the event's ID and the
// place; "" for an event without an ID.
func (h *Handling) effectID(errs, pos int) string {
	if h.start.ID == "" {
		return ""
	}
	id := h.start.Platform + ":" + h.start.ID + "/"
	switch {
	case errs < 0:
		id += "m."
	case errs > 0:
		id += "e" + strconv.Itoa(errs) + "."
	}
	return id + strconv.Itoa(pos+1)
}

// questionError returns the error of the Prompt question at place q if it
// failed, or nil.
func (h *Handling) questionError(q int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.questionErrorLocked(q)
}

// questionErrorLocked is questionError with h.mu held.
func (h *Handling) questionErrorLocked(q int) error {
	if h.x != nil && h.x.question != nil && h.x.question.at == q {
		return h.x.question.err
	}
	if q >= 0 && q < len(h.log) && h.log[q].kind == fxSend {
		return h.log[q].error()
	}
	return nil
}

// ChatKey returns the dispatchers' key of a chat: the platform name, a
// colon and the chat ID, so that two adapters never share a queue.
func ChatKey(platformName, chatID string) string { return platformName + ":" + chatID }

// InboundKey returns the key under which the engine queues ev: its chat,
// or, for an event without one, its user.
func InboundKey(ev platform.Event) string {
	chatID := ev.Chat.ID
	if chatID == "" {
		chatID = "user:" + ev.From.ID
	}
	return ChatKey(ev.Platform, chatID)
}

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

// scope numbers effects: the handlers' of a run, or those of one call of
// the error hook, which are not replayed and have ids of their own.
type scope struct {
	pos  int // the next effect's place
	errs int // the error hook's call, 0 for the handlers'
	// middleware: the effects of the handler middleware an event offered
	// to the waiting conversations passes through, which are not in the
	// log and have ids of their own.
	middleware bool
}

// take returns the recorded effect at c's next place, or nil if the run is
// past the log (the effect is live), and the place: -1 for an effect that
// is neither recorded nor replayed (the error hook's, middleware's). A
// recorded effect of another kind or content is a divergence: take
// returns an error wrapping ErrDiverged, ErrWaiting once the run waits,
// the outage's error once the journal's outage ended what the run can do,
// and an error wrapping ErrClosed (and the executor's) once a forced
// shutdown cut the run off.
func (c *Ctx) take(kind effectKind, s uint64, what string) (*effect, int, error) {
	h, r := c.run.h, c.run
	sc := c.scope()
	if r.env.Base().Err() != nil {
		// A forced shutdown cut the run off: what it asks for now is not
		// made, and takes no place, so a run after the restart makes it
		// under the id it would have had.
		return nil, -1, errCutOff
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.diverged != nil && sc.errs == 0 {
		// The error hook, told of the divergence, still speaks: its
		// effects are not the log's.
		return nil, -1, r.diverged
	}
	if r.down != nil {
		return nil, -1, r.down
	}
	if r.waiting {
		return nil, -1, ErrWaiting
	}
	pos := sc.pos
	sc.pos++
	if sc.errs > 0 || sc.middleware {
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
func (c *Ctx) effectID(pos int) string {
	sc := c.scope()
	switch {
	case sc.middleware:
		return c.run.h.effectID(-1, sc.pos-1)
	case sc.errs > 0:
		return c.run.h.effectID(sc.errs, sc.pos-1)
	}
	return c.run.h.effectID(0, pos)
}

// record records fx at place pos of the log; pos -1 is no place.
func (r *Run) record(pos int, fx effect) {
	if pos < 0 {
		return
	}
	h := r.h
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
