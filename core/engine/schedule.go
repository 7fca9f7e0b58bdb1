package engine

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/platform"
)

// Scheduled work: jobs (Every, At) and delayed sends (SendAt). Everything
// scheduled is an entry in the schedule store, under a key of its own:
//
//	every/<name>        a job run every interval: when it runs next
//	at/<name>/<unix ns> a job run once: when, and whether it ran
//	send/<id>           a delayed send: when, and the send
//
// A process follows the entries it can run in a queue of due times, and
// lists the store every poll interval for delayed sends that others
// scheduled (or that a process that stopped left). When an entry is due,
// a task on the inbound executor (under a key of the entry's own, so an
// entry is run by one task at a time) reads it again, claims it by writing
// its owner and a lease with compare and swap — of several processes that
// find it due, one wins — runs it, and writes what is next: the next due
// time, done, or (for a send) nothing. A claim whose owner died is taken
// over when its lease ends. The tasks run on the handler pool, so
// Shutdown waits for them as for handlers.

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

// stateOpTimeout bounds a write to the schedule store after a run.
const stateOpTimeout = 10 * time.Second

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
	sched    *scheduler
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
		sched: &scheduler{
			e:        e,
			store:    o.schedule,
			poll:     o.poll,
			lease:    e.opts.handlerTimeout + leaseMargin,
			owner:    randomID(),
			jobs:     make(map[string]*jobSpec),
			names:    make(map[string]bool),
			known:    make(map[string]time.Time),
			inflight: make(map[string]bool),
			wake:     make(chan struct{}, 1),
		},
	}
}

// start starts the scheduler; Run calls it once it took up the journal.
func (st *stateful) start() { st.sched.start() }

// stop stops the scheduler and waits for its loop; Shutdown calls it
// before it closes the handler pool, which then runs what was due.
func (st *stateful) stop() { st.sched.stop() }

// randomID returns 16 random hex digits.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return hex.EncodeToString(b[:])
}

// schedEntry is what the schedule store holds under a key.
type schedEntry struct {
	// Due is when the entry runs next; zero once a job of At ran.
	Due time.Time `json:"due,omitzero"`
	// Every is an Every job's interval.
	Every time.Duration `json:"every,omitempty"`
	// Done is set once an At job ran.
	Done bool `json:"done,omitempty"`
	// Send is a delayed send's request.
	Send *platform.SendRequest `json:"send,omitempty"`
	// Owner is the process that claimed the entry to run it, until
	// Until.
	Owner string    `json:"owner,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// lookAt returns when a process should look at the entry next: its due
// time, or, while another owner's claim lasts, the claim's end.
func (en *schedEntry) lookAt(owner string) time.Time {
	if en.Owner != "" && en.Owner != owner && en.Until.After(en.Due) {
		return en.Until
	}
	return en.Due
}

// nextTick returns the first of due, due+every, due+2·every, … after now:
// the runs missed meanwhile are skipped, and the job keeps its phase.
func nextTick(due time.Time, every time.Duration, now time.Time) time.Time {
	if due.After(now) {
		return due
	}
	if due.IsZero() {
		return now.Add(every)
	}
	n := now.Sub(due)/every + 1
	return due.Add(n * every)
}

// jobSpec is a registered job.
type jobSpec struct {
	name  string
	key   string
	every time.Duration // an Every job's interval; 0 for At
	at    time.Time     // an At job's time
	run   Job
}

// scheduler runs the schedule. Its loop goroutine lives from start to
// stop; the runs are tasks on the inbound executor.
type scheduler struct {
	e     *Engine
	store state.Store
	poll  time.Duration
	lease time.Duration
	owner string // this process's name in claims

	mu       sync.Mutex
	jobs     map[string]*jobSpec  // registered jobs, by key
	names    map[string]bool      // registered jobs' names
	fresh    []*jobSpec           // registered jobs not yet looked up in the store
	known    map[string]time.Time // entries followed, by key: when to look at each
	queue    dueQueue             // the known entries by time; items not in known are stale
	inflight map[string]bool      // entries a task is running
	state    int                  // schedNew, schedRunning, schedStopped
	wake     chan struct{}
	cancel   context.CancelFunc
	done     chan struct{}
}

const (
	schedNew = iota
	schedRunning
	schedStopped
)

// Every runs job every interval, under name, from the engine's Run until
// its Shutdown: the first run one interval after the first start, then on
// the interval's beat. A run that is still going when the next is due
// delays it; the runs missed meanwhile are skipped.
//
// When the next run is due is kept in the schedule store (see
// [WithScheduleStore]), under name: keep name stable across versions of
// the bot. With a store that lasts (package cluster's), the beat goes on
// across restarts, and a process that finds the next run missed — the bot
// was down when it was due — runs it once at start, skipping the others
// missed; with several processes sharing the store, each run is made by
// one of them. With the default MemoryStore, the job lives with the
// process. A run is claimed in the store before it starts: a run cut off
// by a crash is made again, after its claim's lease (the handler timeout
// plus a minute) ended.
//
// Runs go through the handler pool: they count against
// WithHandlerConcurrency and in Stats().Handlers, and WithHandlerTimeout
// bounds each (the job's ctx). Every may be called before or while the
// engine runs. A nil job, an empty name, a name another job has, or an
// interval <= 0 is a bug in the program: Every panics with an error
// wrapping ErrInvalidJob (Use returns it as the plugin's error).
func (e *Engine) Every(name string, interval time.Duration, job Job) {
	if interval <= 0 {
		panic(fmt.Errorf("%w: %q: interval %v is not positive", ErrInvalidJob, name, interval))
	}
	e.state.sched.add(&jobSpec{name: name, key: "every/" + escapeKey(name), every: interval, run: job})
}

// At runs job once at t, under name. If t is past when the engine runs —
// it was when the bot was down, or when At was first called — the job runs
// at once. Whether it ran is kept in the schedule store, under name and t,
// so that it runs once across restarts and processes when the store lasts
// (package cluster's), as Every's runs do; with the default MemoryStore it
// runs once per process. Its other rules are Every's.
func (e *Engine) At(name string, t time.Time, job Job) {
	key := "at/" + escapeKey(name) + "/" + strconv.FormatInt(t.UnixNano(), 10)
	e.state.sched.add(&jobSpec{name: name, key: key, at: t, run: job})
}

func (s *scheduler) add(j *jobSpec) {
	switch {
	case j.run == nil:
		panic(fmt.Errorf("%w: %q: nil job", ErrInvalidJob, j.name))
	case j.name == "":
		panic(fmt.Errorf("%w: empty name", ErrInvalidJob))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names[j.name] {
		panic(fmt.Errorf("%w: two jobs named %q", ErrInvalidJob, j.name))
	}
	s.names[j.name] = true
	s.jobs[j.key] = j
	s.fresh = append(s.fresh, j)
	s.wakeLocked()
}

// SendAt schedules msg to be sent to chat of the adapter platformName at
// at, and returns the send's id (for CancelSend). It returns once the send
// is in the schedule store: with a store that lasts (package cluster's),
// it survives restarts, and of several processes sharing the store one
// makes it. A send whose time passed while no process ran is made at
// start.
//
// When due, the send goes through Engine.Send — in order with the chat's
// other sends, through the whole sender chain, and, with a journal, into
// the journal, under an id that makes a repeat of it (after a crash at the
// wrong moment) no second send — and leaves the store once Send accepted
// it. Nothing reports its outcome: a send that fails for good is a dead
// letter.
//
// SendAt returns ErrNoChat for a chat without an ID, ErrNoSender for an
// adapter the engine does not have, an error wrapping
// platform.ErrInvalidMessage for a message that cannot be sent, ctx's
// error, and the store's error, wrapped. The send may be scheduled before
// or while the engine runs; it is made only while it runs.
//
// SendID(id) names the send: a SendAt with the id of a send still waiting
// schedules nothing more and returns id, so a handler run again after a
// crash (see WithJournal) does not schedule its send twice; name it after
// the event (c.Event().Platform, c.Event().ID). Without it the id is
// random.
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
		o.applySend(&so)
	}
	id := so.id
	if id == "" {
		id = randomID()
	}
	en := schedEntry{Due: at, Send: &platform.SendRequest{Platform: platformName, Target: chat, Message: msg}}
	data, err := json.Marshal(&en)
	if err != nil {
		return "", fmt.Errorf("engine: delayed send: %w", err)
	}
	s := e.state.sched
	key := "send/" + id
	if _, err := s.store.Create(ctx, key, data, 0); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return "", cerr
		}
		if so.id != "" && errors.Is(err, state.ErrConflict) {
			return id, nil // scheduled already
		}
		return "", fmt.Errorf("engine: delayed send: %w", err)
	}
	s.mu.Lock()
	s.followLocked(key, at)
	s.mu.Unlock()
	return id, nil
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
	s := e.state.sched
	key := "send/" + id
	_, _, err := s.store.Get(ctx, key)
	if err == nil {
		err = s.store.Delete(ctx, key, 0)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("engine: cancel send %s: %w", id, err)
	}
	s.mu.Lock()
	delete(s.known, key)
	s.mu.Unlock()
	return nil
}

// Scheduled returns the ids of the delayed sends waiting in the schedule
// store and when each is due, from every process that shares the store.
func (e *Engine) Scheduled(ctx context.Context) (map[string]time.Time, error) {
	s := e.state.sched
	keys, err := s.store.Keys(ctx, "send/")
	if err != nil {
		return nil, fmt.Errorf("engine: scheduled sends: %w", err)
	}
	out := make(map[string]time.Time, len(keys))
	for _, key := range keys {
		en, _, err := s.read(ctx, key)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("engine: scheduled sends: %w", err)
		}
		out[strings.TrimPrefix(key, "send/")] = en.Due
	}
	return out, nil
}

// read returns the entry under key and its revision.
func (s *scheduler) read(ctx context.Context, key string) (schedEntry, uint64, error) {
	var en schedEntry
	data, rev, err := s.store.Get(ctx, key)
	if err != nil {
		return en, 0, err
	}
	if err := json.Unmarshal(data, &en); err != nil {
		return en, 0, fmt.Errorf("engine: schedule entry %s: %w", key, err)
	}
	return en, rev, nil
}

// write writes en under key: created with rev 0, else if still at rev.
func (s *scheduler) write(ctx context.Context, key string, en *schedEntry, rev uint64) (uint64, error) {
	data, err := json.Marshal(en)
	if err != nil {
		return 0, fmt.Errorf("engine: schedule entry %s: %w", key, err)
	}
	if rev == 0 {
		return s.store.Create(ctx, key, data, 0)
	}
	return s.store.Update(ctx, key, data, rev, 0)
}

func (s *scheduler) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != schedNew {
		return
	}
	s.state = schedRunning
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.loop(ctx)
}

func (s *scheduler) stop() {
	s.mu.Lock()
	was := s.state
	s.state = schedStopped
	s.mu.Unlock()
	if was == schedRunning {
		s.cancel()
		<-s.done
	}
}

func (s *scheduler) wakeLocked() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// followLocked makes the loop look at key at t, unless a task runs it
// now (it says when to look next as it ends).
func (s *scheduler) followLocked(key string, t time.Time) {
	if s.inflight[key] {
		return
	}
	s.known[key] = t
	heap.Push(&s.queue, dueItem{at: t, key: key})
	s.wakeLocked()
}

// loop runs until ctx ends: it looks up the jobs registered, lists the
// store every poll interval, and hands what is due to the handler pool.
func (s *scheduler) loop(ctx context.Context) {
	defer close(s.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var nextPoll time.Time // zero: list the store at once
	for {
		if now := time.Now(); !now.Before(nextPoll) {
			s.list(ctx)
			nextPoll = time.Now().Add(s.poll)
		}
		s.register(ctx)
		next := s.fireDue(ctx)
		if next.IsZero() || next.After(nextPoll) {
			next = nextPoll
		}
		timer.Reset(max(time.Until(next), 0))
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// register looks up each job registered since the last call in the
// store, creating its entry if it has none; one it could not look up is
// tried again as the loop goes round (at the next poll at the latest).
func (s *scheduler) register(ctx context.Context) {
	s.mu.Lock()
	fresh := s.fresh
	s.fresh = nil
	s.mu.Unlock()
	var retry []*jobSpec
	for _, j := range fresh {
		if err := s.ensure(ctx, j); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.e.limitedLog.Warn("engine: a job's schedule could not be read; trying again", zap.String("job", j.name), zap.Error(err))
			retry = append(retry, j)
		}
	}
	if len(retry) > 0 {
		s.mu.Lock()
		s.fresh = append(s.fresh, retry...)
		s.mu.Unlock()
	}
}

// ensure follows j's entry, creating it if missing: the first run one
// interval from now, or at j's time.
func (s *scheduler) ensure(ctx context.Context, j *jobSpec) error {
	for range 3 {
		en, rev, err := s.read(ctx, j.key)
		now := time.Now()
		switch {
		case errors.Is(err, state.ErrNotFound):
			en = schedEntry{Due: j.at, Every: j.every}
			if j.every > 0 {
				en.Due = now.Add(j.every)
			}
			rev = 0
		case err != nil:
			return err
		case en.Done:
			return nil // an At job that ran
		case j.every > 0 && en.Every != j.every:
			// The interval changed (a new version of the bot): the next
			// run comes no later than one new interval from now.
			en.Every = j.every
			if d := now.Add(j.every); en.Due.After(d) {
				en.Due = d
			}
		default:
			s.mu.Lock()
			s.followLocked(j.key, en.lookAt(s.owner))
			s.mu.Unlock()
			return nil
		}
		_, err = s.write(ctx, j.key, &en, rev)
		if errors.Is(err, state.ErrConflict) {
			continue // another process wrote it: read it again
		}
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.followLocked(j.key, en.Due)
		s.mu.Unlock()
		return nil
	}
	return fmt.Errorf("engine: job %q: %w", j.name, state.ErrConflict)
}

// list follows the delayed sends in the store it does not know yet, and
// forgets those no longer there; each new one is read once.
func (s *scheduler) list(ctx context.Context) {
	// Only what was followed before the listing began can be missing from
	// it: a SendAt meanwhile may not be listed yet.
	s.mu.Lock()
	before := make(map[string]bool)
	for k := range s.known {
		if strings.HasPrefix(k, "send/") {
			before[k] = true
		}
	}
	s.mu.Unlock()
	keys, err := s.store.Keys(ctx, "send/")
	if err != nil {
		if ctx.Err() == nil {
			s.e.limitedLog.Warn("engine: the schedule could not be listed; trying again", zap.Error(err))
		}
		return
	}
	s.mu.Lock()
	listed := make(map[string]bool, len(keys))
	var unknown []string
	for _, k := range keys {
		listed[k] = true
		if _, ok := s.known[k]; !ok && !s.inflight[k] {
			unknown = append(unknown, k)
		}
	}
	for k := range before {
		if !listed[k] {
			delete(s.known, k)
		}
	}
	// Registered jobs whose lookup failed are tried again now.
	if len(s.fresh) > 0 {
		s.wakeLocked()
	}
	s.mu.Unlock()
	for _, k := range unknown {
		en, _, err := s.read(ctx, k)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, state.ErrNotFound) {
				s.e.limitedLog.Warn("engine: a delayed send could not be read", zap.String("key", k), zap.Error(err))
			}
			continue
		}
		s.mu.Lock()
		if _, ok := s.known[k]; !ok {
			s.followLocked(k, en.lookAt(s.owner))
		}
		s.mu.Unlock()
	}
}

// fireDue hands every entry due to the handler pool, and returns when the
// next is due (zero if none is followed).
func (s *scheduler) fireDue(ctx context.Context) time.Time {
	s.mu.Lock()
	now := time.Now()
	var due []string
	var next time.Time
	for s.queue.Len() > 0 {
		top := s.queue[0]
		if t, ok := s.known[top.key]; !ok || !t.Equal(top.at) {
			heap.Pop(&s.queue) // stale
			continue
		}
		if top.at.After(now) {
			next = top.at
			break
		}
		heap.Pop(&s.queue)
		delete(s.known, top.key)
		s.inflight[top.key] = true
		due = append(due, top.key)
	}
	s.mu.Unlock()
	for _, key := range due {
		err := s.e.in.Submit(schedTaskKey(key), func(tctx context.Context) error {
			next := time.Now().Add(s.poll) // if the job calls runtime.Goexit
			defer func() { s.settle(key, next) }()
			tctx, cancel := context.WithTimeout(tctx, s.e.opts.handlerTimeout)
			defer cancel()
			next = s.run(tctx, key)
			return nil
		})
		if err != nil {
			// The pool is full or closing: look again at the next poll.
			s.settle(key, now.Add(s.poll))
			if ctx.Err() == nil && !errors.Is(err, ErrDispatcherClosed) {
				s.e.limitedLog.Warn("engine: a scheduled run was refused; trying again", zap.String("key", key), zap.Error(err))
			}
		}
	}
	return next
}

// schedTaskKey returns the handler pool's key of an entry's runs, which
// no chat's key can be.
func schedTaskKey(key string) string { return "\x00schedule:" + key }

// settle ends a task's run of key: the loop looks at it again at next
// (zero: never).
func (s *scheduler) settle(key string, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, key)
	if !next.IsZero() {
		s.followLocked(key, next)
	}
}

// run reads key's entry, claims it, runs it if it is due, writes what is
// next, and returns when to look at it again (zero: never).
func (s *scheduler) run(ctx context.Context, key string) time.Time {
	now := time.Now()
	retry := now.Add(s.poll)
	en, rev, err := s.read(ctx, key)
	s.mu.Lock()
	j := s.jobs[key]
	s.mu.Unlock()
	switch {
	case errors.Is(err, state.ErrNotFound):
		if j != nil {
			// Removed from the store behind the job's back: begin anew.
			s.mu.Lock()
			s.fresh = append(s.fresh, j)
			s.mu.Unlock()
		}
		return time.Time{}
	case err != nil:
		s.e.limitedLog.Warn("engine: a schedule entry could not be read; trying again", zap.String("key", key), zap.Error(err))
		return retry
	case en.Done || en.Send == nil && j == nil:
		return time.Time{} // ran, or a job this process does not have
	case en.Due.After(now):
		return en.Due // another process ran it meanwhile
	case en.Owner != "" && en.Owner != s.owner && en.Until.After(now):
		return en.Until // another process is running it
	}
	en.Owner, en.Until = s.owner, now.Add(s.lease)
	rev, err = s.write(ctx, key, &en, rev)
	switch {
	case errors.Is(err, state.ErrConflict):
		return now // another process took it: read it again
	case err != nil:
		s.e.limitedLog.Warn("engine: a schedule entry could not be claimed; trying again", zap.String("key", key), zap.Error(err))
		return retry
	}

	// What is next is written even if the run used up its context.
	wctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), stateOpTimeout)
	}
	if en.Send != nil {
		r := en.Send
		if _, err := s.e.sendOut(r.Platform, r.Target, r.Message, key); err != nil {
			s.e.limitedLog.Warn("engine: a delayed send was refused; trying again", zap.String("key", key), zap.Error(err))
			// Give the claim up, so that another process may make it.
			en.Owner, en.Until = "", time.Time{}
			rctx, cancel := wctx()
			defer cancel()
			_, _ = s.write(rctx, key, &en, rev)
			return retry
		}
		dctx, cancel := wctx()
		defer cancel()
		if err := s.store.Delete(dctx, key, rev); err != nil && !errors.Is(err, state.ErrConflict) {
			s.e.log.Warn("engine: a delayed send made could not be removed from the schedule", zap.String("key", key), zap.Error(err))
		}
		return time.Time{}
	}

	s.runJob(ctx, j)
	en.Owner, en.Until = "", time.Time{}
	if j.every > 0 {
		en.Due = nextTick(en.Due, j.every, time.Now())
	} else {
		en.Due, en.Done = time.Time{}, true
	}
	fctx, cancel := wctx()
	defer cancel()
	if _, err := s.write(fctx, key, &en, rev); err != nil {
		// It ran, and the store does not know: it runs again once the
		// claim's lease is over.
		s.e.log.Warn("engine: a job ran but its schedule could not be written", zap.String("job", j.name), zap.Error(err))
		return now.Add(s.lease)
	}
	if j.every > 0 {
		return en.Due
	}
	return time.Time{}
}

// runJob runs j, logging its error or recovered panic.
func (s *scheduler) runJob(ctx context.Context, j *jobSpec) {
	defer func() {
		if r := recover(); r != nil {
			s.e.log.Error("job panicked", zap.String("job", j.name), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
		}
	}()
	if err := j.run(ctx); err != nil {
		s.e.log.Warn("job failed", zap.String("job", j.name), zap.Error(err))
	}
}

// dueItem is an entry of the scheduler's queue.
type dueItem struct {
	at  time.Time
	key string
}

// dueQueue is a min-heap of dueItems by time (container/heap).
type dueQueue []dueItem

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueItem)) }
func (q *dueQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}
