package main

import (
	"flag"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The end-to-end tests spend most of their time waiting on real time
// (takeovers, outages, Telegram's budget), so the package lasts as long
// as its longest chain of them. The testing package starts parallel tests
// in no set order; the queue starts them longest first, e2eParallel at a
// time (or -parallel's value), so that the longest do not start last.

// queue starts the parallel end-to-end tests in order of their expected
// length, at most limit at a time.
var queue = &testQueue{limit: e2eParallel}

// testQueue is a priority gate for parallel tests. Tests register in the
// package's sequential phase (before t.Parallel), so every ticket is known
// when the first may start: a ticket starts once a place is free and every
// ticket ahead of it has started.
type testQueue struct {
	mu      sync.Mutex
	limit   int
	running int
	pending []*ticket // registered, not started, longest first
}

type ticket struct {
	expect  time.Duration
	arrived bool          // its test called wait
	start   chan struct{} // closed when it may start
}

// runParallel makes t a parallel test that starts in its turn, expect
// being about how long it runs alone; the test's place is freed when it
// ends.
func runParallel(t *testing.T, expect time.Duration) {
	t.Helper()
	tk := queue.register(expect)
	t.Cleanup(func() { queue.done(tk) })
	t.Parallel()
	queue.wait(tk)
}

func (q *testQueue) register(expect time.Duration) *ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	tk := &ticket{expect: expect, start: make(chan struct{})}
	// After every ticket at least as long: equal lengths keep their
	// registration order.
	i := slices.IndexFunc(q.pending, func(p *ticket) bool { return p.expect < expect })
	if i < 0 {
		i = len(q.pending)
	}
	q.pending = slices.Insert(q.pending, i, tk)
	return tk
}

func (q *testQueue) wait(tk *ticket) {
	q.mu.Lock()
	tk.arrived = true
	q.dispatch()
	q.mu.Unlock()
	<-tk.start
}

// done frees tk's place, or drops it if it never started (a test that
// failed or skipped before its turn).
func (q *testQueue) done(tk *ticket) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.pending, tk); i >= 0 {
		q.pending = slices.Delete(q.pending, i, i+1)
	} else {
		q.running--
	}
	q.dispatch()
}

// dispatch starts the tickets at the head of the queue that arrived,
// while places are free.
func (q *testQueue) dispatch() {
	for q.running < q.limit && len(q.pending) > 0 && q.pending[0].arrived {
		close(q.pending[0].start)
		q.pending = q.pending[1:]
		q.running++
	}
}

// setupQueue takes the queue's limit from -parallel if the command line
// sets it, and lets the testing package start every parallel test at
// once: the queue is their gate. Call it from TestMain, before m.Run.
func setupQueue() {
	if !flag.Parsed() {
		flag.Parse()
	}
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
				queue.limit = n
			}
		}
	})
	_ = flag.Set("test.parallel", "1000")
}
