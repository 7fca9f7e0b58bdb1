package executor

import (
	"math"
	"time"
)

// Submit stamps each task with the time it was queued, from which its
// MaxLifetime counts. Reading the clock is among the costliest steps of a
// Submit (it is one of the only two readings per task, with the run's
// start), so when the stamp serves MaxLifetime alone, Submits share one
// reading for up to stampTTL: the first Submit after the shared reading
// expired reads the clock and publishes the reading, and a timer expires
// it stampTTL later. A stamp is then never later than its Submit, and at
// most stampTTL earlier (or as much later as the timer fires late): a
// task's life may end that much before its MaxLifetime, never after. With
// Hooks.OnDone set, whose QueueLatency is measured from the stamp, every
// Submit reads the clock.
//
// A run's deadline (RunTimeout from its start) counts from a stamp too
// (runStart), so that it may come before RunTimeout after the run's start
// by up to stampTTL and the timer's lateness, never after. The timer is
// late by as long as the scheduler keeps its goroutine from running: 22 ms
// was measured on one processor beside a goroutine that computes. So the
// stamp serves only a RunTimeout of at least sharedRunTimeout, where that
// is at most a few percent of it; a shorter one, and Hooks.OnDone, whose
// RunLatency is measured from the start, read the clock. In
// BenchmarkDispatcherThroughput the run's reading was a tenth of a task's
// CPU; shared, a task costs 3–4% less.

// sharedRunTimeout is the shortest RunTimeout whose runs count it from
// the shared stamp.
const sharedRunTimeout = time.Second

// runStart returns the time a run starting now counts its deadline from
// (see above). Runs with no RunTimeout and no MaxLifetime have no deadline
// to count, and no hook to measure: they read no clock, and 0 stands for
// the start.
func (d *Executor) runStart() int64 {
	switch {
	case d.cfg.hooks.OnDone != nil || d.cfg.runTimeout < sharedRunTimeout:
		return d.now()
	case d.cfg.runTimeout >= noRunTimeout && d.cfg.maxLifetime <= 0:
		return 0
	}
	return d.stamp()
}

// stampTTL is how long Submits share a reading of the clock for their
// stamps.
const stampTTL = time.Millisecond

// stampNone is the value of Executor.stampNow when no reading is shared.
const stampNone = math.MinInt64

// stamp returns the stamp of a task Submit queues now (see above).
func (d *Executor) stamp() int64 {
	if d.cfg.hooks.OnDone != nil {
		return d.now()
	}
	if v := d.stampNow.Load(); v != stampNone {
		return v
	}
	return d.refreshStamp()
}

// refreshStamp reads the clock and shares the reading until stampTTL from
// now. The timer is set before the reading is published, so no reading
// outlives it; a closed executor shares none, so that no timer is set
// after Close stopped it.
func (d *Executor) refreshStamp() int64 {
	d.stampMu.Lock()
	defer d.stampMu.Unlock()
	if v := d.stampNow.Load(); v != stampNone {
		return v // another Submit refreshed it meanwhile
	}
	v := d.now()
	if d.closed.Load() {
		return v
	}
	if d.stampTimer == nil {
		d.stampTimer = time.AfterFunc(stampTTL, d.expireStamp) // a timeout: the shared reading's end
	} else {
		d.stampTimer.Reset(stampTTL)
	}
	d.stampNow.Store(v)
	return v
}

// expireStamp ends the sharing of a reading: the next Submit reads the
// clock.
func (d *Executor) expireStamp() { d.stampNow.Store(stampNone) }

// stopStamp stops the timer of the shared reading, for Close.
func (d *Executor) stopStamp() {
	d.stampMu.Lock()
	defer d.stampMu.Unlock()
	if d.stampTimer != nil {
		d.stampTimer.Stop()
	}
	d.stampNow.Store(stampNone)
}
