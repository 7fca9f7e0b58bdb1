package executor

import (
	"math"
	"time"
)

// Tasks paused between two runs (see Submit) sleep without a
// worker and without a goroutine: each shard keeps its sleeping chats in a
// min-heap by wake-up time, served by one timer, and the end of the
// dispatcher's context wakes every sleeper at once. Many chats waking
// together (a platform-wide retry-after ending) cost one timer firing per
// shard, not a goroutine each.

// sleeper is a sleeping chat in its shard's heap; seq is the chat's
// sleepSeq when it went to sleep, so an entry for a sleep that already
// ended (or a chat struct since reused) is ignored.
type sleeper struct {
	at  time.Time
	c   *chat
	seq uint32
}

// sleepHeap is a binary min-heap of sleepers by at. It is written out
// rather than built on container/heap, whose any-typed Push and Pop would
// allocate for every sleep.
type sleepHeap []sleeper

func (h *sleepHeap) push(x sleeper) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].at.Before(a[p].at) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *sleepHeap) pop() sleeper {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = sleeper{}
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].at.Before(a[m].at) {
			m = l
		}
		if r < n && a[r].at.Before(a[m].at) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	if n == 0 {
		a = nil // let the backing array go
	}
	*h = a
	return top
}

// sleepLocked holds the paused task (rs.task, with its pause state),
// which asked to run again after delay, ahead of the chat's queue and frees the chat's worker: the chat
// stays out of the ready FIFO until the shard's timer or the end of the
// dispatcher's context wakes it. The delay is cut to the end of the
// task's MaxLifetime, after which the next run only sees its context
// expired.
func (s *shard) sleepLocked(c *chat, rs *pauseState, delay time.Duration) {
	d := s.d
	s.running--
	s.waiting++
	c.held, c.holding = rs, true
	now := time.Now()
	if life := d.lifeEnd(rs.task.enq); life != math.MaxInt64 {
		delay = min(delay, time.Duration(life-d.now()))
	}
	if delay <= 0 || d.base.Err() != nil {
		c.state = chatReady
		s.pushReadyLocked(c) // the worker that ran it carries on
		return
	}
	c.state = chatSleeping
	c.sleepSeq++
	at := now.Add(delay)
	s.sleepers.push(sleeper{at: at, c: c, seq: c.sleepSeq})
	switch {
	case s.timer == nil:
		s.timer = time.AfterFunc(delay, s.wakeDue) // a timeout: the earliest sleeping task's wake-up
		s.timerAt = at
	case s.timerAt.IsZero() || at.Before(s.timerAt):
		s.timer.Reset(delay)
		s.timerAt = at
	}
}

// wakeDue runs when the shard's timer fires: it wakes the chats whose time
// has come and sets the timer for the next one.
func (s *shard) wakeDue() {
	var w wakeups
	s.mu.Lock()
	now := time.Now()
	for len(s.sleepers) > 0 && !s.sleepers[0].at.After(now) {
		w.add(s.wakeLocked(s.sleepers.pop()))
	}
	s.timerAt = time.Time{}
	if len(s.sleepers) > 0 {
		s.timerAt = s.sleepers[0].at
		s.timer.Reset(s.timerAt.Sub(now))
	}
	s.mu.Unlock()
	w.start(s)
}

// wakeAll wakes every sleeping chat at once: the dispatcher's context has
// ended, and the tasks' next runs report it.
func (d *Executor) wakeAll() {
	for i := range d.shards {
		s := &d.shards[i]
		var w wakeups
		s.mu.Lock()
		for len(s.sleepers) > 0 {
			w.add(s.wakeLocked(s.sleepers.pop()))
		}
		if s.timer != nil {
			s.timer.Stop()
			s.timerAt = time.Time{}
		}
		s.mu.Unlock()
		w.start(s)
	}
}

// wakeLocked puts the chat of sl in the ready FIFO if it still sleeps the
// sleep sl records, and says what it needs for a worker (see readyLocked).
func (s *shard) wakeLocked(sl sleeper) grant {
	c := sl.c
	if c.state != chatSleeping || c.sleepSeq != sl.seq {
		return grant{}
	}
	return s.readyLocked(c)
}

// wakeups collects the grants of chats that woke, to carry out with no
// lock held.
type wakeups []grant

func (w *wakeups) add(g grant) {
	if g.need != needNone {
		*w = append(*w, g)
	}
}

// start carries out the grants, with no lock held.
func (w wakeups) start(s *shard) {
	for _, g := range w {
		s.d.startWorker(s, g)
	}
}
