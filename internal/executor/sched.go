package executor

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldbot/herald/internal/race"
	"github.com/heraldbot/herald/platform"
)

// The dispatcher's scheduler follows CockroachDB's raft scheduler: a bounded
// set of worker goroutines serves a FIFO of ready chats, a chat is in that
// FIFO at most once, and after each task a chat with more work goes to the
// back. No goroutine waits per chat.
//
// State is sharded by chat-key hash. Each shard has its own lock, chat map
// and ready FIFO, and a quota of MaxInflight; the quotas sum to MaxInflight.
// Worker slots are global (executor.slots): a shard may run more
// workers than its quota while slots are free. A shard below its quota that
// needs a worker and finds no free slot joins the hungry FIFO; a worker of a
// shard above its quota, on finishing a task, moves to the first hungry
// shard, and a worker leaving an empty shard hands its slot to one. So all
// of MaxInflight is usable by any shard, and no shard waits longer than one
// task for its share while others hold more.
//
// The common path allocates nothing but the task's context: task nodes and
// chat structs come from free lists of their shard (see freeList). A worker
// that finishes a task of a chat with more work keeps the chat while no
// other chat of its shard is ready, rather than queue it and take it back.
// A worker that runs out of work does not end at once: it spins a moment,
// then waits idle, for another shard to hand it work (see workers.go), so
// that a pool of short tasks that empties and fills does not start a
// goroutine for each chat that becomes ready.

// Chat states.
const (
	chatReady    uint8 = iota + 1 // in the shard's ready FIFO, not running
	chatRunning                   // a worker is running its head task
	chatSleeping                  // its held task waits for a timer, with no worker
)

// Limits on memory kept for reuse, shared out among the shards: a shard's
// free list holds at most its share more structs than the shard has in
// use, and no more than its share once the shard is idle (see freeList).
const (
	keptChats = 1024 // chat structs kept for reuse
	keptTasks = 2048 // task nodes kept for reuse
	minKeep   = 16   // the smallest share of a shard
)

// task is a task to run: in its chat's queue, held by its chat while it
// sleeps between two runs, or in the hands of the worker running it.
type task struct {
	run func(context.Context) error
	enq int64 // Submit's stamp (see stamp.go); 0 unless OnDone or MaxLifetime is set
}

// taskNode holds a waiting task past the first ringCap of its chat. Nodes
// come from a free list of their shard, so that a queue never allocates
// or copies to grow.
type taskNode struct {
	task
	next *taskNode // queue or free list link
}

// pauseState is what a task that paused keeps between its runs: the task
// itself, held by its chat while it sleeps, and its first run's start and
// queue length.
type pauseState struct {
	task     task
	start    int64 // the first run's start (executor.now())
	queueLen int   // the chat's queue length at the first start
	ended    bool  // a run paused after the task's life had ended
}

// runOutcome is how one run of a task ended.
type runOutcome struct {
	err      error
	panicked bool
	paused   bool          // the task is not finished: run it again after delay
	delay    time.Duration // the pause's delay
	rs       *pauseState   // the paused task and its pause state
}

// ringCap is how many waiting tasks a chat holds in its own struct: the
// first of its queue, which Submit writes and a worker takes with no
// other memory touched. The rest wait in taskNodes.
const ringCap = 3

// chat is one chat's queue of waiting tasks, at most QueueSize long but
// for those Push added: the first ringCap in a ring inside the struct,
// the rest in a list of taskNodes behind them. It lives in its shard's map
// only while it has a task waiting or running.
//
// A chat is two cache lines (the free lists allocate them in slabs, so
// they stay aligned). A chat with one task at a time — the common case —
// touches only the first: its key, links, counts and ring[0]. Submit
// writes that line and a worker on another processor reads it, so every
// field beyond it would be one more line moved per task.
type chat struct {
	key      string
	hash     uint64 // the key's hash, under which the shard's table holds the chat
	state    uint8
	ringHead uint8  // index of the first waiting task in ring; 0 in a free chat
	ringN    uint8  // waiting tasks in ring
	holding  bool   // held is set: hasWork need not read the second line
	sleepSeq uint32 // counts sleeps, so a stale wake-up is ignored
	n        int    // waiting tasks: ringN and those in nodes
	next     *chat  // ready FIFO or free list link
	ring     [ringCap]task
	nodes    *taskNode // waiting tasks after those in ring, oldest first
	lastNode *taskNode

	// A task paused between two runs is held here, ahead of the queue,
	// while the chat sleeps in its shard's wake-up heap.
	held *pauseState

	_ [chatPad]byte
}

// chatPad pads a chat to two cache lines (see TestLayout).
const chatPad = 8

// hasWork reports whether the chat has a task to run: a held one or a
// waiting one.
func (c *chat) hasWork() bool { return c.n > 0 || c.holding }

// takeLocked removes and returns the chat's task to run next: the held
// one first, with its pause state, else the first waiting one, whose
// place in the ring the first of the nodes takes.
func (s *shard) takeLocked(c *chat) (t task, rs *pauseState) {
	if c.holding {
		rs = c.held
		c.held, c.holding = nil, false
		return rs.task, rs
	}
	i := c.ringHead
	t, c.ring[i] = c.ring[i], task{}
	c.ringHead = ringNext(i, 1)
	c.ringN--
	c.n--
	switch {
	case c.n > int(c.ringN):
		// The nodes hold tasks (see pushLocked).
		nd := c.nodes
		c.nodes = nd.next
		if c.nodes == nil {
			c.lastNode = nil
		}
		c.ring[ringNext(c.ringHead, c.ringN)] = nd.task
		c.ringN++
		*nd = taskNode{}
		s.freeTasks.put(nd, s.keepTasks+s.queued)
	case c.n == 0:
		// So that a chat with a task at a time uses ring[0] alone, in
		// its first cache line.
		c.ringHead = 0
	}
	return t, nil
}

// pushLocked appends t to the chat's queue.
func (s *shard) pushLocked(c *chat, t task) {
	// The nodes hold tasks (c.nodes != nil) if and only if the ring does
	// not hold them all: this asks the chat's first line alone.
	inRing := c.n == int(c.ringN)
	c.n++
	if inRing && c.ringN < ringCap {
		c.ring[ringNext(c.ringHead, c.ringN)] = t
		c.ringN++
		return
	}
	nd := s.freeTasks.get()
	nd.task = t
	if c.lastNode == nil {
		c.nodes = nd
	} else {
		c.lastNode.next = nd
	}
	c.lastNode = nd
}

// ringNext returns the ring index n places after i.
func ringNext(i, n uint8) uint8 {
	i += n
	if i >= ringCap {
		i -= ringCap
	}
	return i
}

// A shard's fields are grouped by cache line (see TestLayout). Submit
// and the shard's workers run on different processors, and each line
// either of them writes for a task moves to the other's cache for the
// next: so the fields both write for every task share as few lines as
// fit them (lineLock, lineCounts), those that mostly the workers write
// come next (lineWorkers), and those read for every task but seldom
// written are apart (lineConfig), so that reading them costs no move.
type shard struct {
	// lineLock: the lock, the ready FIFO and the table, which every Submit
	// and every task's worker touch.
	mu        sync.Mutex
	readyHead *chat // FIFO of chats with a waiting task and no running one
	readyTail *chat
	chats     chatTable

	// lineCounts: the chat free list and the counts that a Submit of a
	// new chat and the worker that retires it both write.
	freeChats freeList[chat, *chat] // retired chat structs
	queued    int                   // tasks waiting
	running   int                   // tasks running
	coming    int                   // workers on their way, not yet working

	// lineWorkers: what the workers write; Submit too takes task nodes,
	// for a chat with more than ringCap tasks waiting.
	freeTasks freeList[taskNode, *taskNode] // free task nodes
	completed uint64
	workers   int // worker goroutines working for this shard, coming included
	failed    uint64

	// lineConfig: read for every task, written seldom or never.
	d         *Executor
	quota     int
	keepChats int           // the shard's shares of keptChats
	keepTasks int           // and keptTasks
	idleCh    chan struct{} // closed when the shard becomes idle; nil if nobody waits
	panicked  uint64
	// inHungry is set while the shard is in d.hungry; written under d.hmu,
	// read without it as a hint.
	inHungry atomic.Bool
	_        [lineConfigPad]byte

	// Sleeping chats, by wake-up time, and the one timer that wakes them;
	// timerAt is when it is set to fire, zero when it is not set. With
	// the padding above, the shard is whole cache lines, so that the
	// fields of neighbouring shards in the executor's array stay off each
	// other's.
	sleepers sleepHeap
	timer    *time.Timer
	timerAt  time.Time
	waiting  int // tasks paused between two runs
}

// lineConfigPad pads a shard's lineConfig to a whole cache line (see
// TestLayout).
const lineConfigPad = 12

// submit queues a task. It reports the chat's queue length and what the
// caller must do for a worker (see grant).
func (s *shard) submit(d *Executor, key string, hash uint64, run func(context.Context) error, enq int64, unbounded bool) (queueLen int, g grant, err error) {
	s.lock()
	if d.closed.Load() {
		s.mu.Unlock()
		return 0, grant{}, ErrClosed
	}
	c := s.chats.get(hash, key)
	if c == nil {
		c = s.newChatLocked(key, hash)
	} else if c.n >= d.cfg.queueSize && !unbounded {
		// (Push may have taken the chat past a Submit's limit.)
		s.mu.Unlock()
		return 0, grant{}, ErrQueueFull
	}
	s.pushLocked(c, task{run: run, enq: enq})
	s.queued++
	queueLen = c.n
	if c.state == 0 {
		g = s.readyLocked(c)
	}
	s.mu.Unlock()
	return queueLen, g, nil
}

// readyLocked puts an idle or sleeping chat in the ready FIFO and
// arranges a worker for it unless a worker of the shard will get to it
// (see grant). The caller carries the grant out with no lock held
// (startWorker).
func (s *shard) readyLocked(c *chat) grant {
	c.state = chatReady
	s.pushReadyLocked(c)
	return s.d.grantLocked(s)
}

func (s *shard) newChatLocked(key string, hash uint64) *chat {
	c := s.freeChats.get()
	c.key, c.hash = key, hash
	s.chats.add(hash, c)
	return c
}

// retireLocked removes an empty, idle chat from the table. It runs under the
// lock Submit takes, so a Submit either finds the chat before retirement
// (and its task is run by the worker that holds it) or creates a new one.
func (s *shard) retireLocked(c *chat) {
	s.chats.remove(c.hash, c)
	// Taking its tasks has cleared the rest of the chat; what is left is
	// in its first line, so that the retirement does not touch the second.
	// sleepSeq survives, so a stale wake-up stays stale.
	c.key, c.hash, c.state, c.ringHead = "", 0, 0, 0
	if race.Enabled {
		// INVARIANT: a retired chat is zero but for sleepSeq.
		invariant(c.cleared(), "retired a chat that is not cleared")
	}
	s.freeChats.put(c, s.keepChats+s.chats.n)
}

// cleared reports whether c is zero but for sleepSeq, as a free chat is.
func (c *chat) cleared() bool {
	for _, t := range c.ring {
		if t.run != nil || t.enq != 0 {
			return false
		}
	}
	return c.key == "" && c.hash == 0 && c.state == 0 && c.ringHead == 0 && c.ringN == 0 &&
		!c.holding && c.n == 0 && c.next == nil && c.nodes == nil && c.lastNode == nil && c.held == nil
}

// trimFreeLocked trims the free lists of a shard that became idle (see
// freeList.trim), so that an idle executor keeps little memory whatever
// its peak.
func (s *shard) trimFreeLocked() {
	s.freeChats.trim(s.keepChats)
	s.freeTasks.trim(s.keepTasks)
}

func (s *shard) pushReadyLocked(c *chat) {
	// INVARIANT: a chat is in its shard's ready FIFO at most once, and only
	// with a task waiting.
	invariant(c.state == chatReady && c.hasWork(), "ready chat pushed twice or empty")
	c.next = nil
	if s.readyTail == nil {
		s.readyHead = c
	} else {
		s.readyTail.next = c
	}
	s.readyTail = c
}

func (s *shard) popReadyLocked() *chat {
	c := s.readyHead
	if c != nil {
		invariant(c.state == chatReady && c.hasWork(), "popped a chat that is not ready")
		s.readyHead = c.next
		if s.readyHead == nil {
			s.readyTail = nil
		}
		c.next = nil
	}
	return c
}

// leaveLocked records that a worker stops working for the shard, and wakes
// Drain if the shard is now idle.
func (s *shard) leaveLocked() {
	s.workers--
	// INVARIANT: worker, queued and running counts never go negative.
	invariant(s.workers >= 0 && s.queued >= 0 && s.running >= 0 && s.waiting >= 0, "negative shard count")
	if !s.idleLocked() {
		return
	}
	s.trimFreeLocked()
	if s.idleCh != nil {
		close(s.idleCh)
		s.idleCh = nil
	}
}

// lockSpins is how many times a Submit or a worker that finds its shard's
// lock held tries it again, each time after a pause twice as long as the
// last (spinPause), before it blocks on it (see shard.lock).
const (
	lockSpins = 6
	spinPause = 32
)

// lock takes s.mu for Submit and for the shard's workers. Their critical
// sections are short, a table lookup and a few links, so one that finds
// the lock held tries again a few times, pausing in between, before it
// blocks. sync.Mutex itself spins only while the processor has no other
// goroutine ready, and in a busy executor the goroutine submitting nearly
// always has workers it woke ready on its processor: it would block at
// once, and a block costs more than many critical sections — the waiter
// parks, its processor runs another goroutine, and the wake-up moves the
// waiter to the processor that woke it, away from its caches. (TryLock
// fails while the mutex hands itself to a waiter that has waited long,
// so spinning does not starve waiters.) With one processor the holder
// cannot run while another spins, so nothing spins.
func (s *shard) lock() {
	if !s.mu.TryLock() {
		s.lockSlow()
	}
}

func (s *shard) lockSlow() {
	if s.d.spinLocks {
		for i := range lockSpins {
			busyWait(spinPause << i)
			if s.mu.TryLock() {
				return
			}
		}
	}
	s.mu.Lock()
}

// busyWait spins for n iterations of an empty loop, without touching
// memory another processor may be writing.
//
//go:noinline
func busyWait(n int) {
	for i := 0; i < n; i++ {
	}
}

// idleWait returns nil if the shard is idle, or a channel closed when it
// next becomes idle.
func (s *shard) idleWait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idleLocked() {
		return nil
	}
	if s.idleCh == nil {
		s.idleCh = make(chan struct{})
	}
	return s.idleCh
}

// idleLocked reports whether the shard has no worker and no task.
func (s *shard) idleLocked() bool {
	return s.workers == 0 && s.queued == 0 && s.running == 0 && s.waiting == 0
}

// workShard runs tasks of s, one chat at a time, until s has no ready chat
// or s has more workers than its quota while another shard is hungry. It
// then leaves s.
func (d *Executor) workShard(s *shard) {
	var cur *chat
	defer func() {
		if cur != nil {
			// The task called runtime.Goexit (t.FailNow in a test
			// sender): this goroutine is ending. Finish the task as
			// failed and hand the slot to a fresh worker.
			s.mu.Lock()
			s.finishLocked(cur, errGoexit, false, false)
			s.coming++ // the fresh worker, which takes this one's place
			s.mu.Unlock()
			d.wg.Add(1)
			go d.work(s)
		}
	}()
	s.lock()
	s.coming--
	// INVARIANT: a worker arriving at a shard was counted on its way.
	invariant(s.coming >= 0, "a worker arrived that no one sent")
	for c := s.popReadyLocked(); c != nil; c = s.popReadyLocked() {
		for c != nil {
			t, rs := s.takeLocked(c)
			c.state = chatRunning
			if rs != nil {
				s.waiting--
			} else {
				s.queued--
			}
			s.running++
			queueLen := c.n
			var g grant
			if s.readyHead != nil {
				// More chats are ready than this worker takes: another
				// worker for them, unless one is on its way.
				g = d.grantLocked(s)
			}
			s.mu.Unlock()
			if g.need != needNone {
				d.startWorker(s, g)
			}

			cur = c
			out := d.runTask(c.key, t, rs, queueLen)
			cur = nil

			s.lock()
			if out.paused {
				s.sleepLocked(c, out.rs, out.delay)
				c = nil
			} else {
				c = s.finishLocked(c, out.err, out.panicked, true)
			}
			if s.workers > s.quota && d.hungryN.Load() > 0 {
				if c != nil {
					c.state = chatReady
					s.pushReadyLocked(c)
				}
				s.leaveLocked()
				s.mu.Unlock()
				return
			}
		}
	}
	s.leaveLocked()
	s.mu.Unlock()
}

// finishLocked records a finished task and puts its chat back at the end of
// the ready FIFO if it has more work, or retires it. A worker that may
// keep the chat (keep) gets it back instead if it has more work and no
// other chat of the shard is ready: giving it up would only have the
// worker take it again.
func (s *shard) finishLocked(c *chat, err error, panicked, keep bool) *chat {
	s.running--
	s.completed++
	if err != nil {
		s.failed++
	}
	if panicked {
		s.panicked++
	}
	switch {
	case !c.hasWork():
		s.retireLocked(c)
	case keep && s.readyHead == nil:
		// INVARIANT: a worker keeps its chat for another task only while
		// no other chat of its shard is ready (fairness).
		invariant(s.readyHead == nil && c.state == chatRunning, "kept a chat while another was ready")
		return c
	default:
		c.state = chatReady
		s.pushReadyLocked(c)
	}
	return nil
}

// runTask runs one task with hooks, a fresh run context, and panic
// recovery. If the task calls runtime.Goexit, the deferred part still
// releases its context and reports it to OnDone before the goroutine ends.
//
// rs is the task's pause state, nil before its first pause. A run that
// paused reports it with the delay and the pause state: the task is not
// finished, so OnDone is not called; the state keeps its first run's start
// and queue length for the next run, which does not call OnStart again.
func (d *Executor) runTask(key string, t task, rs *pauseState, queueLen int) (out runOutcome) {
	h := &d.cfg.hooks
	if rs == nil && h.OnStart != nil {
		d.protect(func() { h.OnStart(key) })
	}
	now := d.runStart()
	start := now
	if rs != nil {
		start, queueLen = rs.start, rs.queueLen
	}
	ctx := d.tc.New(min(now+int64(d.cfg.runTimeout), d.lifeEnd(t.enq)))
	returned := false
	defer func() {
		if !returned {
			out = runOutcome{err: errGoexit}
		}
		ctx.Release()
		if out.paused || h.OnDone == nil {
			return
		}
		info := Info{
			ChatID:       key,
			QueueLen:     queueLen,
			QueueLatency: time.Duration(start - t.enq),
			RunLatency:   time.Duration(d.now() - start),
			Err:          out.err,
		}
		d.protect(func() { h.OnDone(info) })
	}()
	out.err, out.panicked = d.call(ctx, t.run)
	returned = true
	if out.panicked {
		return out
	}
	out.delay, out.paused = platform.PauseOf(out.err)
	if !out.paused {
		return out
	}
	if rs == nil {
		rs = &pauseState{task: t, start: start, queueLen: queueLen}
	}
	out.rs = rs
	if cerr := ctx.Err(); cerr != nil && d.lifeOver(t.enq) {
		// The task's life ended (its MaxLifetime, ForceClose), perhaps
		// after it paused: waiting cannot help. (A context ended by the
		// run's own RunTimeout is no reason: the next run has a deadline
		// of its own.) The task runs once more at once, so that every
		// layer sees the end and reports it (the engine's send resolves
		// its Future then); a task that still pauses is finished, so that
		// it cannot spin.
		if rs.ended {
			out.paused = false
			out.err = fmt.Errorf("engine: task paused after its context ended: %w", cerr)
		} else {
			rs.ended, out.delay = true, 0
		}
	}
	return out
}

// lifeEnd returns when the MaxLifetime of a task submitted at enq ends (an
// executor.now() time), or math.MaxInt64 without one.
func (d *Executor) lifeEnd(enq int64) int64 {
	if d.cfg.maxLifetime <= 0 {
		return math.MaxInt64
	}
	return enq + int64(d.cfg.maxLifetime)
}

// lifeOver reports whether a paused task submitted at enq can run no more
// but to report its end: the dispatcher's context ended, or its
// MaxLifetime.
func (d *Executor) lifeOver(enq int64) bool {
	return d.base.Err() != nil || d.now() >= d.lifeEnd(enq)
}

func (d *Executor) call(ctx context.Context, run func(context.Context) error) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			err, panicked = &PanicError{Value: r, Stack: debug.Stack()}, true
			if d.cfg.recover != nil {
				d.protect(func() { d.cfg.recover(r) })
			}
		}
	}()
	return run(ctx), false
}
