// Package executor is Herald's keyed, fair, bounded task runner: the one
// piece under both of the engine's queues — the OutboundDispatcher that makes
// sends, and the inbound queue that runs each event's handlers. Tasks of one
// key (a chat) run one at a time in submission order; tasks of different
// keys run concurrently, at most MaxInflight at once, with no goroutine per
// waiting key (see [Executor]).
//
// Package engine exposes it to bot authors as engine.OutboundDispatcher,
// with the contract of Herald's design; its errors are the engine's
// (engine.ErrQueueFull is ErrQueueFull), so their texts say "engine:".
package executor

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldbot/herald/internal/lazyctx"
)

// Errors returned by [Executor.Submit].
var (
	// ErrClosed is returned for work submitted after Close,
	// Shutdown or ForceClose.
	ErrClosed = errors.New("engine: dispatcher closed")
	// ErrQueueFull is returned when the chat already has QueueSize tasks
	// waiting.
	ErrQueueFull = errors.New("engine: queue full")
	// ErrEmptyKey is returned for an empty chat key.
	ErrEmptyKey = errors.New("engine: empty chat key")
	// ErrNilTask is returned for a nil task.
	ErrNilTask = errors.New("engine: nil task")

	// errGoexit is reported for a task that called runtime.Goexit.
	errGoexit = errors.New("engine: task called runtime.Goexit")
)

// Defaults for the zero values of [Config].
const (
	DefaultMaxInflight = 512
	DefaultQueueSize   = 64
	DefaultRunTimeout  = 30 * time.Second
	DefaultMaxLifetime = 15 * time.Minute
)

// Config configures an [Executor]. The zero value is a
// valid configuration: every zero or negative field takes its default.
type Config struct {
	// MaxInflight bounds how many tasks run at once, across all chats.
	// 0 means 512.
	MaxInflight int
	// QueueSize bounds how many tasks one chat may have waiting (not
	// counting the one running); Submit refuses more with ErrQueueFull.
	// 0 means 64.
	QueueSize int
	// RunTimeout is the deadline of each run of a task, counted from the
	// moment the run starts: a task submitted with Submit runs once, a
	// task that pauses once more per pause (see Submit). 0
	// means 30s; a negative value means none (the tasks bound
	// themselves). A RunTimeout of a second or more, unless Hooks.OnDone
	// is set, counts from a reading of the clock shared with Submits for
	// a millisecond and as long as a busy scheduler delays the timer that
	// ends it (see stamp.go): a deadline may come that much sooner (tens
	// of milliseconds at most), never later.
	RunTimeout time.Duration
	// MaxLifetime bounds a task's whole life, counted from Submit: its
	// time queued, its runs, and its pauses between runs. (Unless
	// Hooks.OnDone is set, Submits share a reading of the clock for a
	// millisecond and as long as a busy scheduler delays the timer that
	// ends it, so a life may be counted from that much before its Submit:
	// it may end that much sooner, never later.)
	// No run's context lasts beyond it, so a task still queued then runs
	// with an expired context, and a task may not pause past it
	// (a platform's retry-after it cannot wait out fails at once). 0 means
	// 15 minutes: a chat's full queue of sends paced at Telegram's 20 a
	// minute for a group, and a flood wait of a few minutes, fit in it. A
	// negative value means no bound.
	MaxLifetime time.Duration
	// Recover, if not nil, is called with the value of every panic recovered
	// from a task (or a hook), on the goroutine that recovered it. The
	// panic is also reported to Hooks.OnDone as a *PanicError.
	Recover func(any)
	// Hooks observe the dispatcher; nil hooks are skipped.
	Hooks Hooks
}

// Hooks observe an [Executor]. Each hook is called with
// no dispatcher lock held, so it may call back into the dispatcher (Submit,
// Stats); it runs on the goroutine that caused the event and delays that
// goroutine while it runs, so keep hooks short. Hooks may be called
// concurrently and must be safe for concurrent use.
type Hooks struct {
	// OnQueued is called after Submit accepted a task, with the number of
	// tasks now waiting in that chat (including this one; not counting a
	// running one).
	OnQueued func(chatID string, queueLen int)
	// OnStart is called just before a task starts running.
	OnStart func(chatID string)
	// OnDone is called after a task returned or panicked.
	OnDone func(info Info)
	// OnRejected is called when Submit refuses a task, with the error
	// Submit returns.
	OnRejected func(chatID string, err error)
}

// Info describes a finished task to [Hooks.OnDone].
type Info struct {
	// ChatID is the key the task was submitted under.
	ChatID string
	// QueueLen is the number of tasks still waiting in the chat when this
	// one started.
	QueueLen int
	// QueueLatency is the time from Submit to the task's start.
	QueueLatency time.Duration
	// RunLatency is how long the task ran; for a task that paused, from its
	// first run's start to its last run's end, waits between runs included.
	RunLatency time.Duration
	// Err is the task's error; a *PanicError if it panicked.
	Err error
}

// PanicError is the error reported to [Hooks.OnDone] for a task
// that panicked.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the goroutine's stack trace at the panic.
	Stack []byte
}

// Error returns "engine: task panicked: " and the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("engine: task panicked: %v", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Stats is a snapshot of an [Executor]'s counters and
// gauges. At any moment Submitted == Completed + Queued + Running + Waiting.
type Stats struct {
	// Submitted counts tasks Submit accepted.
	Submitted uint64
	// Rejected counts tasks Submit refused, for any reason.
	Rejected uint64
	// Completed counts tasks that have finished running, whatever the
	// outcome; Failed and Panicked are subsets of it.
	Completed uint64
	// Failed counts tasks that returned a non-nil error.
	Failed uint64
	// Panicked counts tasks that panicked.
	Panicked uint64
	// Queued is the number of tasks waiting now.
	Queued int
	// Running is the number of tasks running now.
	Running int
	// Waiting is the number of tasks paused between two runs now (see
	// [Executor.Submit]): started, not finished, and
	// holding no worker.
	Waiting int
	// Chats is the number of chats with a task waiting or running now.
	Chats int
}

// Executor runs tasks keyed by chat: strictly one at a time and in
// submission order within a chat, concurrently across chats, with at most
// MaxInflight tasks running at once.
//
// Guarantees:
//   - Per-chat FIFO: tasks of one chat run one at a time, in the order their
//     Submit (or Push) calls returned.
//   - Bounded: at most MaxInflight tasks run at once; at most QueueSize tasks
//     wait per chat, but for those Push added; a chat with nothing waiting
//     or running holds no memory; the executor runs at most MaxInflight
//     worker goroutines however many chats are waiting, and none once idle
//     for a second (a worker out of work waits that long for more, so that
//     work that comes and goes does not start a goroutine each time) or
//     closed.
//   - Fair: a chat runs one task, then goes to the back of the line of
//     chats waiting for a worker, so a chat with a long backlog does not
//     starve the others. With MaxInflight below 128 there is one line for
//     all chats. Larger executors split the chats by hash into shards of
//     at least 16 workers each, with a line per shard; a shard below its
//     share of MaxInflight takes a worker from a shard above its share
//     after that worker's current task, so every shard gets its share
//     when it has the work.
//   - Nothing lost: every task Submit accepted runs exactly once — after
//     ForceClose, with an already cancelled context, so it can report that.
//     (A task that pauses is run once, then again after each pause it
//     asks for, until it finishes.) Every refused task is refused through
//     Submit's error.
//   - Panics stay local: a panicking task is recovered and reported to
//     Recover and OnDone, and the chat's later tasks still run.
//
// Each run of a task has a context with a deadline, RunTimeout from the
// run's start but no later than MaxLifetime from Submit, cancelled by
// ForceClose or when the executor's parent context ends, and when the
// run returns.
//
// An Executor must be created with [New]. All methods are safe for
// concurrent use, and Close, Drain, Shutdown and ForceClose may be called
// any number of times in any order.
type Executor struct {
	cfg    config
	base   context.Context
	cancel context.CancelFunc
	seed   maphash.Seed
	tc     lazyctx.Clock // the tasks' contexts' parent (base) and clock

	shards    []shard
	mask      uint64
	spinLocks bool // several processors: a shard's lock is worth spinning for (see shard.lock)

	// closed and stampNow are read by every Submit; the fields written as
	// workers come and go are kept off their cache line.
	closed   atomic.Bool
	stampNow atomic.Int64 // the clock reading Submits share (see stamp.go), or stampNone
	_        [64]byte

	stampMu    sync.Mutex
	stampTimer *time.Timer // expires stampNow; guarded by stampMu

	rejected atomic.Uint64

	// Worker slots: slots counts worker goroutines, working, spinning or
	// idle, at most cfg.MaxInflight (see workers.go). A shard that needs a
	// worker and finds none idle and no free slot waits in hungry until a
	// worker frees or hands over its slot.
	slots   atomic.Int64
	spinner atomic.Pointer[worker] // the spinning worker, if any
	hungryN atomic.Int64           // len(hungry), read without hmu as a hint
	idleN   atomic.Int64           // len(idle), read without hmu as a hint
	hmu     sync.Mutex
	hungry  []*shard    // FIFO of shards waiting for a slot, guarded by hmu
	idle    []*worker   // idle workers, the longest idle first, guarded by hmu
	reaper  *time.Timer // ends workers idle for idleLinger, guarded by hmu
	reaping bool        // reaper is set, guarded by hmu

	wg sync.WaitGroup // worker goroutines

	// Chains of free chat structs and task nodes that idle shards gave
	// up (see shard.trimFreeLocked).
	spareChats, spareTasks sync.Pool

	// stopWake unregisters the wake-up of sleeping chats that runs when
	// base ends (see wakeAll).
	stopWake func() bool

	testHookHungry func() // tests only: runs before Submit's addHungry
	testHookSpin   func() // tests only: runs as a worker starts to spin
}

// noRunTimeout is a run timeout that never ends a run: the tasks bound
// themselves.
const noRunTimeout = 100 * 365 * 24 * time.Hour

// config is a Config with its defaults applied.
type config struct {
	maxInflight int
	queueSize   int
	runTimeout  time.Duration
	maxLifetime time.Duration // 0: none
	recover     func(any)
	hooks       Hooks
	stamp       bool // Submit stamps tasks: for MaxLifetime or OnDone's QueueLatency
}

// normalize returns c with the defaults for its zero values.
func (c Config) normalize() config {
	x := config{
		maxInflight: c.MaxInflight, queueSize: c.QueueSize,
		runTimeout: c.RunTimeout, maxLifetime: c.MaxLifetime,
		recover: c.Recover, hooks: c.Hooks,
	}
	if x.maxInflight <= 0 {
		x.maxInflight = DefaultMaxInflight
	}
	if x.queueSize <= 0 {
		x.queueSize = DefaultQueueSize
	}
	switch {
	case x.runTimeout == 0:
		x.runTimeout = DefaultRunTimeout
	case x.runTimeout < 0:
		x.runTimeout = noRunTimeout
	}
	switch {
	case x.maxLifetime == 0:
		x.maxLifetime = DefaultMaxLifetime
	case x.maxLifetime < 0:
		x.maxLifetime = 0
	}
	x.stamp = x.maxLifetime > 0 || x.hooks.OnDone != nil
	return x
}

// New returns an executor whose tasks' contexts derive from ctx: when ctx
// ends, running and queued tasks see it, as after ForceClose, but the
// executor still accepts work until closed. Zero or negative config values
// take their defaults (see [Config]). A nil ctx means
// context.Background().
func New(ctx context.Context, cfg Config) *Executor {
	if ctx == nil {
		ctx = context.Background()
	}
	c := cfg.normalize()
	base, cancel := context.WithCancel(ctx)
	procs := runtime.GOMAXPROCS(0)
	n := shardCount(c.maxInflight, procs)
	d := &Executor{
		spinLocks: procs > 1,
		cfg:       c,
		base:      base,
		cancel:    cancel,
		seed:      maphash.MakeSeed(),
		tc:        lazyctx.NewClock(base, time.Now()),
		shards:    make([]shard, n),
		mask:      uint64(n - 1),
	}
	// When the parent context ends, sleeping chats wake at once (ForceClose
	// wakes them itself). Nothing runs until then.
	d.stampNow.Store(stampNone)
	d.stopWake = context.AfterFunc(base, d.wakeAll)
	for i := range d.shards {
		s := &d.shards[i]
		s.d = d
		s.freeChats.pool, s.freeTasks.pool = &d.spareChats, &d.spareTasks
		s.keepChats, s.keepTasks = max(minKeep, keptChats/n), max(minKeep, keptTasks/n)
		// Split MaxInflight into per-shard quotas that sum to it; each is
		// at least minShardQuota when there are several shards.
		s.quota = c.maxInflight / n
		if i < c.maxInflight%n {
			s.quota++
		}
	}
	return d
}

// Base returns the context every task's context derives from: the one
// given to New, cancelled too by ForceClose.
func (d *Executor) Base() context.Context { return d.base }

// MaxLifetime returns the bound of a task's life (Config.MaxLifetime), or
// 0 for none.
func (d *Executor) MaxLifetime() time.Duration { return d.cfg.maxLifetime }

// minShardQuota is the smallest worker quota a shard gets.
const minShardQuota = 16

// minShardedInflight is the smallest MaxInflight split into shards: below
// it, one shard holds every chat, so round-robin is exact across all
// chats.
const minShardedInflight = 128

// shardCount picks how many shards hold the chats: with MaxInflight below
// minShardedInflight one, else a power of two, at least 32 and about four
// per processor, at most 64, and few enough that each shard's quota of
// MaxInflight is at least minShardQuota. Many shards keep lock contention
// low: a shard's lock is taken by the Submits for its chats and by its
// workers, and a worker preempted while it holds the lock stops only its
// shard. Small pools have few workers to contend for a lock, and keep
// exact global round-robin. (With quotas much smaller, each shard's line
// empties and fills so often that workers move between shards for their
// quotas all the time.)
func shardCount(maxInflight, procs int) int {
	if maxInflight < minShardedInflight {
		return 1
	}
	want := min(max(32, 4*procs), 64, maxInflight/minShardQuota)
	n := 1
	for n*2 <= want {
		n *= 2
	}
	return n
}

// Submit queues task to run after every task already queued for chatID.
// It never blocks on the task: it returns as soon as the task is queued.
//
// Submit returns [ErrEmptyKey] for an empty chatID, [ErrNilTask] for a nil
// task, [ErrQueueFull] when the chat already has QueueSize tasks waiting,
// and [ErrClosed] after Close, Shutdown or ForceClose; a refused
// task is never run, and OnRejected is called. A nil error means the task
// will run, with a context that carries its deadline (RunTimeout from the
// run's start, MaxLifetime from Submit, whichever comes first), cancelled
// if the dispatcher is force-closed before or while it runs.
//
// A task runs once, unless a run pauses: returns a [*platform.PauseError]
// (see [platform.Progress.Wait]). The task is then not finished: the
// dispatcher frees the worker for other chats, keeps the chat's later
// tasks waiting behind it, and runs it again after the pause's delay,
// before any of them. No goroutine waits meanwhile. A pause past the end
// of the task's MaxLifetime is cut short, and the next run sees its
// context expired; ForceClose or the end of the dispatcher's context ends
// a pause at once. A run that pauses when the task's life has ended
// (waiting cannot help then) is followed at once by one more, in which
// every layer sees the end and reports it; if that one pauses too, the
// task is finished with the context's error, so it cannot spin. OnStart is
// called before the first run and OnDone after the last; Stats counts the
// task as Waiting between runs. The engine submits every send this way,
// so a send waiting out a retry backoff, a platform's retry-after or a
// rate limit holds no worker.
func (d *Executor) Submit(chatID string, run func(context.Context) error) error {
	return d.submit(chatID, run, false)
}

// Push is Submit without the chat's QueueSize bound: for work that
// something else bounds (a journal's consumer, which holds at most so
// many unacknowledged events or sends in hand), and that must keep its
// order rather than be refused and offered again. It refuses work only
// for an empty key, a nil task, or a closed executor.
func (d *Executor) Push(chatID string, run func(context.Context) error) error {
	return d.submit(chatID, run, true)
}

// Full reports whether chatID has QueueSize tasks waiting (not counting
// the one running; or more, after Push): a Submit for it now would be
// refused with [ErrQueueFull].
func (d *Executor) Full(chatID string) bool { return d.Waiting(chatID) >= d.cfg.queueSize }

// Waiting returns how many tasks chatID has waiting, not counting the one
// running.
func (d *Executor) Waiting(chatID string) int {
	hash := d.hash(chatID)
	s := &d.shards[hash&d.mask]
	s.lock()
	n := 0
	if c := s.chats.get(hash, chatID); c != nil {
		n = c.n
	}
	s.mu.Unlock()
	return n
}

// QueueSize returns the bound of each chat's waiting tasks.
func (d *Executor) QueueSize() int { return d.cfg.queueSize }

// RejectFull refuses a task for chatID that its caller did not submit,
// having found the chat [Executor.Full], as Submit would refuse it:
// counted and reported to OnRejected. It returns [ErrQueueFull].
func (d *Executor) RejectFull(chatID string) error { return d.reject(chatID, ErrQueueFull) }

func (d *Executor) submit(chatID string, run func(context.Context) error, unbounded bool) error {
	if chatID == "" {
		return d.reject(chatID, ErrEmptyKey)
	}
	if run == nil {
		return d.reject(chatID, ErrNilTask)
	}
	hash := d.hash(chatID)
	s := &d.shards[hash&d.mask]
	var enq int64
	if d.cfg.stamp {
		enq = d.stamp()
	}
	queueLen, g, err := s.submit(d, chatID, hash, run, enq, unbounded)
	if err != nil {
		return d.reject(chatID, err)
	}
	d.startWorker(s, g)
	if h := d.cfg.hooks.OnQueued; h != nil {
		d.protect(func() { h(chatID, queueLen) })
	}
	return nil
}

func (d *Executor) reject(chatID string, err error) error {
	d.rejected.Add(1)
	if h := d.cfg.hooks.OnRejected; h != nil {
		d.protect(func() { h(chatID, err) })
	}
	return err
}

// Close stops the dispatcher from accepting work: later Submits return
// [ErrClosed]. Queued and running tasks are not interrupted and
// still run; use [Executor.Drain] to wait for them. Close does not
// block and may be called more than once.
func (d *Executor) Close() {
	d.closed.Store(true)
	// A Submit that saw the dispatcher open holds a shard lock until its
	// task is queued; taking each lock once means that when Close returns,
	// no Submit can still accept a task.
	for i := range d.shards {
		d.shards[i].mu.Lock()
		//lint:ignore SA2001 the empty critical section is a barrier.
		d.shards[i].mu.Unlock()
	}
	d.endIdle()
	d.stopStamp()
}

// Drain waits until the dispatcher is idle — nothing queued, running or
// waiting to be resumed — or until ctx ends. It returns nil in the first case, and then
// every task accepted before the call has finished; it returns ctx.Err() in
// the second, and the tasks keep running. Each shard is waited for in turn
// until it is idle once. Drain does not stop Submit, so under a steady
// stream of new work it may not return before ctx ends: use
// [Executor.Shutdown] to close and drain in one call.
func (d *Executor) Drain(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := range d.shards {
		if ch := d.shards[i].idleWait(); ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if d.closed.Load() {
		// No Submit can start a worker any more, and every worker has
		// left its shard: wait for the goroutines themselves to exit, so
		// that none is left behind after Shutdown.
		d.wg.Wait()
	}
	return nil
}

// Shutdown closes the dispatcher and waits for every accepted task to
// finish, like Close followed by Drain. If ctx ends first it returns
// ctx.Err(); the remaining tasks keep running, and ForceClose interrupts
// them. After Shutdown returned nil no dispatcher goroutine is left.
// Shutdown may be called more than once, and concurrently with ForceClose.
func (d *Executor) Shutdown(ctx context.Context) error {
	d.Close()
	return d.Drain(ctx)
}

// ForceClose closes the dispatcher and cancels the context of every running
// and queued task. It does not wait: queued tasks still run, each once, with
// an already cancelled context (a task paused between runs is run again
// at once), so that they can report the cancellation
// (the engine resolves their Futures with it). A Drain or Shutdown in
// progress keeps waiting for them, which is quick if the tasks honour their
// contexts. ForceClose may be called more than once.
func (d *Executor) ForceClose() {
	d.Close()
	d.stopWake() // woken below, on this goroutine rather than a new one
	d.cancel()
	d.wakeAll()
}

// Stats returns a snapshot of the dispatcher's counters and gauges. Each
// shard is read under its lock, so the snapshot is consistent per shard but
// not across shards while tasks are moving.
func (d *Executor) Stats() Stats {
	st := Stats{Rejected: d.rejected.Load()}
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		st.Submitted += s.completed + uint64(s.queued+s.running+s.waiting)
		st.Completed += s.completed
		st.Failed += s.failed
		st.Panicked += s.panicked
		st.Queued += s.queued
		st.Running += s.running
		st.Waiting += s.waiting
		st.Chats += s.chats.n
		s.mu.Unlock()
	}
	return st
}

// hash returns the hash of chatID: its low bits choose the chat's shard,
// and its high bits its place in the shard's table.
func (d *Executor) hash(chatID string) uint64 { return maphash.String(d.seed, chatID) }

// now returns a monotonic timestamp, in nanoseconds since the dispatcher
// was created: the clock of enqueue stamps, runs' starts and deadlines.
func (d *Executor) now() int64 { return d.tc.Now() }

// protect runs a hook, recovering a panic from it and reporting it to
// Recover: a faulty hook must not kill a worker or a Submit caller.
func (d *Executor) protect(f func()) {
	defer func() {
		if r := recover(); r != nil && d.cfg.recover != nil {
			d.cfg.recover(r)
		}
	}()
	f()
}
