package cluster

import (
	"runtime/debug"
	"sync"
	"time"
)

// Large records pass through memory in bursts — a flood of uploads, each
// file's record encoded, written in chunks to the object store, read back
// and removed — and leave behind garbage and, on an embedded server, its
// file store's block caches (8 MB each, released to a pool once the
// collector finds them expired). An idle process runs the collector only
// every two minutes, and a pool gives its buffers up after two more
// cycles: the memory a burst took would stay for minutes. So, reclaimIdle
// after the last large record was written or removed, the journal runs
// the collector and returns the freed memory to the system.

// reclaimIdle is how long after the last large record the journal hands
// the memory back: past the file store's cache expiry (10 s).
const reclaimIdle = 15 * time.Second

// reclaimCycles is how many collections free a pooled block buffer: one
// releases the expired cache to its pool, two more empty the pool.
const reclaimCycles = 3

// reclaimer hands memory back once large records stop passing through.
type reclaimer struct {
	mu    sync.Mutex
	timer *time.Timer
	do    func() // reclaim, or a test's stand-in
}

// noteLarge notes a large record written or removed: memory is handed
// back reclaimIdle after the last one.
func (r *reclaimer) noteLarge() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer == nil {
		do := r.do
		if do == nil {
			do = reclaim
		}
		r.timer = time.AfterFunc(reclaimIdle, do) // idle timer: the memory handed back after a burst
		return
	}
	r.timer.Reset(reclaimIdle)
}

// reclaim runs the collector and returns the memory it freed.
func reclaim() {
	for range reclaimCycles {
		debug.FreeOSMemory()
	}
}
