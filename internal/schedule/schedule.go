// Package schedule runs the engine's schedule: jobs run on an interval or
// once, and delayed sends, kept in a state.Store so that they survive
// restarts and, in a store shared by several processes, are run by one
// of them.
//
// Everything scheduled is an entry in the store, under a key of its own:
//
//	every/<name>        a job run every interval: when it runs next
//	at/<name>/<unix ns> a job run once: when, and whether it ran
//	send/<id>           a delayed send: when, and the send
//
// A process follows the entries it can run in a queue of due times, and
// lists the store every poll interval for delayed sends that others
// scheduled (or that a process that stopped left). When an entry is due,
// a task given to Config.Submit (under a key of the entry's own, so an
// entry is run by one task at a time) reads it again, claims it by writing
// its owner and a lease with compare and swap — of several processes that
// find it due, one wins — runs it, and writes what is next: the next due
// time, done, or (for a send) nothing. A claim whose owner died is taken
// over when its lease ends.
package schedule

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/platform"
)

// ErrInvalid is wrapped by the error of Add given a bad job: a nil job, an
// empty name, or a name already taken.
var ErrInvalid = errors.New("schedule: invalid job")

// stateOpTimeout bounds a write to the store after a run.
const stateOpTimeout = 10 * time.Second

// Config configures a [Scheduler]. Every field must be set.
type Config struct {
	Store state.Store
	// Poll is how often the store is listed for delayed sends made by
	// other processes; Lease how long a claim on an entry lasts.
	Poll, Lease time.Duration
	// RunTimeout bounds each run of a job.
	RunTimeout time.Duration
	// Submit hands a run to the pool that runs it, under key; Closed is
	// the error it refuses with once the pool closed (not logged).
	Submit func(key string, task func(context.Context) error) error
	Closed error
	// Send makes a delayed send, named id (so that a repeat is no second
	// send), or says why it could not be queued.
	Send func(req platform.SendRequest, id string) error
	// Logger logs what failed once; Limited what may fail every poll.
	Logger  *zap.Logger
	Limited *ratelog.Logger
}

// New returns a Scheduler with cfg, not started.
func New(cfg Config) *Scheduler {
	return &Scheduler{
		cfg:      cfg,
		store:    cfg.Store,
		poll:     cfg.Poll,
		lease:    cfg.Lease,
		owner:    randomID(),
		jobs:     make(map[string]*jobSpec),
		names:    make(map[string]bool),
		known:    make(map[string]time.Time),
		inflight: make(map[string]bool),
		wake:     make(chan struct{}, 1),
	}
}

// Every schedules run every interval under name (see engine.Every), and
// returns the job's key, for StopJob.
func (s *Scheduler) Every(name string, interval time.Duration, run func(context.Context) error) (string, error) {
	if interval <= 0 {
		return "", fmt.Errorf("%w: %q: interval %v is not positive", ErrInvalid, name, interval)
	}
	key := "every/" + state.KeyPart(name)
	return key, s.add(&jobSpec{name: name, key: key, every: interval, run: run})
}

// At schedules run once at t under name (see engine.At), and returns the
// job's key, for Stop.
func (s *Scheduler) At(name string, t time.Time, run func(context.Context) error) (string, error) {
	key := "at/" + state.KeyPart(name) + "/" + strconv.FormatInt(t.UnixNano(), 10)
	return key, s.add(&jobSpec{name: name, key: key, at: t, run: run})
}

// StopJob stops the job of key (from Every or At) in every process that
// shares the store: its entry is marked done, so that no process runs it
// again, also after a restart, and this process forgets it. A run under
// way goes on. It returns the store's error, or ctx's.
func (s *Scheduler) StopJob(ctx context.Context, key string) error {
	s.mu.Lock()
	j := s.jobs[key]
	delete(s.jobs, key)
	delete(s.known, key)
	if j != nil {
		s.fresh = slices.DeleteFunc(s.fresh, func(x *jobSpec) bool { return x == j })
	}
	s.mu.Unlock()
	for {
		en, rev, err := s.read(ctx, key)
		switch {
		case errors.Is(err, state.ErrNotFound):
			en, rev = schedEntry{}, 0
		case err != nil:
			return s.stopFailed(ctx, key, err)
		case en.Done:
			return nil
		}
		en.Done, en.Due = true, time.Time{}
		_, err = s.write(ctx, key, &en, rev)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, state.ErrConflict):
			continue // a run wrote it meanwhile: again
		default:
			return s.stopFailed(ctx, key, err)
		}
	}
}

func (s *Scheduler) stopFailed(ctx context.Context, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return fmt.Errorf("schedule: stop %s: %w", key, err)
}

func (s *Scheduler) add(j *jobSpec) error {
	switch {
	case j.run == nil:
		return fmt.Errorf("%w: %q: nil job", ErrInvalid, j.name)
	case j.name == "":
		return fmt.Errorf("%w: empty name", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names[j.name] {
		return fmt.Errorf("%w: two jobs named %q", ErrInvalid, j.name)
	}
	s.names[j.name] = true
	s.jobs[j.key] = j
	s.fresh = append(s.fresh, j)
	s.wakeLocked()
	return nil
}

// SendAt keeps req in the store, to be sent at at under id, or a random id
// if id is empty; a send still waiting under id is kept as it is. It
// returns the id.
func (s *Scheduler) SendAt(ctx context.Context, at time.Time, req platform.SendRequest, id string) (string, error) {
	named := id != ""
	if !named {
		id = randomID()
	}
	en := schedEntry{Due: at, Send: &req}
	data, err := json.Marshal(&en)
	if err != nil {
		return "", fmt.Errorf("schedule: delayed send: %w", err)
	}
	key := "send/" + id
	if _, err := s.store.Create(ctx, key, data, 0); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return "", cerr
		}
		if named && errors.Is(err, state.ErrConflict) {
			return id, nil // scheduled already
		}
		return "", fmt.Errorf("schedule: delayed send: %w", err)
	}
	s.mu.Lock()
	s.followLocked(key, at)
	s.mu.Unlock()
	return id, nil
}

// Cancel removes the delayed send id, or returns an error wrapping
// state.ErrNotFound (see engine.CancelSend).
func (s *Scheduler) Cancel(ctx context.Context, id string) error {
	key := "send/" + id
	_, _, err := s.store.Get(ctx, key)
	if err == nil {
		err = s.store.Delete(ctx, key, 0)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("schedule: cancel send %s: %w", id, err)
	}
	s.mu.Lock()
	delete(s.known, key)
	s.mu.Unlock()
	return nil
}

// Sends returns the ids of the delayed sends waiting in the store and when
// each is due.
func (s *Scheduler) Sends(ctx context.Context) (map[string]time.Time, error) {
	keys, err := s.store.Keys(ctx, "send/")
	if err != nil {
		return nil, fmt.Errorf("schedule: scheduled sends: %w", err)
	}
	out := make(map[string]time.Time, len(keys))
	for _, key := range keys {
		en, _, err := s.read(ctx, key)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("schedule: scheduled sends: %w", err)
		}
		out[strings.TrimPrefix(key, "send/")] = en.Due
	}
	return out, nil
}

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
	// Done is set once an At job ran, or once a job was stopped (see
	// Scheduler.Stop).
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
	run   func(context.Context) error
}

// Scheduler runs a schedule. Its loop goroutine lives from Start to Stop;
// the runs are tasks given to Config.Submit. It is safe for concurrent
// use.
type Scheduler struct {
	cfg   Config
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

// read returns the entry under key and its revision.
func (s *Scheduler) read(ctx context.Context, key string) (schedEntry, uint64, error) {
	var en schedEntry
	data, rev, err := s.store.Get(ctx, key)
	if err != nil {
		return en, 0, err
	}
	if err := json.Unmarshal(data, &en); err != nil {
		return en, 0, fmt.Errorf("schedule: schedule entry %s: %w", key, err)
	}
	return en, rev, nil
}

// write writes en under key: created with rev 0, else if still at rev.
func (s *Scheduler) write(ctx context.Context, key string, en *schedEntry, rev uint64) (uint64, error) {
	data, err := json.Marshal(en)
	if err != nil {
		return 0, fmt.Errorf("schedule: schedule entry %s: %w", key, err)
	}
	if rev == 0 {
		return s.store.Create(ctx, key, data, 0)
	}
	return s.store.Update(ctx, key, data, rev, 0)
}

// Start starts the loop; a second call does nothing, and none after Stop.
func (s *Scheduler) Start() {
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

// Stop stops the loop and waits for it; the runs handed to Submit go on.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	was := s.state
	s.state = schedStopped
	s.mu.Unlock()
	if was == schedRunning {
		s.cancel()
		<-s.done
	}
}

func (s *Scheduler) wakeLocked() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// followLocked makes the loop look at key at t, unless a task runs it
// now (it says when to look next as it ends).
func (s *Scheduler) followLocked(key string, t time.Time) {
	if s.inflight[key] {
		return
	}
	s.known[key] = t
	heap.Push(&s.queue, dueItem{at: t, key: key})
	s.wakeLocked()
}

// loop runs until ctx ends: it looks up the jobs registered, lists the
// store every poll interval, and hands what is due to the handler pool.
func (s *Scheduler) loop(ctx context.Context) {
	defer close(s.done)
	timer := time.NewTimer(0) // a timeout: the next job due, or the next list of the shared store (its poll)
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
func (s *Scheduler) register(ctx context.Context) {
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
			s.cfg.Limited.Warn("schedule: a job's schedule could not be read; trying again", zap.String("job", j.name), zap.Error(err))
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
func (s *Scheduler) ensure(ctx context.Context, j *jobSpec) error {
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
	return fmt.Errorf("schedule: job %q: %w", j.name, state.ErrConflict)
}

// list follows the delayed sends in the store it does not know yet, and
// forgets those no longer there; each new one is read once.
func (s *Scheduler) list(ctx context.Context) {
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
			s.cfg.Limited.Warn("schedule: the schedule could not be listed; trying again", zap.Error(err))
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
				s.cfg.Limited.Warn("schedule: a delayed send could not be read", zap.String("key", k), zap.Error(err))
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
func (s *Scheduler) fireDue(ctx context.Context) time.Time {
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
		err := s.cfg.Submit(taskKey(key), func(tctx context.Context) error {
			next := time.Now().Add(s.poll) // if the job calls runtime.Goexit
			defer func() { s.settle(key, next) }()
			tctx, cancel := context.WithTimeout(tctx, s.cfg.RunTimeout)
			defer cancel()
			next = s.run(tctx, key)
			return nil
		})
		if err != nil {
			// The pool is full or closing: look again at the next poll.
			s.settle(key, now.Add(s.poll))
			if ctx.Err() == nil && !errors.Is(err, s.cfg.Closed) {
				s.cfg.Limited.Warn("schedule: a scheduled run was refused; trying again", zap.String("key", key), zap.Error(err))
			}
		}
	}
	return next
}

// taskKey returns the handler pool's key of an entry's runs, which no
// chat's key can be.
func taskKey(key string) string { return "\x00schedule:" + key }

// settle ends a task's run of key: the loop looks at it again at next
// (zero: never).
func (s *Scheduler) settle(key string, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, key)
	if !next.IsZero() {
		s.followLocked(key, next)
	}
}

// run reads key's entry, claims it, runs it if it is due, writes what is
// next, and returns when to look at it again (zero: never).
func (s *Scheduler) run(ctx context.Context, key string) time.Time {
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
		s.cfg.Limited.Warn("schedule: a schedule entry could not be read; trying again", zap.String("key", key), zap.Error(err))
		return retry
	case en.Done || en.Send == nil && j == nil:
		return time.Time{} // ran or stopped, or a job this process does not have
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
		s.cfg.Limited.Warn("schedule: a schedule entry could not be claimed; trying again", zap.String("key", key), zap.Error(err))
		return retry
	}

	// What is next is written even if the run used up its context.
	wctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), stateOpTimeout)
	}
	if en.Send != nil {
		r := en.Send
		if err := s.cfg.Send(*r, key); err != nil {
			s.cfg.Limited.Warn("schedule: a delayed send was refused; trying again", zap.String("key", key), zap.Error(err))
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
			s.cfg.Logger.Warn("schedule: a delayed send made could not be removed from the schedule", zap.String("key", key), zap.Error(err))
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
		s.cfg.Logger.Warn("schedule: a job ran but its schedule could not be written", zap.String("job", j.name), zap.Error(err))
		return now.Add(s.lease)
	}
	if j.every > 0 {
		return en.Due
	}
	return time.Time{}
}

// runJob runs j, logging its error or recovered panic.
func (s *Scheduler) runJob(ctx context.Context, j *jobSpec) {
	defer func() {
		if r := recover(); r != nil {
			s.cfg.Logger.Error("job panicked", zap.String("job", j.name), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
		}
	}()
	if err := j.run(ctx); err != nil {
		s.cfg.Logger.Warn("job failed", zap.String("job", j.name), zap.Error(err))
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
