package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	hctx "github.com/heraldbot/herald/core/context"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/internal/command"
	"github.com/heraldbot/herald/internal/executor"
	"github.com/heraldbot/herald/internal/handling"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Handler handles one event. A returned error is logged and passed to the
// WithOnError function; it does not stop other handlers. A panic is
// recovered, logged and passed on as a *HandlerPanicError.
type Handler func(c *Context) error

// Plugin is a reusable set of handlers. Register adds them to the engine.
type Plugin interface {
	Name() string
	Register(e *Engine) error
}

// Errors of the Engine.
var (
	// ErrEngineClosed is returned by HandleEvent and Run after Shutdown,
	// and resolves what a handler asks for (a send, a Once) once a forced
	// shutdown cut its run off.
	ErrEngineClosed = handling.ErrClosed
	// ErrAlreadyRunning is returned by a second call to Run.
	ErrAlreadyRunning = platform.ErrAlreadyRunning
	// ErrNoAdapter is returned by Run when no adapter was configured.
	ErrNoAdapter = errors.New("engine: no adapter")
)

// forceGrace bounds how long Shutdown waits, after it ran out of time and
// force-closed the dispatchers, for the interrupted tasks to run with their
// cancelled contexts and resolve their Futures.
const forceGrace = 5 * time.Second

// HandlerPanicError is the error passed to the WithOnError function for a
// handler that panicked.
type HandlerPanicError struct {
	Value any
	Stack []byte
}

// Error returns "engine: handler panicked: " and the panic value.
func (e *HandlerPanicError) Error() string {
	return fmt.Sprintf("engine: handler panicked: %v", e.Value)
}

// Stats is a snapshot of an Engine's counters.
type Stats struct {
	// Received counts events HandleEvent accepted.
	Received uint64
	// Dropped counts events HandleEvent refused because the chat's inbound
	// queue was full, and events a forced shutdown cancelled before their
	// handlers ran.
	Dropped uint64
	// Matched counts events at least one matcher accepted; Unmatched the
	// others.
	Matched, Unmatched uint64
	// Awaited counts events a handler waiting in Context.Next took; they
	// are neither matched nor unmatched.
	Awaited uint64
	// HandlerErrors counts handler errors (a *UserError a handler returns
	// is its answer, not counted); HandlerPanics counts panics of handlers
	// and of matchers' rules.
	HandlerErrors, HandlerPanics uint64
	// Handlers are the statistics of the inbound executor (one task per
	// event); Outbound those of the OutboundDispatcher (one task per send).
	Handlers, Outbound DispatcherStats
	// Sends counts sends through the default sender chain.
	Sends sender.SendStats
	// DeadLetters is the number of failed sends kept for replay now.
	DeadLetters int
	// Duplicates counts events the journal had recorded before (the
	// platform delivered them again): they were not handled again.
	Duplicates uint64
	// RoomWaits counts handlers' sends that waited for room in their
	// chat's full send queue (see Context.Reply).
	RoomWaits uint64
	// Journal counts what the journal holds for this process, not done
	// yet; zero without a journal.
	Journal journal.Stats
}

// Engine routes inbound events from its adapters to the handlers whose
// matchers accept them, and sends their replies through the
// OutboundDispatcher and the sender middleware chain.
//
// Events of one chat are handled one at a time in arrival order; events of
// different chats concurrently, at most WithHandlerConcurrency at once. The
// matchers are tried in priority order; each one that accepts runs its
// handler, until a Block matcher stops lower priorities. An event a
// waiting conversation takes (Context.Next) goes to it instead. A handler
// that waits holds the rest of its event's handlers (the matchers after
// it) until its conversation ends: they run then, after the events the
// conversation took and those that came meanwhile. A handler that must
// see every event at once (a log, a counter) goes before the
// conversations (a lower Priority) or in WithMiddleware.
//
// Handlers may be registered at any time, also while the engine runs; an
// event sees the matchers registered when its handling started. All methods
// are safe for concurrent use. An Engine must be created with New; the zero
// value is not usable.
type Engine struct {
	replaying   sync.Mutex // held by ReplayDeadLetters
	opts        options
	log         *zap.Logger
	out         *OutboundDispatcher
	in          *executor.Executor // the inbound queue: one task per event
	adapters    []platform.Adapter
	senders     map[string]platform.Sender
	counters    *sender.Counters
	deadLetters *sender.DeadLetterStore

	// handedOver counts the sends and events the journal handed over
	// held (Outgoing.Held, Incoming.Held): Run logs those of its Recover.
	handedOver struct{ sends, events atomic.Int64 }

	// journal is what the engine runs on (WithJournal; one that keeps
	// nothing by default), and js the engine's side of it.
	journal journal.Journal
	js      *journalState

	// stopCtx bounds what adapters and the journal still do once the
	// engine began to stop: Run ends it when the shutdown timeout runs
	// out.
	stopCtx context.Context
	endStop context.CancelFunc

	// failed gets the error of an adapter that failed for good (Lead),
	// which stops Run.
	failed chan error

	// state holds sessions and the schedule (session.go, schedule.go).
	state *stateful

	fallback Handler // WithFallback's, in the engine's handler middleware

	regMu    sync.Mutex // serialises registrations
	seq      int
	matchers atomic.Pointer[[]*matcher]

	// waits are the handlings that wait (Context.Next).
	waits *handling.Waits
	// outage holds the handlings an outage of the journal stopped, to run
	// them again once it records (outage.go).
	outage *afterOutage

	// limitedLog writes what can happen once per event or send (a
	// refusal) at most once per interval and message.
	limitedLog *ratelog.Logger

	closed    atomic.Bool
	running   atomic.Bool
	shutSem   chan struct{} // holds a token while a Shutdown runs
	stopping  chan struct{} // closed when Shutdown is first called
	closeOnce sync.Once

	received, dropped, matched, unmatched atomic.Uint64
	duplicates, roomWaits                 atomic.Uint64
	roomWaiting                           atomic.Int64 // handlers waiting in RoomFor now
	awaited                               atomic.Uint64
	handlerErrors, handlerPanics          atomic.Uint64

	// relayed says the journal hands sends to another process (a
	// gateway): this process's queues never refuse them.
	relayed bool
	// early holds the sends made before Run took up the journal's (see
	// earlySends); nil without a journal of one process.
	early *earlySends
}

// New returns an Engine configured by opts. It returns an error if two
// adapters have the same name or the metrics cannot be registered.
func New(opts ...Option) (*Engine, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	o = o.withDefaults()
	e := &Engine{
		opts:        o,
		log:         o.logger,
		adapters:    o.adapters,
		senders:     make(map[string]platform.Sender, len(o.adapters)),
		counters:    new(sender.Counters),
		deadLetters: o.deadLetters,
		shutSem:     make(chan struct{}, 1),
		stopping:    make(chan struct{}),
		limitedLog:  ratelog.New(o.logger, 0),
	}
	if o.fallback != nil {
		e.fallback = chain(o.fallback, o.handlerMiddleware)
	}
	e.matchers.Store(new([]*matcher))
	e.waits = handling.NewWaits(
		func(key string, task func()) error {
			return e.in.Push(key, func(context.Context) error { task(); return nil })
		},
		func(h *handling.Handling, resume error) {
			if !e.droppedHandedOver(h) {
				e.runHandling(h, handling.Start{Resume: resume}, false)
			}
		})
	e.outage = newAfterOutage(e)
	e.state = newStateful(e)
	e.stopCtx, e.endStop = context.WithCancel(context.Background())
	e.failed = make(chan error, 1)
	e.journal = o.journal
	if e.journal == nil {
		e.journal = journal.NewLocal(nil)
	}
	if r, ok := e.journal.(journal.Relayer); ok {
		e.relayed = r.RelaysSends()
	}
	if o.journal != nil && !e.relayed {
		e.early = &earlySends{}
	}
	e.js = newJournalState(e.log)

	for _, a := range o.adapters {
		name := a.Name()
		if _, dup := e.senders[name]; dup {
			return nil, fmt.Errorf("engine: two adapters named %q", name)
		}
		e.senders[name] = e.chain(a)(fencedSender{a.Sender()})
	}

	outCfg := o.dispatcher
	if outCfg.Recover == nil {
		outCfg.Recover = func(v any) { e.log.Error("send panicked", zap.Any("panic", v)) }
	}
	userRejected := outCfg.Hooks.OnRejected
	outCfg.Hooks.OnRejected = func(chatKey string, err error) {
		if !errors.Is(err, ErrDispatcherClosed) {
			e.limitedLog.Warn("engine: a send was refused; its Future reports it", zap.String("chat", chatKey), zap.Error(err))
		}
		if userRejected != nil {
			userRejected(chatKey, err)
		}
	}
	e.out = NewOutboundDispatcher(context.Background(), outCfg)
	e.in = executor.New(context.Background(), executor.Config{
		MaxInflight: o.handlerConcurrency,
		QueueSize:   o.inboundQueueSize,
		// An event's handling is bounded by its handlerContext (the
		// handler timeout of running time) and its waits in Next by their
		// own bound, not by the task's run.
		RunTimeout: -1,
		// MaxLifetime: an event waits in its chat's queue as long as it takes.
		MaxLifetime: -1,
		Recover:     func(v any) { e.log.Error("event handling panicked", zap.Any("panic", v)) },
	})

	if m := o.metrics; m != nil {
		err := errors.Join(
			m.Register(newDispatcherCollector("outbound", e.out.Stats)),
			m.Register(newDispatcherCollector("inbound", e.inStats)),
			m.Register(newJournalCollector(e.js.stats)),
		)
		if err != nil {
			return nil, fmt.Errorf("engine: metrics: %w", err)
		}
	}
	if err := e.journal.Attach((*member)(e)); err != nil {
		return nil, fmt.Errorf("engine: journal: %w", err)
	}
	return e, nil
}

// chain returns the sender decorators for the adapter a. With
// WithSenderMiddleware they are the ones given, inside the engine's own
// bookkeeping (counters, dead letters); otherwise the default chain.
func (e *Engine) chain(a platform.Adapter) sender.SenderDecorator {
	if e.opts.customChain {
		return sender.Chain(sender.Count(e.counters), sender.DeadLetters(e.deadLetters), sender.Chain(e.opts.middleware...))
	}
	cfg := e.opts.senderConfig
	if cfg.Logger == nil {
		cfg.Logger = e.log
	}
	if cfg.Counters == nil {
		cfg.Counters = e.counters
	}
	if cfg.DeadLetters == nil {
		cfg.DeadLetters = e.deadLetters
	}
	if cfg.Metrics == nil {
		cfg.Metrics = e.opts.metrics
	}
	cfg.RateLimit = e.rateLimit(a)
	return sender.Default(cfg)
}

// rateLimit returns the rate limits of a's sends: the first set of those
// WithRateLimit gave for a, WithSenderConfig's RateLimit, and the budget a
// publishes (platform.LimitedAdapter); none if none is set. One with Off
// set means no limit.
func (e *Engine) rateLimit(a platform.Adapter) sender.RateLimitConfig {
	if rl, ok := e.opts.rateLimits[a.Name()]; ok && rl != (sender.RateLimitConfig{}) {
		return rl
	}
	if rl := e.opts.senderConfig.RateLimit; rl != (sender.RateLimitConfig{}) {
		return rl
	}
	if la, ok := a.(platform.LimitedAdapter); ok {
		return sender.LimitsOf(la.Limits())
	}
	return sender.RateLimitConfig{}
}

// Use registers plugins, in order. It stops at the first plugin whose
// Register fails, or whose registrations panic with a registration error
// (see OnCommand and Every), and returns that error, naming the plugin.
func (e *Engine) Use(plugins ...Plugin) error {
	for _, p := range plugins {
		if p == nil {
			continue
		}
		if err := registerPlugin(e, p); err != nil {
			return fmt.Errorf("engine: plugin %s: %w", p.Name(), err)
		}
	}
	return nil
}

// registerPlugin runs p's Register, turning a registration panic into its
// error.
func registerPlugin(e *Engine, p Plugin) (err error) {
	defer func() {
		if r := recover(); r != nil {
			rerr, ok := r.(error)
			if !ok || !errors.Is(rerr, ErrInvalidMatcher) && !errors.Is(rerr, ErrDuplicateCommand) && !errors.Is(rerr, ErrInvalidJob) {
				panic(r)
			}
			err = rerr
		}
	}()
	return p.Register(e)
}

// Sender returns the named adapter's Sender wrapped in the sender
// middleware chain, or nil for an unknown name. A send through it bypasses
// the OutboundDispatcher (its per-chat order, bounds and shutdown) and the
// journal; the chain's retries, rate limits and dead letters still apply.
// Use Context.Reply, Context.Send, Engine.Send and Engine.Edit instead.
func (e *Engine) Sender(adapterName string) platform.Sender { return e.senders[adapterName] }

// Dispatcher returns the engine's OutboundDispatcher.
func (e *Engine) Dispatcher() *OutboundDispatcher { return e.out }

// HandleEvent queues ev for the handlers and returns at once. Adapters call
// it through Run; tests may call it directly. Events of one chat are
// handled in the order HandleEvent accepted them; one that a waiting
// conversation takes (Context.Next) is the conversation's, and the
// matchers do not see it. It returns ErrEngineClosed once Shutdown has
// begun, and an error wrapping ErrQueueFull when the chat already has
// WithInboundQueueSize events waiting (the event is dropped, and counted).
//
// With a journal (WithJournal), HandleEvent records ev first, and returns
// an error wrapping ErrJournal when the journal refuses: with
// journal.ErrOutage while it cannot record (offer the event again later),
// permanent with journal.ErrUnrecordable when it never will. An event
// recorded before (the platform delivered it again) is not handled again,
// and HandleEvent returns nil. With a journal of one process, give events
// once Run runs, as adapters do: Run begins by taking up the events the
// journal holds, one given before among them (handled twice), and holds
// the Engine.Send calls of a handler run before it until it has.
func (e *Engine) HandleEvent(ev platform.Event) error {
	if e.closed.Load() {
		return ErrEngineClosed
	}
	js := e.js
	since := js.begin()
	dup, err := e.journal.AppendEvent(context.Background(), ev)
	if err != nil {
		return e.notTaken(ev, err)
	}
	js.ok(since)
	if dup {
		e.seenBefore(&ev)
	}
	return nil
}

// seenBefore counts and logs ev, which the journal recorded before: the
// platform delivered it again, or something gave the engine another event
// under an ID the journal saw within its duplicate window (a fake Bot API
// started anew, whose update IDs start again, against an old data
// directory). It is not handled again.
func (e *Engine) seenBefore(ev *platform.Event) {
	e.duplicates.Add(1)
	e.limitedLog.Info("engine: an event the journal recorded before was not handled again",
		zap.String("platform", ev.Platform), zap.String("event", ev.ID), zap.String("chat", ev.Chat.ID))
}

// HandleEvents gives evs to the handlers in order, as HandleEvent gives
// each, and returns how many it took from the start: len(evs) and nil, or
// n and the error HandleEvent would have returned for evs[n] — the events
// after it are not taken either (offer them again with it). A journal
// records the events with one wait for all, where HandleEvent waits for
// each: an adapter that receives events in batches (Telegram's getUpdates)
// hands them over so (platform.Inbound.HandleAll).
func (e *Engine) HandleEvents(evs []platform.Event) (int, error) {
	if e.closed.Load() {
		return 0, ErrEngineClosed
	}
	js := e.js
	since := js.begin()
	var dups []bool
	var err error
	if b, ok := e.journal.(journal.EventBatcher); ok {
		dups, err = b.AppendEvents(context.Background(), evs)
	} else {
		dups, err = journal.AppendEach(context.Background(), e.journal, evs)
	}
	for i, dup := range dups {
		if dup {
			e.seenBefore(&evs[i])
		}
	}
	n := len(dups)
	if err != nil && n < len(evs) {
		return n, e.notTaken(evs[n], err)
	}
	js.ok(since)
	return len(evs), nil
}

// notTaken returns the error of ev, which the journal did not take (err):
// the engine's own refusal, counted and logged by enqueue, or the
// journal's failure, counted here.
func (e *Engine) notTaken(ev platform.Event, err error) error {
	if r := refusalOf(err); r != nil {
		return r
	}
	e.dropped.Add(1)
	err = fmt.Errorf("engine: event %s from %s not taken: %w", ev.ID, ev.Platform, e.js.failed("event", err))
	if errors.Is(err, journal.ErrUnrecordable) {
		// Never to be taken: the adapter drops it.
		e.limitedLog.Error("engine: the journal refuses an event for what it is; it is dropped", zap.Error(err))
	}
	return err
}

// enqueue queues in's event for its handlers, refusing it when its chat's
// queue is full (unless in.Held) or the engine stops. Its errors are
// refusals (see refusalOf).
func (e *Engine) enqueue(in journal.Incoming) error {
	// The task keeps the handling, made now, and not in: the event is
	// kept once, in the handling, and offered from there.
	rec := in.Record
	h := handling.New(in.Event, rec, in.Redelivered)
	key := h.Key()
	task := func(context.Context) error {
		switch e.offer(h.EventRef(), rec) {
		case offerTaken: // a waiting conversation took it
		case offerBlocked: // the handler middleware stopped it
			e.endHandling(h)
		case offerRefused: // the handler middleware saw it already
			e.runHandling(h, handling.Start{}, true)
		default:
			e.runHandling(h, handling.Start{}, false)
		}
		return nil
	}
	var err error
	if in.Held {
		err = e.in.Push(key, task)
	} else {
		err = e.in.Submit(key, task)
	}
	switch {
	case err == nil:
		e.received.Add(1)
		if rec != nil {
			e.js.events.Add(1)
		}
		return nil
	case errors.Is(err, ErrDispatcherClosed):
		return errStopping
	default:
		e.dropped.Add(1)
		return &refusal{fmt.Errorf("engine: event %s from %s not queued: %w", in.Event.ID, in.Event.Platform, err)}
	}
}

// runHandling runs h once, as s says — its first run, or a replay — and
// then parks it if it waits, or ends it: its events are done, and the
// presses it had and did not answer are answered empty. A run a forced
// shutdown cut off leaves h for the journal to hand over again; one an
// outage of the journal stopped is held until the journal records again
// (outage.go). With
// inner, the handlers run without the engine's handler middleware, which
// saw the event already (see offer). It returns the run.
func (e *Engine) runHandling(h *handling.Handling, s handling.Start, inner bool) *handling.Run {
	// Of the executor's base, not of the task's context: the task has no
	// timeout of its own (RunTimeout -1), and arming a deadline would
	// cost every handling a timer.
	rctx := handling.NewRunContext(e.in.Base(), e.opts.handlerTimeout)
	defer rctx.End(nil)
	r := h.NewRun((*env)(e), rctx, s)
	handled := e.process(r, inner)
	r.End()
	outage := r.Outage() != nil && r.Diverged() == nil && !r.Waiting()
	if s.Again && !outage {
		e.outage.through()
	}
	switch {
	case !handled:
		// Cut off: a journal keeps its events for the next start.
	case outage:
		// The journal's outage stopped it: it runs again once the
		// journal records again, its events not done meanwhile.
		h.AfterOutage(r)
		e.outage.hold(h, inner)
		return r
	case r.Waiting() && r.Diverged() == nil:
		h.AnswerPresses((*env)(e), e.limitedLog) // none sits unanswered while it waits
		e.waits.Park(h.Waiting())
	default:
		e.endHandling(h)
	}
	return r
}

// droppedHandedOver ends h here, and reports true, if its journal handed
// its events to another member while it waited (see journal.Parker): that
// member runs it again, and this one must not. Its events are counted
// out, not marked done.
func (e *Engine) droppedHandedOver(h *handling.Handling) bool {
	if !h.HandedOver() {
		return false
	}
	h.End(func(own journal.Record, taken []journal.Record) bool {
		n := len(taken)
		if own != nil {
			n++
		}
		e.js.events.Add(-int64(n))
		return false
	})
	return true
}

// endHandling ends h for good: its presses unanswered are answered, and
// its events done.
func (e *Engine) endHandling(h *handling.Handling) {
	h.AnswerPresses((*env)(e), e.limitedLog)
	h.End(func(own journal.Record, taken []journal.Record) bool {
		if hd, ok := own.(journal.Holder); ok && len(taken) > 0 {
			// Removed with its own, which may wait for its covered sends.
			return e.js.doneEventWith(hd, taken)
		}
		ok := true
		for _, r := range taken {
			ok = e.js.doneEvent(r) && ok
		}
		return e.js.doneEvent(own) && ok
	})
}

// process runs the matching handlers of the run r. It reports whether the
// run ended: false when a forced shutdown cancelled it, before or while
// its handlers ran (a journal then keeps the event for the next start).
// It stops at a handler that waits. With inner, each handler runs
// without the engine's handler middleware (see runHandling).
func (e *Engine) process(r *handling.Run, inner bool) (handled bool) {
	ctx, ev := r.Context(), r.Event()
	if ctx.Err() != nil {
		// A forced shutdown cancelled the event before it was handled:
		// running its handlers now would only have their replies refused.
		e.dropped.Add(1)
		return false
	}
	first := r.First()
	defer func() { handled = e.in.Base().Err() == nil }()
	in := input{isMessage: ev.Kind == platform.EventMessage}
	if in.isMessage {
		in.cmd, in.isCommand = command.Parse(ev.Text, e.opts.prefixes)
	}
	// Each handler gets its own Context with its match, so a later
	// matcher never changes what an earlier handler (or a goroutine it
	// started) sees; rules see a Context of the match being tested.
	matched := false
	blocked, blockPriority := false, 0
	for _, m := range *e.matchers.Load() {
		if blocked && m.priority > blockPriority {
			break
		}
		found, ok := e.test(r, m, &in)
		if !ok {
			continue
		}
		if !matched && first {
			e.matched.Add(1)
		}
		matched = true
		if inner {
			e.run(r.Ctx(found), m.inner)
		} else {
			e.run(r.Ctx(found), m.handler)
		}
		if r.Stopped() {
			return
		}
		if m.block {
			blocked, blockPriority = true, m.priority
		}
	}
	if !matched {
		if first {
			e.unmatched.Add(1)
		}
		switch {
		case e.opts.fallback == nil:
		case inner:
			e.run(r.Ctx(handling.Match{}), e.opts.fallback)
		default:
			e.run(r.Ctx(handling.Match{}), e.fallback)
		}
	}
	return
}

// What offer did with an event.
const (
	offerNone    = iota // no conversation waits for it
	offerTaken          // a waiting conversation took it
	offerRefused        // the waiting conversations refused it, after the handler middleware saw it
	offerBlocked        // the handler middleware stopped it
)

// offer offers ev, just taken, to the handlings that wait for it, oldest
// first, and reports what became of it. It runs on ev's chat's task,
// through the engine's handler middleware: an event a conversation takes
// is handled by middleware as any other, once — one that no conversation
// takes then goes to the matchers' handlers without it (offerRefused), and
// one the middleware stopped goes nowhere (offerBlocked). The
// middleware's effects have ids of the event's own, apart from its
// handlers'.
func (e *Engine) offer(ev *platform.Event, rec journal.Record) int {
	waits := e.waits.For(ev)
	switch {
	case len(waits) == 0:
		return offerNone
	case len(e.opts.handlerMiddleware) == 0:
		if e.offerTo(waits, ev, rec) {
			return offerTaken
		}
		return offerNone
	}
	rctx := handling.NewRunContext(e.in.Base(), e.opts.handlerTimeout)
	defer rctx.End(nil)
	r := handling.New(*ev, nil, false).NewRun((*env)(e), rctx, handling.Start{Middleware: true})
	outcome := offerBlocked
	e.run(r.Ctx(handling.Match{}), chain(func(*Context) error {
		outcome = offerRefused
		if e.offerTo(waits, ev, rec) {
			outcome = offerTaken
		}
		return nil
	}, e.opts.handlerMiddleware))
	r.End()
	return outcome
}

// offerTo runs the handlings of waits again, one at a time, offering ev,
// until one takes it.
func (e *Engine) offerTo(waits []*handling.Wait, ev *platform.Event, rec journal.Record) bool {
	for _, w := range waits {
		if !e.waits.Unpark(w) {
			continue
		}
		if e.droppedHandedOver(w.Handling()) {
			// Its partition went to another member while it waited, and
			// came back: the member runs it again from its event, handed
			// over anew.
			continue
		}
		r := e.runHandling(w.Handling(), handling.Start{Offer: ev, OfferRec: rec}, false)
		if r.OfferTaken() {
			e.awaited.Add(1)
			return true
		}
	}
	return false
}

// test runs m's matcher and rules, recovering a panicking rule: it is
// logged, counted and reported like a handler panic, and the matcher does
// not accept the event; the other matchers still run.
func (e *Engine) test(r *handling.Run, m *matcher, in *input) (found handling.Match, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
			e.handlerPanics.Add(1)
			pe := &HandlerPanicError{Value: p, Stack: debug.Stack()}
			x := r.Ctx(handling.Match{})
			r.Logger().Error("matcher rule panicked", zap.Any("panic", p), zap.ByteString("stack", pe.Stack))
			if e.opts.onError != nil {
				e.callOnError(&x, pe)
			}
		}
	}()
	return m.test(r, in, e.opts.botUsername)
}

// run runs one handler, the view x of its run, logging and reporting its
// error or panic. A handler that returns because it waits (ErrWaiting)
// did not fail; one whose replay diverged fails with the divergence.
func (e *Engine) run(x handling.Ctx, h Handler) {
	var err error
	r := x.Run()
	c := hctx.New(x)
	defer func() {
		if rec := recover(); rec != nil {
			if r.Waiting() {
				// It waits, and panicked on the way out (a result of Next it
				// did not check): nothing it does from here on is done.
				c.Logger().Debug("handler panicked after its wait began", zap.Any("panic", rec))
				return
			}
			e.handlerPanics.Add(1)
			pe := &HandlerPanicError{Value: rec, Stack: debug.Stack()}
			c.Logger().Error("handler panicked", zap.Any("panic", rec), zap.ByteString("stack", pe.Stack))
			err = pe
		} else {
			diverged := r.Diverged()
			switch {
			case e.in.Base().Err() != nil:
				// A forced shutdown cut the run off: the journal keeps the
				// event, to handle it again at the next start. No failure
				// of the handler's, and no error hook: what it would send
				// takes no id a run again uses.
				if err != nil {
					c.Logger().Info("handler cut off by a forced shutdown", zap.Error(err))
				}
				return
			case diverged == nil && r.Outage() != nil:
				// The journal's outage stopped it, not a failure of its
				// own: it runs again once the journal records (the engine
				// logged the outage).
				c.Logger().Debug("handler stopped by an outage of the journal; it runs again once the journal records", zap.Error(err))
				return
			case diverged != nil:
				err = diverged
				e.reportDivergence(r.Handling(), err)
			case r.Waiting():
				return // it waits: see Context.Next
			case errors.Is(err, ErrCancelled):
				c.Logger().Info("the user cancelled the conversation")
				e.cancelled(&x)
				return
			case err != nil && isUserError(err):
				// The handler's answer to its user, not a failure.
				c.Logger().Info("handler ended with a user error", zap.Error(err))
			case err != nil:
				e.handlerErrors.Add(1)
				c.Logger().Warn("handler failed", zap.Error(err))
			}
		}
		if err != nil && e.opts.onError != nil {
			e.callOnError(&x, err)
		}
	}()
	err = h(c)
}

// callOnError calls the error hook with a Context of x's handling whose
// effects are numbered apart from the handlers' (HookCtx), so that they
// never take an id a run of the handlers will use.
func (e *Engine) callOnError(x *handling.Ctx, err error) {
	defer func() {
		if r := recover(); r != nil {
			x.Logger().Error("error hook panicked", zap.Any("panic", r))
		}
	}()
	e.opts.onError(hctx.New(x.HookCtx()), err)
}

// reportDivergence logs a handling that diverged, at most once a message
// every interval.
func (e *Engine) reportDivergence(h *handling.Handling, err error) {
	ev := h.Event()
	e.limitedLog.Warn("engine: a handler run again diverged from its first run; its conversation ends",
		zap.String("platform", ev.Platform), zap.String("event", ev.ID), zap.Error(err))
}

// isUserError reports whether err is a *UserError: a handler's answer to
// its user, not a failure of the handler.
func isUserError(err error) bool {
	var ue *UserError
	return errors.As(err, &ue)
}

// Run runs the engine on its journal until ctx ends, Shutdown is called,
// or an adapter fails for good. It first takes up what the journal holds
// (dead letters, sends not done, then events not handled; it returns the
// journal's error if it cannot read them), starts the schedule, and joins
// the journal, which runs the adapters this process leads and feeds their
// events to HandleEvent (an adapter learns which ones it refused, to have
// them delivered again). With a journal shared by several processes
// (package cluster's Shared), see journal.Journal.
//
// Then it stops the engine, giving pending handlers and replies
// WithShutdownTimeout to finish (see Shutdown):
//
//  1. Adapters stop taking events (platform.Inbound's Receiving closes);
//     those whose sends need their connections keep them open, and what
//     they do on their way out is bounded by the shutdown timeout.
//  2. Shutdown: queued events are handled, then every pending reply is
//     sent.
//  3. The adapters' Run is ended, and the journal left.
//
// Run returns nil after a clean stop; the failing adapter's error if one
// failed; and, joined to it, the Shutdown error if pending work had to be
// interrupted. Run may be called once; it returns ErrAlreadyRunning after
// that, ErrEngineClosed after Shutdown, and ErrNoAdapter without adapters.
func (e *Engine) Run(ctx context.Context) error {
	if len(e.adapters) == 0 {
		return ErrNoAdapter
	}
	if e.closed.Load() {
		return ErrEngineClosed
	}
	if !e.running.CompareAndSwap(false, true) {
		return fmt.Errorf("engine: Run: %w", ErrAlreadyRunning)
	}
	sends0, events0 := e.handedOver.sends.Load(), e.handedOver.events.Load()
	backend, kept, err := e.journal.Recover(ctx)
	if err != nil {
		err = fmt.Errorf("engine: journal: %w", err)
		e.dropEarly(err) // this Run makes nothing, nor can another
		return err
	}
	if sends, events := e.handedOver.sends.Load()-sends0, e.handedOver.events.Load()-events0; sends > 0 || events > 0 {
		// What a crash or a stop left to a one-process journal: an
		// operator sees the journal at work. (A shared journal hands
		// over through its partitions and gateway, which log their own.)
		e.log.Info("engine: taking up what the journal held",
			zap.Int64("sends", sends), zap.Int64("events", events), zap.Int("dead_letters", len(kept)))
	}
	if backend != nil {
		e.deadLetters.SetBackend(backend, func(err error) { e.js.failed("dead letter", err) })
	}
	e.deadLetters.Restore(kept)
	e.makeEarly()   // the sends made before, after what the journal held
	e.state.start() // scheduled jobs and sends, after those

	jctx, leave := context.WithCancel(context.WithoutCancel(ctx))
	defer leave()
	joined := make(chan error, 1)
	go func() { joined <- e.journal.Join(jctx) }()
	e.log.Info("engine running", zap.Strings("adapters", (*member)(e).Adapters()))

	var runErr error
	left := false
	select {
	case <-ctx.Done():
	case <-e.stopping: // Shutdown was called
	case runErr = <-e.failed:
		e.log.Error("adapter failed; stopping", zap.Error(runErr))
	case runErr = <-joined:
		left = true
		if runErr != nil {
			e.log.Error("the journal failed; stopping", zap.Error(runErr))
		}
	}

	// The shutdown timeout counts from here: stopping the adapters is
	// part of it, and what they and the journal do on their way out ends
	// with it.
	sctx, scancel := context.WithTimeout(context.Background(), e.opts.shutdownTimeout)
	defer scancel()
	context.AfterFunc(sctx, e.endStop)
	e.closed.Store(true) // no event is taken from here on
	leave()
	if err := e.Shutdown(sctx); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if !left {
		if err := <-joined; err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("engine: journal: %w", err))
		}
	}
	return runErr
}

// handleFrom is the engine's side of its adapters' Inbound.Handle:
// HandleEvent, its refusals logged (at most once an interval).
func (e *Engine) handleFrom(ev platform.Event) error {
	err := e.HandleEvent(ev)
	if err != nil {
		e.logRefused(ev, err)
	}
	return err
}

// handleAllFrom is the engine's side of Inbound.HandleAll: HandleEvents,
// as handleFrom.
func (e *Engine) handleAllFrom(evs []platform.Event) (int, error) {
	n, err := e.HandleEvents(evs)
	if err != nil && n < len(evs) {
		e.logRefused(evs[n], err)
	}
	return n, err
}

func (e *Engine) logRefused(ev platform.Event, err error) {
	e.limitedLog.Warn("engine: event refused", zap.String("platform", ev.Platform), zap.String("chat", ev.Chat.ID),
		zap.String("event", ev.ID), zap.Error(err))
}

// Shutdown stops the engine in order: HandleEvent refuses new events, and
// Run, if it is running, begins to stop its adapters; the events already
// accepted are handled and running handlers finish; then every reply they
// made is sent (the OutboundDispatcher's Shutdown). It returns nil when all
// of that finished before ctx ended.
//
// If ctx ends first, Shutdown force-closes both stages: handlers' contexts
// and pending sends' contexts are cancelled, events not yet handled are
// dropped, and pending sends run once with their cancelled context, so their
// Futures resolve with the error and the failures are kept as dead letters.
// Shutdown waits up to five more seconds for each stage, then returns
// ctx.Err(). So after Shutdown returns, every reply a handler made has been
// sent or its Future resolved with an error, unless a sender or handler
// ignores its context.
//
// Shutdown may be called more than once and concurrently: a call waits
// for an earlier one to finish and then for what is left. Each call's ctx
// bounds the shutdown: if it ends while an earlier call is still waiting
// for handlers or sends (Run's own call, with the shutdown timeout, say),
// this call force-closes them as above and returns ctx.Err(). Run calls
// Shutdown when its context ends, and returns after an outside call to
// Shutdown has stopped the adapters.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.closed.Store(true)
	e.closeOnce.Do(func() { close(e.stopping) })
	forced, err := e.takeShutdown(ctx)
	if err != nil {
		return err
	}
	defer func() { <-e.shutSem }()
	e.state.stop() // no more scheduled runs begin; the handler pool ends those begun
	if !e.running.Load() {
		e.dropEarly(ErrDispatcherClosed) // Run never made them
	}
	e.in.Close()
	e.outage.close() // what it holds stays in the journal
	err = e.in.Drain(ctx)
	e.waits.Close() // no handling runs to park a wait; their expiry timer stops
	if err == nil {
		err = e.out.Shutdown(ctx)
	}
	switch {
	case err == nil && !forced:
		return nil
	case err == nil:
		err = ctx.Err() // forced behind an earlier call, which then ended
	case !forced:
		e.forceClose(err)
	}
	for _, stage := range []struct {
		name string
		d    *executor.Executor
	}{{"handlers", e.in}, {"sends", e.out.x}} {
		gctx, cancel := context.WithTimeout(context.Background(), forceGrace)
		if gerr := stage.d.Shutdown(gctx); gerr != nil {
			e.log.Error("still running after cancellation; they ignore their context",
				zap.String("stage", stage.name), zap.Error(gerr))
		}
		cancel()
	}
	return err
}

// takeShutdown takes the token of a running Shutdown, waiting for an
// earlier call to finish; a free token is taken even when ctx has ended.
// If ctx ends while an earlier call still waits for handlers or sends,
// takeShutdown force-closes them (forced) and gives that call a grace to
// end with the cancelled work; it fails with ctx.Err() only if the earlier
// call did not end within the grace.
func (e *Engine) takeShutdown(ctx context.Context) (forced bool, err error) {
	select {
	case e.shutSem <- struct{}{}:
		return false, nil
	default:
	}
	select {
	case e.shutSem <- struct{}{}:
		return false, nil
	case <-ctx.Done():
	}
	e.forceClose(ctx.Err())
	gctx, cancel := context.WithTimeout(context.Background(), 2*forceGrace)
	defer cancel()
	select {
	case e.shutSem <- struct{}{}:
		return true, nil
	case <-gctx.Done():
		return true, ctx.Err()
	}
}

// forceClose cancels the handlers and sends still pending after a
// shutdown ran out of time (err says how), logging what it cut off.
func (e *Engine) forceClose(err error) {
	hs, st := e.inStats(), e.out.Stats()
	e.log.Warn("shutdown timed out; cancelling pending work",
		zap.Int("events_pending", hs.Queued+hs.Running),
		zap.Int("sends_pending", st.Queued+st.Running+st.Waiting), zap.Error(err))
	e.in.ForceClose()
	e.out.ForceClose()
}

// replayID names the replay of dl for the journal: its id in the store
// (the journal's, shared by the bot's processes) and the time it failed,
// so that a store's own ids, which start again with each process, name
// no other letter. Its "dlq/" is no adapter's name, as a handler's send's
// "platform:event/n" and SendID's "out/" are not.
func replayID(dl sender.DeadLetter) string {
	return "dlq/" + dl.ID + "/" + strconv.FormatInt(dl.At.UnixNano(), 10)
}

// inStats returns the inbound executor's statistics.
func (e *Engine) inStats() DispatcherStats { return DispatcherStats(e.in.Stats()) }

// Stats returns a snapshot of the engine's counters.
func (e *Engine) Stats() Stats {
	return Stats{
		Received:      e.received.Load(),
		Dropped:       e.dropped.Load(),
		Matched:       e.matched.Load(),
		Unmatched:     e.unmatched.Load(),
		Awaited:       e.awaited.Load(),
		HandlerErrors: e.handlerErrors.Load(),
		HandlerPanics: e.handlerPanics.Load(),
		Handlers:      e.inStats(),
		Outbound:      e.out.Stats(),
		Sends:         e.counters.Snapshot(),
		DeadLetters:   e.deadLetters.Len(),
		Duplicates:    e.duplicates.Load(),
		RoomWaits:     e.roomWaits.Load(),
		Journal:       e.js.stats(),
	}
}

// DeadLetters returns a copy of the failed sends kept for replay, oldest
// first.
func (e *Engine) DeadLetters() []sender.DeadLetter { return e.deadLetters.List() }

// DeadLetterStore returns the store that keeps the engine's failed sends.
func (e *Engine) DeadLetterStore() *sender.DeadLetterStore { return e.deadLetters }

// ReplayDeadLetters takes every kept failed send out of the store and
// submits it again through the OutboundDispatcher and the sender chain,
// oldest first, so replays of one chat keep their order among themselves.
// They join the back of each chat's queue: they arrive after messages
// queued before the replay, even newer ones. A replay that fails again is
// kept again.
//
// It returns how many sends were resubmitted. Sends that could not be
// resubmitted (the adapter is unknown, the journal refused, the chat's
// queue is full, the engine is closed, or ctx ended) go back to the store
// (those the dispatcher refused as its newest letters), and their errors
// are returned joined. Replays run one at a time: a call made while one
// runs waits for it, and replays what is left — each letter is sent once.
//
// With a journal, a replayed letter's send has an id of its own (see
// SendID): a letter that the journal saw replayed within its duplicate
// window is not sent again — one that the store of another process of
// the bot replayed (each lists the letters it made and those the journal
// held when it started), or that a crash right after its replay left in
// the store.
func (e *Engine) ReplayDeadLetters(ctx context.Context) (int, error) {
	// One replay at a time: two would both take a letter listed before
	// either removed it, and send it twice.
	e.replaying.Lock()
	defer e.replaying.Unlock()
	n := 0
	var errs []error
	for _, dl := range e.deadLetters.List() {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		req := dl.Request
		if _, err := e.queueSend(handling.ChatKey(req.Platform, req.Target.ID), journal.Send{ID: replayID(dl), Request: req, Repeat: true}, nil); err != nil {
			errs = append(errs, fmt.Errorf("engine: replay to %s:%s: %w", req.Platform, req.Target.ID, err))
			// Refused by the dispatcher, the replay was recorded, then
			// removed: the journal knows its id, and would take the next
			// replay for it. The letter is kept anew, under an id of its
			// own. (A journal that refused recorded nothing.)
			if !errors.Is(err, ErrJournal) && !errors.Is(err, ErrNoSender) && e.deadLetters.Remove(dl.ID) > 0 {
				e.deadLetters.Add(dl)
			}
			continue
		}
		e.deadLetters.Remove(dl.ID)
		n++
	}
	return n, errors.Join(errs...)
}
