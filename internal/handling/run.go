package handling

import (
	"context"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/platform"
)

// Start says why a run of a handling begins: its first run has none of
// it.
type Start struct {
	// Offer is the event the run offers to the handling's wait, with its
	// record.
	Offer    *platform.Event
	OfferRec journal.Record
	// Resume is why the run begins besides an offer: the wait's deadline
	// passed, or Prompt's question failed.
	Resume error
	// Again runs the handling again after the journal's outage ended its
	// last run (see Run.Outage): its sends may have been recorded.
	Again bool
	// Middleware runs the handler middleware an event offered to the
	// waiting conversations passes through: the run is no run of h's
	// handlers, its effects are not in h's log, and their ids are their
	// own (a run after a crash makes them under the same ids).
	Middleware bool
}

// Run is one run of a handling: what the Contexts of its handlers share.
type Run struct {
	env     Env
	h       *Handling
	ctx     context.Context
	event   platform.Event
	chatKey string       // "" when the event has no chat
	sends   atomic.Int64 // sends made in this run, by all its handlers
	// recovered is set for an event taken up from the journal at start
	// (or by another process): its handlers run again, and their sends
	// may repeat delivered ones.
	recovered bool

	mu     sync.Mutex
	logger *zap.Logger
	values map[string]any

	act actions // the run's chat action (action.go)

	// Under h.mu:
	main       scope // the handlers' effects
	offer      *platform.Event
	offerRec   journal.Record
	offerTaken bool
	resume     error
	// waiting is set once a wait found no event to take: the run is
	// over, and the effects asked for from now on are not made.
	waiting bool
	// diverged is set once a replay found an effect other than the one
	// recorded: the handling ends with it.
	diverged error
	// down is the journal's outage that ended what the run can do, and
	// downAt the place in the log up to which it is good (outage.go).
	down   error
	downAt int
	// hookCalls counts the calls of the error hook in the run.
	hookCalls int
}

// NewRun returns a run of h in env, with ctx (the handlers' context,
// usually a RunContext) and s.
func (h *Handling) NewRun(env Env, ctx context.Context, s Start) *Run {
	r := &Run{env: env, h: h, ctx: ctx, event: h.start, recovered: h.redelivered || s.Again,
		offer: s.Offer, offerRec: s.OfferRec, resume: s.Resume}
	r.main.middleware = s.Middleware
	if h.start.Chat.ID != "" {
		r.chatKey = h.key // for an event with a chat, ChatKey of its platform and chat
	}
	return r
}

// Handling returns the handling r runs.
func (r *Run) Handling() *Handling { return r.h }

// Context returns the handlers' context.
func (r *Run) Context() context.Context { return r.ctx }

// Event returns the event of r's handling.
func (r *Run) Event() platform.Event { return r.event }

// First reports whether r is its handling's first run (nothing recorded
// yet).
func (r *Run) First() bool {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return len(r.h.log) == 0
}

// Waiting reports whether a wait of r's found nothing to take: its
// handlers returned, or must, and the handling waits.
func (r *Run) Waiting() bool {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.waiting
}

// Diverged returns the error of a replay that found an effect other than
// the one recorded, or nil.
func (r *Run) Diverged() error {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.diverged
}

// Stopped reports whether r's handlers must stop: r waits or diverged.
func (r *Run) Stopped() bool {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.waiting || r.diverged != nil
}

// OfferTaken reports whether a wait of r took the event r offered.
func (r *Run) OfferTaken() bool {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.offerTaken
}

// Logger returns the engine's logger with the event's platform, chat and
// event ID as fields.
func (r *Run) Logger() *zap.Logger {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.logger == nil {
		r.logger = r.env.Logger().With(
			zap.String("platform", r.event.Platform),
			zap.String("chat", r.event.Chat.ID),
			zap.String("event", r.event.ID),
		)
	}
	return r.logger
}

// Match is what a matcher found in an event, for the handler it runs.
type Match struct {
	Command string   // the command's name as written, without prefix or @botname
	RawArgs string   // the text after the command or prefix, trimmed
	Args    []string // RawArgs split like a shell splits words
	Groups  []string // a regex matcher's submatches
}

// Ctx is one handler's view of a run: the run, what its matcher found,
// and the numbering of its effects. Package core/context's Context holds
// one. A Ctx is a small value; its copies are the same view.
type Ctx struct {
	run   *Run
	match Match
	sc    *scope // the error hook's effects; nil: the run's
}

// Ctx returns the view of r of a handler its matcher found m for.
func (r *Run) Ctx(m Match) Ctx { return Ctx{run: r, match: m} }

// HookCtx returns the view of r of a call of the error hook (or of the
// engine's own answer to a cancelled conversation) after the handler c:
// its effects are numbered apart from the handlers', so they never take
// an id a run of the handlers will use, and it cannot wait.
func (c *Ctx) HookCtx() Ctx {
	r := c.run
	r.h.mu.Lock()
	r.hookCalls++
	sc := &scope{errs: r.hookCalls}
	r.h.mu.Unlock()
	return Ctx{run: r, match: c.match, sc: sc}
}

// InHook reports whether c is the error hook's (HookCtx).
func (c *Ctx) InHook() bool { return c.scope().errs > 0 }

// scope returns the numbering of c's effects.
func (c *Ctx) scope() *scope {
	if c.sc != nil {
		return c.sc
	}
	return &c.run.main
}

// Run returns the run c views.
func (c *Ctx) Run() *Run { return c.run }

// Match returns what c's matcher found.
func (c *Ctx) Match() *Match { return &c.match }

// Event returns the event of c's handling.
func (c *Ctx) Event() *platform.Event { return &c.run.event }

// Context returns the handler's context.
func (c *Ctx) Context() context.Context { return c.run.ctx }

// Logger returns the run's logger (Run.Logger).
func (c *Ctx) Logger() *zap.Logger { return c.run.Logger() }

// Set stores a value for the handlers of this event that run after this one.
func (c *Ctx) Set(key string, value any) {
	r := c.run
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.values == nil {
		r.values = make(map[string]any)
	}
	r.values[key] = value
}

// Get returns the value Set stored under key, and whether there was one.
func (c *Ctx) Get(key string) (any, bool) {
	r := c.run
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.values[key]
	return v, ok
}

// replaying reports whether c's handler is being run again over what it
// did before.
func (c *Ctx) replaying() bool {
	h := c.run.h
	h.mu.Lock()
	defer h.mu.Unlock()
	sc := c.scope()
	return sc.errs == 0 && !sc.middleware && sc.pos < len(h.log)
}

// Sessions returns the store the engine keeps sessions in.
func (c *Ctx) Sessions() state.Store { return c.run.env.Sessions() }

// Texts returns the words ReplySuccess and ReplyError add.
func (c *Ctx) Texts() Texts { return c.run.env.Texts() }
