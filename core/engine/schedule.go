package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/internal/schedule"
	"github.com/heraldbot/herald/platform"
)

// Scheduled work — jobs (Every, At) and delayed sends (SendAt) — is run by
// internal/schedule, from the schedule store, on the handler pool: so
// Shutdown waits for the runs as for handlers.

// ErrInvalidJob is wrapped by the panic of Every or At given a bad job: a
// nil job, an empty name, a name already taken, or an interval that is not
// positive.
var ErrInvalidJob = errors.New("engine: invalid job")

// DefaultSchedulePoll is how often the engine lists its schedule store
// for delayed sends made by other processes or left by stopped ones,
// unless WithSchedulePoll says otherwise.
const DefaultSchedulePoll = 5 * time.Second

// leaseMargin is what a claim's lease lasts beyond the handler timeout,
// which bounds a job's run.
const leaseMargin = time.Minute

// Job is work the engine runs on a schedule: see [Engine.Every] and
// [Engine.At]. ctx is cancelled when the run's time (the handler timeout)
// is up, or when a forced shutdown interrupts it. A returned error, or a
// panic, is logged; the schedule goes on.
type Job func(ctx context.Context) error

// stateOptions are the options of sessions and the schedule.
type stateOptions struct {
	sessions state.Store
	schedule state.Store
	poll     time.Duration
}

// WithSessionStore keeps sessions in store instead of a
// [state.MemoryStore] of the engine's own (whose sessions end with the
// process); package cluster's StateStore keeps them across restarts,
// shared by the processes of one bot. Repeated use keeps the last; nil
// means the default.
func WithSessionStore(store state.Store) Option {
	return optionFunc(func(o *options) { o.state.sessions = store })
}

// WithScheduleStore keeps the schedule — when each job runs next, and the
// delayed sends waiting — in store instead of a [state.MemoryStore] of the
// engine's own, whose schedule ends with the process. Package cluster's
// state.Store keeps it across restarts, shared by the processes of one bot,
// each entry run by one of them. Repeated use keeps the last; nil means
// the default.
func WithScheduleStore(store state.Store) Option {
	return optionFunc(func(o *options) { o.state.schedule = store })
}

// WithSchedulePoll sets how often the engine lists its schedule store for
// delayed sends scheduled by other processes, or left by processes that
// stopped (see [Engine.SendAt]). d <= 0 means DefaultSchedulePoll (5 s).
// Repeated use keeps the last.
func WithSchedulePoll(d time.Duration) Option {
	return optionFunc(func(o *options) { o.state.poll = d })
}

// stateful is the engine's state outside events: its session store and
// its scheduler.
type stateful struct {
	sessions state.Store
	sched    *schedule.Scheduler
}

func newStateful(e *Engine) *stateful {
	o := e.opts.state
	if o.sessions == nil {
		o.sessions = state.NewMemoryStore()
	}
	if o.schedule == nil {
		o.schedule = state.NewMemoryStore()
	}
	if o.poll <= 0 {
		o.poll = DefaultSchedulePoll
	}
	return &stateful{
		sessions: o.sessions,
		sched: schedule.New(schedule.Config{
			Store:      o.schedule,
			Poll:       o.poll,
			Lease:      e.opts.handlerTimeout + leaseMargin,
			RunTimeout: e.opts.handlerTimeout,
			Submit:     func(key string, task func(context.Context) error) error { return e.in.Submit(key, task) },
			Closed:     ErrDispatcherClosed,
			Send: func(r platform.SendRequest, id string) error {
				_, err := e.sendOut(r.Platform, r.Target, r.Message, id)
				return err
			},
			Logger:  e.log,
			Limited: e.limitedLog,
		}),
	}
}

// start starts the scheduler; Run calls it once it took up the journal.
func (st *stateful) start() { st.sched.Start() }

// stop stops the scheduler and waits for its loop; Shutdown calls it
// before it closes the handler pool, which then runs what was due.
func (st *stateful) stop() { st.sched.Stop() }

// Every runs job every interval, under name, from the engine's Run until
// its Shutdown, and returns the job, whose Stop stops it: the first run one
// interval after the first start, then on the interval's beat; a run still
// going when the next is due delays it, and the runs missed meanwhile are
// skipped.
//
// When the next run is due is kept in the schedule store
// ([WithScheduleStore]) under name: keep name stable across versions of
// the bot. With a store that lasts (package cluster's), the beat goes on
// across restarts (a run missed while the bot was down is made once at
// start), and of several processes sharing the store one makes each run; a
// run is claimed in the store before it starts, and a run a crash cut off
// is made again once its claim's lease (the handler timeout plus a minute)
// ended. With the default MemoryStore, the job lives with the process.
//
// Runs go through the handler pool (WithHandlerConcurrency,
// Stats().Handlers), bounded by WithHandlerTimeout (the job's ctx). A nil
// job, an empty name, a name another job has, or an interval <= 0 is a bug
// in the program: Every panics with an error wrapping ErrInvalidJob (Use
// returns it as the plugin's error).
func (e *Engine) Every(name string, interval time.Duration, job Job) *JobHandle {
	return e.registered(e.state.sched.Every(name, interval, job))
}

// registered returns the handle of the job of key, or panics with its
// registration error, wrapping ErrInvalidJob.
func (e *Engine) registered(key string, err error) *JobHandle {
	if err != nil {
		panic(fmt.Errorf("%w: %w", ErrInvalidJob, err))
	}
	return &JobHandle{e: e, key: key}
}

// JobHandle is a job of Every or At. Its zero value is not usable; it is
// safe for concurrent use.
type JobHandle struct {
	e   *Engine
	key string
}

// Stop stops the job in every process that shares the schedule store: it
// is marked done there, so that it runs no more — here or elsewhere, now
// or after a restart — and forgotten here. A run under way goes on; Stop
// does not wait for it. To run the job again, register it under another
// name. Stop returns ctx's error or the store's, wrapped.
func (j *JobHandle) Stop(ctx context.Context) error { return j.e.state.sched.StopJob(ctx, j.key) }

// At runs job once at t, under name. If t is past when the engine runs —
// it was when the bot was down, or when At was first called — the job runs
// at once. Whether it ran is kept in the schedule store, under name and t,
// so that it runs once across restarts and processes when the store lasts
// (package cluster's), as Every's runs do; with the default MemoryStore it
// runs once per process. Its other rules are Every's.
func (e *Engine) At(name string, t time.Time, job Job) *JobHandle {
	return e.registered(e.state.sched.At(name, t, job))
}

// SendAt schedules msg to be sent to chat of the adapter platformName at
// at, and returns the send's id (for CancelSend), once the send is in the
// schedule store: with a store that lasts (package cluster's), it survives
// restarts, one of several processes sharing the store makes it, and a
// send whose time passed while no process ran is made at start. When due,
// it goes through Engine.Send (the chat's order, the sender chain, the
// journal, under an id that makes a repeat after a crash no second send)
// and leaves the store once Send accepted it; one that fails for good is a
// dead letter. It is made only while the engine runs.
//
// SendAt returns ErrNoChat for a chat without an ID, ErrNoSender for an
// adapter the engine does not have, an error wrapping
// platform.ErrInvalidMessage for a message that cannot be sent, ctx's
// error, and the store's error, wrapped. SendID(id) names the send: a
// SendAt with the id of a send still waiting schedules nothing more and
// returns id, so a handler run again after a crash does not schedule its
// send twice (name it after the event); without it the id is random.
func (e *Engine) SendAt(ctx context.Context, at time.Time, platformName string, chat platform.Chat, msg platform.OutboundMessage, opts ...SendOption) (string, error) {
	switch {
	case chat.ID == "":
		return "", ErrNoChat
	case e.senders[platformName] == nil:
		return "", ErrNoSender
	}
	if err := msg.Validate(); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var so sendOptions
	for _, o := range opts {
		if o != nil {
			o.applySend(&so)
		}
	}
	return e.state.sched.SendAt(ctx, at, platform.SendRequest{Platform: platformName, Target: chat, Message: msg}, so.id)
}

// SendAfter is shorthand for SendAt(ctx, time.Now().Add(d), …).
func (e *Engine) SendAfter(ctx context.Context, d time.Duration, platformName string, chat platform.Chat, msg platform.OutboundMessage, opts ...SendOption) (string, error) {
	return e.SendAt(ctx, time.Now().Add(d), platformName, chat, msg, opts...)
}

// CancelSend removes the delayed send id (from SendAt) from the schedule.
// It returns an error wrapping state.ErrNotFound when there is no such send
// waiting (it was made, or cancelled, or never scheduled), ctx's error, or
// the store's. A send being made as CancelSend runs may be made anyway.
func (e *Engine) CancelSend(ctx context.Context, id string) error {
	return e.state.sched.Cancel(ctx, id)
}

// Scheduled returns the ids of the delayed sends waiting in the schedule
// store and when each is due, from every process that shares the store.
func (e *Engine) Scheduled(ctx context.Context) (map[string]time.Time, error) {
	return e.state.sched.Sends(ctx)
}
