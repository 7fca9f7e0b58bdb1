package executor

import (
	"runtime"
	"time"
)

// Worker goroutines. Each holds one of MaxInflight slots (executor.slots)
// from its start to its end, and is, in turn:
//
//   - working for a shard (counted in its workers), running its ready
//     chats' tasks (workShard);
//   - spinning: at most one worker of the executor, out of work, yields a
//     few times (runtime.Gosched) waiting for any shard to hand it a chat
//     that became ready; a short task pool that empties and fills wakes no
//     goroutine then;
//   - idle: waiting, on its own channel, for a shard to hand it work; the
//     longest idle are first in executor.idle, and one timer ends those
//     idle for idleLinger, so that an executor that became idle soon runs
//     no goroutine;
//
// and ends when it has been idle for idleLinger, or when the executor is
// closed and it has no work left.
//
// A shard whose chat became ready with no worker of its own about to take
// it gets one (grantLocked), in this order: the spinner, an idle worker, a
// new goroutine in a free slot; with no free slot, a shard below its quota
// joins the hungry FIFO, served by the next worker out of work, or by a
// worker of a shard above its quota after its current task.

// idleLinger is how long an idle worker waits for work before it ends.
const idleLinger = time.Second

// spinRounds is how many times the spinning worker yields
// (runtime.Gosched) waiting for work before it goes idle.
const spinRounds = 16

// worker is what a worker goroutine needs to be handed work while it spins
// or idles.
type worker struct {
	wake     chan *shard // the shard to work for, or nil to end; buffered
	idleFrom int64       // executor.now() when it went idle, guarded by hmu
}

// workerNeed says what a shard that has a chat ready needs for it.
type workerNeed uint8

const (
	needNone   workerNeed = iota // a worker of the shard will get to it
	needWake                     // hand the shard to the spinning or an idle worker
	needSpawn                    // a slot was taken: start a worker
	needHungry                   // no worker nor slot free: join the hungry FIFO
)

// grant is what grantLocked arranged for a shard: its caller carries it
// out with no lock held (startWorker).
type grant struct {
	need workerNeed
	w    *worker // for needWake
}

// grantLocked arranges a worker for s, which has a chat ready, unless a
// worker is on its way to s already (s.coming): that one takes the chat,
// and, if it finds more ready when it takes its first, calls grantLocked
// again for the next. So every ready chat gets a worker, one after the
// other as fast as they start, but a shard whose workers are all busy
// with short tasks does not wake a worker for each chat that becomes
// ready, to find its chat taken by one of them. s.mu is held.
//
// The worker is counted in s.workers and s.coming. For needSpawn and
// needHungry, grantLocked counts the goroutine the caller may start in
// d.wg: counted under the lock, while the shard is busy, so a Drain that
// sees the shard idle later also sees this count, and no worker can start
// after Shutdown returned.
func (d *Executor) grantLocked(s *shard) grant {
	if s.coming > 0 {
		return grant{}
	}
	if w := d.spinner.Load(); w != nil && d.spinner.CompareAndSwap(w, nil) {
		s.workers++
		s.coming++
		return grant{need: needWake, w: w}
	}
	if d.idleN.Load() > 0 {
		if w := d.popIdle(); w != nil {
			s.workers++
			s.coming++
			return grant{need: needWake, w: w}
		}
	}
	if d.tryAcquireSlot() {
		s.workers++
		s.coming++
		d.wg.Add(1)
		return grant{need: needSpawn}
	}
	if s.workers < s.quota && !s.inHungry.Load() {
		d.wg.Add(1) // covers the caller's addHungry, which may start a worker
		return grant{need: needHungry}
	}
	return grant{}
}

// startWorker carries out what grantLocked arranged, with no lock held.
func (d *Executor) startWorker(s *shard, g grant) {
	switch g.need {
	case needWake:
		g.w.wake <- s
	case needSpawn:
		go d.work(s) // counted in d.wg by grantLocked
	case needHungry:
		if d.testHookHungry != nil {
			d.testHookHungry()
		}
		d.addHungry(s)
		d.wg.Done() // the count grantLocked took for this call
	}
}

// work is a worker goroutine, started for s: it holds a slot, and counts
// as a worker of s.
func (d *Executor) work(s *shard) {
	defer d.wg.Done()
	w := &worker{wake: make(chan *shard, 1)}
	for s != nil {
		d.workShard(s)
		if s = d.spin(w); s == nil {
			s = d.idleWait(w)
		}
	}
	d.releaseSlot()
}

// spin makes w the spinning worker, unless there is one, and returns the
// shard handed to it, or nil if it got none within spinRounds.
func (d *Executor) spin(w *worker) *shard {
	if d.hungryN.Load() > 0 || d.closed.Load() || !d.spinner.CompareAndSwap(nil, w) {
		return nil
	}
	if h := d.testHookSpin; h != nil {
		h()
	}
	for i := 0; i < spinRounds && d.spinner.Load() == w; i++ {
		if d.hungryN.Load() > 0 || d.closed.Load() {
			break
		}
		runtime.Gosched()
	}
	if d.spinner.CompareAndSwap(w, nil) {
		return nil // nobody claimed it
	}
	// grantLocked claimed it: the shard is on its way.
	return <-w.wake
}

// idleWait serves a hungry shard if there is one, else waits idle for a
// shard to be handed to w. It returns nil when w is to end: the executor
// is closed, or w was idle for idleLinger.
func (d *Executor) idleWait(w *worker) *shard {
	d.hmu.Lock()
	if s := d.popHungryLocked(); s != nil {
		d.hmu.Unlock()
		s.mu.Lock()
		s.workers++
		s.coming++
		s.mu.Unlock()
		return s
	}
	if d.closed.Load() {
		d.hmu.Unlock()
		return nil
	}
	w.idleFrom = d.now()
	d.idle = append(d.idle, w)
	d.idleN.Add(1)
	if !d.reaping {
		d.reaping = true
		if d.reaper == nil {
			d.reaper = time.AfterFunc(idleLinger, d.reap) // a timeout: the idle worker's end
		} else {
			d.reaper.Reset(idleLinger)
		}
	}
	d.hmu.Unlock()
	return <-w.wake
}

// popIdle takes the worker idle the shortest time out of the idle list, or
// returns nil.
func (d *Executor) popIdle() *worker {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	n := len(d.idle)
	if n == 0 {
		return nil
	}
	w := d.idle[n-1]
	d.idle[n-1] = nil
	d.idle = d.idle[:n-1]
	d.idleN.Add(-1)
	return w
}

// reap ends the workers idle for idleLinger, and sets the timer for the
// next to be.
func (d *Executor) reap() {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	now := d.now()
	n := 0
	for n < len(d.idle) && now-d.idle[n].idleFrom >= int64(idleLinger) {
		d.idle[n].wake <- nil // buffered, and empty while idle: never blocks
		n++
	}
	m := copy(d.idle, d.idle[n:])
	clear(d.idle[m:])
	d.idle = d.idle[:m]
	d.idleN.Add(int64(-n))
	if m == 0 {
		d.reaping = false
		return
	}
	d.reaper.Reset(time.Duration(d.idle[0].idleFrom + int64(idleLinger) - now))
}

// endIdle ends every idle worker: the executor is closed, and a worker out
// of work from now on ends rather than waits.
func (d *Executor) endIdle() {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	for i, w := range d.idle {
		w.wake <- nil
		d.idle[i] = nil
	}
	d.idleN.Add(int64(-len(d.idle)))
	d.idle = nil
	if d.reaper != nil {
		d.reaper.Stop()
	}
	d.reaping = false
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

// releaseSlot frees the slot of a worker that ends, for a hungry shard if
// there is one.
func (d *Executor) releaseSlot() {
	d.slots.Add(-1)
	if d.hungryN.Load() > 0 {
		d.serveHungry()
	}
}

// addHungry puts s in the hungry FIFO, then serves the FIFO in case a
// worker went idle or a slot was freed meanwhile. Together with
// idleWait's and releaseSlot's look at the FIFO, this leaves no hungry
// shard waiting beside an idle worker or a free slot.
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

// popHungryLocked takes the first shard out of the hungry FIFO, or returns
// nil; d.hmu is held.
func (d *Executor) popHungryLocked() *shard {
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

// serveHungry hands hungry shards to idle workers, or to new ones while
// slots are free.
func (d *Executor) serveHungry() {
	for d.hungryN.Load() > 0 {
		d.hmu.Lock()
		if len(d.hungry) == 0 {
			d.hmu.Unlock()
			return
		}
		var w *worker
		if n := len(d.idle); n > 0 {
			w = d.idle[n-1]
			d.idle[n-1] = nil
			d.idle = d.idle[:n-1]
			d.idleN.Add(-1)
		} else if !d.tryAcquireSlot() {
			d.hmu.Unlock()
			return
		}
		s := d.popHungryLocked()
		d.hmu.Unlock()
		s.mu.Lock()
		s.workers++
		s.coming++
		s.mu.Unlock()
		if w != nil {
			w.wake <- s
		} else {
			d.wg.Add(1)
			go d.work(s)
		}
	}
}
