package executor

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

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
// other chat of its shard is ready, rather than queue it and take it back;
// a worker that finds no ready chat spins a moment (see spinLocked), so
// that a pool of short tasks that empties and fills does not start a
// goroutine for each chat that becomes ready.

// Chat states.
const (
	chatReady    uint8 = iota + 1 // in the shard's ready FIFO, not running
	chatRunning                   // a worker is running its head task
	chatSleeping                  // its held task waits for a timer, with no worker
)

// Limits on memory kept for reuse: each free list holds at most this many
// more structs than are in use in the shard, and no more than this many
// once the shard is idle.
const (
	maxFreeChats  = 128 // chat structs kept per shard for reuse
	maxFreeTasks  = 256 // task nodes kept per shard for reuse
	minShrinkPeak = 1024
)

// task is a task in its chat's queue, or held by its chat while it
// sleeps, or by the worker running it. Tasks are nodes of their chat's
// queue, taken from and returned to a free list of their shard, so that
// a queue never allocates or copies to grow.
type task struct {
	run  func(context.Context) error
	enq  int64       // executor.now() at Submit; 0 unless OnDone or MaxLifetime is set
	rs   *pauseState // nil until the task's first pause
	next *task       // queue or free list link
}

// pauseState is what a task that paused keeps between its runs.
type pauseState struct {
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
}

// workerNeed says what a shard that has a chat ready needs for it.
type workerNeed uint8

const (
	needNone   workerNeed = iota // a worker of the shard will get to it
	needSpawn                    // a slot was taken: start a worker
	needHungry                   // no slot free: join the hungry FIFO
)

// chat is one chat's queue: a list of waiting tasks, at most QueueSize
// long but for those Push added. It lives in its shard's map only while
// it has a task waiting or running.
type chat struct {
	key   string
	head  *task // first waiting task
	tail  *task // last waiting task
	n     int   // waiting tasks
	state uint8
	next  *chat // ready FIFO or free list link

	// A task paused between two runs is held here, ahead of the queue,
	// while the chat sleeps in its shard's wake-up heap.
	held     *task
	sleepSeq uint32 // counts sleeps, so a stale wake-up is ignored
}

// hasWork reports whether the chat has a task to run: a held one or a
// waiting one.
func (c *chat) hasWork() bool { return c.n > 0 || c.held != nil }

// take removes and returns the task to run next: the held one first.
func (c *chat) take() *task {
	if t := c.held; t != nil {
		c.held = nil
		return t
	}
	t := c.head
	c.head = t.next
	if c.head == nil {
		c.tail = nil
	}
	t.next = nil
	c.n--
	return t
}

// push appends t to the queue.
func (c *chat) push(t *task) {
	if c.tail == nil {
		c.head = t
	} else {
		c.tail.next = t
	}
	c.tail = t
	c.n++
}

type shard struct {
	d     *Executor
	quota int

	// inHungry is set while the shard is in d.hungry; written under d.hmu,
	// read without it as a hint.
	inHungry atomic.Bool
	// spinning is set while a worker of the shard spins waiting for a
	// ready chat (see spinLocked); set under mu, cleared under mu when
	// readyLocked claims the spinner or the spin ends.
	spinning atomic.Bool

	mu        sync.Mutex
	chats     map[string]*chat
	peak      int   // largest len(chats) since the map was last rebuilt
	readyHead *chat // FIFO of chats with a waiting task and no running one
	readyTail *chat
	freeChats freeList[chat, *chat] // retired chat structs
	freeTasks freeList[task, *task] // finished task nodes
	workers   int                   // worker goroutines working for this shard
	idleCh    chan struct{}         // closed when the shard becomes idle; nil if nobody waits

	// Sleeping chats, by wake-up time, and the one timer that wakes them;
	// timerAt is when it is set to fire, zero when it is not set.
	sleepers sleepHeap
	timer    *time.Timer
	timerAt  time.Time

	// Counters, guarded by mu.
	submitted, completed, failed, panicked uint64
	queued, running, waiting               int
}

// submit queues a task. It reports the chat's queue length and what the
// caller must do for a worker (see workerNeed).
func (s *shard) submit(key string, run func(context.Context) error, enq int64, unbounded bool) (queueLen int, need workerNeed, err error) {
	d := s.d
	s.mu.Lock()
	if d.closed.Load() {
		s.mu.Unlock()
		return 0, needNone, ErrClosed
	}
	c := s.chats[key]
	if c == nil {
		c = s.newChatLocked(key)
	} else if c.n >= d.cfg.queueSize && !unbounded {
		// (Push may have taken the chat past a Submit's limit.)
		s.mu.Unlock()
		return 0, needNone, ErrQueueFull
	}
	t := s.newTaskLocked()
	t.run, t.enq = run, enq
	c.push(t)
	s.submitted++
	s.queued++
	queueLen = c.n
	if c.state == 0 {
		need = s.readyLocked(c)
	}
	s.mu.Unlock()
	return queueLen, need, nil
}

// readyLocked puts an idle or sleeping chat in the ready FIFO and says
// whether the caller must start a worker for the shard (a slot was taken
// for it) or have the shard join the hungry FIFO; either way it counts the
// worker the caller may start in d.wg.
func (s *shard) readyLocked(c *chat) workerNeed {
	d := s.d
	c.state = chatReady
	s.pushReadyLocked(c)
	need := needNone
	if s.spinning.Load() {
		s.spinning.Store(false) // the spinning worker takes it
	} else if d.tryAcquireSlot() {
		s.workers++
		need = needSpawn
	} else if s.workers < s.quota && !s.inHungry.Load() {
		need = needHungry
	}
	if need != needNone {
		// Counted under the lock, while the shard is busy: a Drain that
		// sees it idle later also sees this count, so no worker can start
		// after Shutdown returned. For needHungry, the count covers the
		// caller's addHungry, which may start a worker.
		d.wg.Add(1)
	}
	return need
}

// startWorker does what readyLocked said, with no lock held.
func (d *Executor) startWorker(s *shard, need workerNeed) {
	switch need {
	case needSpawn:
		go d.work(s) // counted in d.wg by readyLocked
	case needHungry:
		if d.testHookHungry != nil {
			d.testHookHungry()
		}
		d.addHungry(s)
		d.wg.Done() // the count readyLocked took for this call
	}
}

func (s *shard) newChatLocked(key string) *chat {
	c := s.freeChats.get()
	c.key = key
	s.chats[key] = c
	if n := len(s.chats); n > s.peak {
		s.peak = n
	}
	return c
}

// retireLocked removes an empty, idle chat from the map. It runs under the
// lock Submit takes, so a Submit either finds the chat before retirement
// (and its task is run by the worker that holds it) or creates a new one.
func (s *shard) retireLocked(c *chat) {
	delete(s.chats, c.key)
	*c = chat{sleepSeq: c.sleepSeq} // sleepSeq survives, so a stale wake-up stays stale
	s.freeChats.put(c, maxFreeChats+len(s.chats))
	// Go maps keep their buckets after deletes; rebuild one that shrank to
	// an eighth of its peak, so memory follows the active chats.
	if s.peak >= minShrinkPeak && len(s.chats) <= s.peak/8 {
		m := make(map[string]*chat, len(s.chats))
		for k, v := range s.chats {
			m[k] = v
		}
		s.chats = m
		s.peak = len(m)
	}
}

// newTaskLocked returns a task node from the free list, or a new one.
func (s *shard) newTaskLocked() *task { return s.freeTasks.get() }

// freeTaskLocked clears a finished task node and keeps it for reuse.
func (s *shard) freeTaskLocked(t *task) {
	*t = task{}
	s.freeTasks.put(t, maxFreeTasks+s.queued)
}

// trimFreeLocked trims the free lists of a shard that became idle (see
// freeList.trim), so that an idle executor keeps little memory whatever
// its peak.
func (s *shard) trimFreeLocked() {
	s.freeChats.trim(maxFreeChats)
	s.freeTasks.trim(maxFreeTasks)
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

func (d *Executor) tryAcquireSlot() bool {
	for {
		n := d.slots.Load()
		if n >= int64(d.cfg.maxInflight) {
			return false
		}
		if d.slots.CompareAndSwap(n, n+1) {
			// INVARIANT: at most MaxInflight worker slots are held.
			invariant(n+1 <= int64(d.cfg.maxInflight), "slots above MaxInflight")
			return true
		}
	}
}

// addHungry puts s in the hungry FIFO, then serves the FIFO in case a slot
// was freed meanwhile. Together with releaseSlot's check of hungryN after
// freeing a slot, this leaves no hungry shard waiting beside a free slot.
func (d *Executor) addHungry(s *shard) {
	d.hmu.Lock()
	if !s.inHungry.Load() {
		s.inHungry.Store(true)
		d.hungry = append(d.hungry, s)
		d.hungryN.Add(1)
	}
	d.hmu.Unlock()
	d.serveHungry()
}

func (d *Executor) popHungry() *shard {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	if len(d.hungry) == 0 {
		return nil
	}
	s := d.hungry[0]
	d.hungry[0] = nil
	d.hungry = d.hungry[1:]
	if len(d.hungry) == 0 {
		d.hungry = d.hungry[:0:0] // let the backing array go
	}
	s.inHungry.Store(false)
	d.hungryN.Add(-1)
	return s
}

// serveHungry starts a worker for hungry shards while slots are free.
func (d *Executor) serveHungry() {
	for d.hungryN.Load() > 0 && d.tryAcquireSlot() {
		s := d.popHungry()
		if s == nil {
			d.releaseSlot()
			return
		}
		s.mu.Lock()
		s.workers++
		s.mu.Unlock()
		d.wg.Add(1)
		go d.work(s)
	}
}

func (d *Executor) releaseSlot() {
	d.slots.Add(-1)
	if d.hungryN.Load() > 0 {
		d.serveHungry()
	}
}

// work is a worker goroutine. It holds a slot, and counts as a worker of s.
func (d *Executor) work(s *shard) {
	defer d.wg.Done()
	for s != nil {
		s = d.workShard(s)
	}
}

// workShard runs tasks of s, one chat at a time, until s has no ready chat
// or s has more workers than its quota while another shard is hungry. It
// then leaves s and returns the shard to work for next, or nil after
// releasing the worker's slot.
func (d *Executor) workShard(s *shard) (next *shard) {
	var cur *chat
	defer func() {
		if cur != nil {
			// The task called runtime.Goexit (t.FailNow in a test
			// sender): this goroutine is ending. Finish the task as
			// failed and hand the slot to a fresh worker.
			s.mu.Lock()
			s.finishLocked(cur, errGoexit, false, false)
			s.mu.Unlock()
			d.wg.Add(1)
			go d.work(s)
		}
	}()
	s.mu.Lock()
	for {
		c := s.popReadyLocked()
		if c == nil && s.spinLocked() {
			c = s.popReadyLocked()
		}
		if c == nil {
			break
		}
		for c != nil {
			t := c.take()
			c.state = chatRunning
			if t.rs != nil {
				s.waiting--
			} else {
				s.queued--
			}
			s.running++
			queueLen := c.n
			s.mu.Unlock()

			cur = c
			out := d.runTask(c.key, t, queueLen)
			cur = nil

			s.mu.Lock()
			if out.paused {
				s.sleepLocked(c, t, out.delay)
				c = nil
			} else {
				s.freeTaskLocked(t)
				c = s.finishLocked(c, out.err, out.panicked, true)
			}
			if s.workers > s.quota && d.hungryN.Load() > 0 {
				if c != nil {
					c.state = chatReady
					s.pushReadyLocked(c)
				}
				goto leave
			}
		}
	}
leave:
	s.leaveLocked()
	s.mu.Unlock()
	if d.hungryN.Load() > 0 {
		if t := d.popHungry(); t != nil {
			t.mu.Lock()
			t.workers++
			t.mu.Unlock()
			return t
		}
	}
	d.releaseSlot()
	return nil
}

// spinRounds is how many times a spinning worker yields (runtime.Gosched)
// waiting for a chat to become ready before it gives up.
const spinRounds = 16

// spinLocked is called by a worker that found no ready chat. Unless
// another worker of the shard is spinning already, or a hungry shard
// wants workers, the worker spins: it releases the lock and yields a few
// times, waiting for a chat to become ready, and readyLocked, seeing it
// spin, starts no worker for that chat. Starting a goroutine for each chat
// that becomes ready, as a pool of short tasks empties and fills, would
// cost more than the tasks. spinLocked returns with the lock held, and
// reports whether the worker should look for a ready chat again.
func (s *shard) spinLocked() bool {
	if s.spinning.Load() || s.d.hungryN.Load() > 0 || s.d.closed.Load() {
		return false
	}
	s.spinning.Store(true)
	s.mu.Unlock()
	if h := s.d.testHookSpin; h != nil {
		h()
	}
	for i := 0; i < spinRounds && s.spinning.Load(); i++ {
		runtime.Gosched()
	}
	s.mu.Lock()
	// Claimed by readyLocked (spinning false) or not, the spin ends; a
	// chat readyLocked counted on this worker for may have been taken by
	// another worker meanwhile, which is as good.
	s.spinning.Store(false)
	return s.readyHead != nil
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
// A run that paused reports it with the delay: the task is not finished,
// so OnDone is not called; t then keeps its first run's start and queue
// length for the next run, which does not call OnStart again.
func (d *Executor) runTask(key string, t *task, queueLen int) (out runOutcome) {
	h := &d.cfg.hooks
	if t.rs == nil && h.OnStart != nil {
		d.protect(func() { h.OnStart(key) })
	}
	now := d.now()
	start := now
	if t.rs != nil {
		start, queueLen = t.rs.start, t.rs.queueLen
	}
	ctx := d.tc.newTaskContext(min(now+int64(d.cfg.runTimeout), d.lifeEnd(t)))
	returned := false
	defer func() {
		if !returned {
			out = runOutcome{err: errGoexit}
		}
		ctx.release()
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
	if t.rs == nil {
		t.rs = &pauseState{start: start, queueLen: queueLen}
	}
	if cerr := ctx.Err(); cerr != nil && d.lifeOver(t) {
		// The task's life ended (its MaxLifetime, ForceClose), perhaps
		// after it paused: waiting cannot help. (A context ended by the
		// run's own RunTimeout is no reason: the next run has a deadline
		// of its own.) The task runs once more at once, so that every
		// layer sees the end and reports it (the engine's send resolves
		// its Future then); a task that still pauses is finished, so that
		// it cannot spin.
		if t.rs.ended {
			out.paused = false
			out.err = fmt.Errorf("engine: task paused after its context ended: %w", cerr)
		} else {
			t.rs.ended, out.delay = true, 0
		}
	}
	return out
}

// lifeEnd returns when t's MaxLifetime ends (an executor.now() time), or
// math.MaxInt64 without one.
func (d *Executor) lifeEnd(t *task) int64 {
	if d.cfg.maxLifetime <= 0 {
		return math.MaxInt64
	}
	return t.enq + int64(d.cfg.maxLifetime)
}

// lifeOver reports whether a paused task can run no more but to report
// its end: the dispatcher's context ended, or its MaxLifetime.
func (d *Executor) lifeOver(t *task) bool {
	return d.base.Err() != nil || d.now() >= d.lifeEnd(t)
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
