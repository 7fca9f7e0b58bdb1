package engine

import (
	"context"
	"time"

	"github.com/heraldbot/herald/internal/executor"
)

// Errors returned by [OutboundDispatcher.Submit].
var (
	// ErrDispatcherClosed is returned for work submitted after Close,
	// Shutdown or ForceClose.
	ErrDispatcherClosed = executor.ErrClosed
	// ErrQueueFull is returned when the chat already has QueueSize tasks
	// waiting.
	ErrQueueFull = executor.ErrQueueFull
	// ErrEmptyKey is returned for an empty chat key.
	ErrEmptyKey = executor.ErrEmptyKey
	// ErrNilTask is returned for a nil task.
	ErrNilTask = executor.ErrNilTask
)

// Defaults for the zero values of [DispatcherConfig].
const (
	DefaultMaxInflight = executor.DefaultMaxInflight // 512
	DefaultQueueSize   = executor.DefaultQueueSize   // 64
	DefaultSendTimeout = executor.DefaultRunTimeout  // 30 s
	DefaultMaxLifetime = executor.DefaultMaxLifetime // 15 min
)

// DispatcherConfig configures an [OutboundDispatcher]. The zero value is a
// valid configuration: every zero or negative field takes its default.
type DispatcherConfig struct {
	// MaxInflight bounds how many tasks run at once, across all chats.
	// 0 means 512.
	MaxInflight int
	// QueueSize bounds how many tasks one chat may have waiting (not
	// counting the one running); Submit refuses more with ErrQueueFull.
	// 0 means 64.
	QueueSize int
	// SendTimeout is the deadline of each run of a task, counted from the
	// moment the run starts: a task runs once, a task that pauses once
	// more per pause (see Submit). 0 means 30s. Without Hooks.OnDone, a
	// SendTimeout of a second or more counts from a clock reading shared
	// with Submits for a millisecond and as long as a busy scheduler
	// delays the timer that ends it, so a deadline may come that much
	// sooner (tens of milliseconds at most), never later.
	SendTimeout time.Duration
	// MaxLifetime bounds a task's whole life, counted from Submit: its
	// time queued, its runs, and its pauses between runs. No run's context
	// lasts beyond it, so a task still queued then runs with an expired
	// context, and a task may not pause past it (a platform's retry-after
	// it cannot wait out fails at once). 0 means 15 minutes: a chat's full
	// queue of sends paced at Telegram's 20 a minute for a group, and a
	// flood wait of a few minutes, fit in it. A negative value means no
	// bound. Without Hooks.OnDone, Submits share a clock reading for a
	// millisecond and as long as a busy scheduler delays the timer that
	// ends it, so a life may end that much sooner (never later).
	MaxLifetime time.Duration
	// Recover, if not nil, is called with the value of every panic
	// recovered from a task (or a hook), on the goroutine that recovered
	// it. The panic is also reported to Hooks.OnDone as a *PanicError.
	Recover func(any)
	// Hooks observe the dispatcher; nil hooks are skipped.
	Hooks DispatcherHooks
}

// DispatcherHooks observe an [OutboundDispatcher]. Each hook is called with
// no dispatcher lock held, so it may call back into the dispatcher (Submit,
// Stats); it runs on the goroutine that caused the event and delays that
// goroutine while it runs, so keep hooks short. Hooks may be called
// concurrently and must be safe for concurrent use.
type DispatcherHooks struct {
	// OnQueued is called after Submit accepted a task, with the number of
	// tasks now waiting in that chat (including this one; not counting a
	// running one).
	OnQueued func(chatID string, queueLen int)
	// OnStart is called just before a task starts running.
	OnStart func(chatID string)
	// OnDone is called after a task returned or panicked.
	OnDone func(info DispatchInfo)
	// OnRejected is called when Submit refuses a task, with the error
	// Submit returns.
	OnRejected func(chatID string, err error)
}

// DispatchInfo describes a finished task to [DispatcherHooks.OnDone].
type DispatchInfo struct {
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

// PanicError is the error reported to [DispatcherHooks.OnDone] for a task
// that panicked: its Value is the value passed to panic, its Stack the
// goroutine's stack trace at the panic, and its Unwrap returns the value
// if it is an error.
type PanicError = executor.PanicError

// DispatcherStats is a snapshot of an [OutboundDispatcher]'s counters and
// gauges. At any moment Submitted == Completed + Queued + Running + Waiting.
type DispatcherStats struct {
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
	// [OutboundDispatcher.Submit]): started, not finished, and holding no
	// worker.
	Waiting int
	// Chats is the number of chats with a task waiting or running now.
	Chats int
}

// OutboundDispatcher runs tasks keyed by chat: strictly one at a time and in
// submission order within a chat, concurrently across chats, with at most
// MaxInflight tasks running at once. It is the send path under every
// ctx.Reply: the engine submits one task per outgoing message.
//
// Guarantees:
//   - Per-chat FIFO: tasks of one chat run one at a time, in the order their
//     Submit calls returned.
//   - Bounded: at most MaxInflight tasks run at once; at most QueueSize tasks
//     wait per chat; a chat with nothing waiting or running holds no memory;
//     the dispatcher runs at most MaxInflight worker goroutines however many
//     chats are waiting, and none once idle for a second or closed.
//   - Fair: a chat runs one task, then goes to the back of the line of
//     chats waiting for a worker, so a chat with a long backlog does not
//     starve the others. With MaxInflight below 128 there is one line for
//     all chats. Larger dispatchers split the chats by hash into shards of
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
// Each run of a task has a context with a deadline, SendTimeout from the
// run's start but no later than MaxLifetime from Submit, cancelled by
// ForceClose or when the dispatcher's parent context ends, and when the
// run returns.
//
// An OutboundDispatcher must be created with [NewOutboundDispatcher]. All
// methods are safe for concurrent use, and Close, Drain, Shutdown and
// ForceClose may be called any number of times in any order.
type OutboundDispatcher struct{ x *executor.Executor }

// NewOutboundDispatcher returns a dispatcher whose tasks' contexts derive
// from ctx: when ctx ends, running and queued tasks see it, as after
// ForceClose, but the dispatcher still accepts work until closed. Zero or
// negative config values take their defaults (see [DispatcherConfig]).
// A nil ctx means context.Background().
func NewOutboundDispatcher(ctx context.Context, cfg DispatcherConfig) *OutboundDispatcher {
	return &OutboundDispatcher{x: executor.New(ctx, cfg.executor())}
}

// executor returns c as the executor's configuration.
func (c DispatcherConfig) executor() executor.Config {
	h := c.Hooks
	x := executor.Config{
		MaxInflight: c.MaxInflight, QueueSize: c.QueueSize, RunTimeout: max(c.SendTimeout, 0),
		MaxLifetime: c.MaxLifetime, Recover: c.Recover,
		Hooks: executor.Hooks{OnQueued: h.OnQueued, OnStart: h.OnStart, OnRejected: h.OnRejected},
	}
	if done := h.OnDone; done != nil {
		x.Hooks.OnDone = func(i executor.Info) { done(DispatchInfo(i)) }
	}
	return x
}

// Submit queues task to run after every task already queued for chatID.
// It never blocks on the task: it returns as soon as the task is queued.
//
// Submit returns [ErrEmptyKey] for an empty chatID, [ErrNilTask] for a nil
// task, [ErrQueueFull] when the chat already has QueueSize tasks waiting,
// and [ErrDispatcherClosed] after Close, Shutdown or ForceClose; a refused
// task is never run, and OnRejected is called. A nil error means the task
// will run, with a context that carries its deadline (SendTimeout from the
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
func (d *OutboundDispatcher) Submit(chatID string, task func(context.Context) error) error {
	return d.x.Submit(chatID, task)
}

// Close stops the dispatcher from accepting work: later Submits return
// [ErrDispatcherClosed]. Queued and running tasks are not interrupted and
// still run; use [OutboundDispatcher.Drain] to wait for them. Close does
// not block and may be called more than once.
func (d *OutboundDispatcher) Close() { d.x.Close() }

// Drain waits until the dispatcher is idle — nothing queued, running or
// waiting to be resumed — or until ctx ends. It returns nil in the first
// case, and then every task accepted before the call has finished; it
// returns ctx.Err() in the second, and the tasks keep running. Drain does
// not stop Submit, so under a steady stream of new work it may not return
// before ctx ends: use [OutboundDispatcher.Shutdown] to close and drain in
// one call.
func (d *OutboundDispatcher) Drain(ctx context.Context) error { return d.x.Drain(ctx) }

// Shutdown closes the dispatcher and waits for every accepted task to
// finish, like Close followed by Drain. If ctx ends first it returns
// ctx.Err(); the remaining tasks keep running, and ForceClose interrupts
// them. After Shutdown returned nil no dispatcher goroutine is left.
// Shutdown may be called more than once, and concurrently with ForceClose.
func (d *OutboundDispatcher) Shutdown(ctx context.Context) error { return d.x.Shutdown(ctx) }

// ForceClose closes the dispatcher and cancels the context of every running
// and queued task. It does not wait: queued tasks still run, each once,
// with an already cancelled context (a task paused between runs is run
// again at once), so that they can report the cancellation (the engine
// resolves their Futures with it). A Drain or Shutdown in progress keeps
// waiting for them, which is quick if the tasks honour their contexts.
// ForceClose may be called more than once.
func (d *OutboundDispatcher) ForceClose() { d.x.ForceClose() }

// Stats returns a snapshot of the dispatcher's counters and gauges. The
// chats are read in shards, each under its lock, so the snapshot is
// consistent per shard but not across shards while tasks are moving.
func (d *OutboundDispatcher) Stats() DispatcherStats { return DispatcherStats(d.x.Stats()) }
