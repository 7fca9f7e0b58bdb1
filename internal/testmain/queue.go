package testmain

import (
	"flag"
	"slices"
	"sync"
	"testing"
	"time"
)

// Queue is a priority gate for a package's parallel tests: it starts them
// longest first, at most a limit at a time (see SetUp). The testing
// package starts parallel tests in the order they were declared, so a long
// test declared late runs alone at the end while the processors idle;
// longest first, the package lasts about its tests' sum over the places,
// or its longest test.
//
// Every parallel test of a package that sets a queue up must go through it
// (Run): SetUp lets the testing package start every parallel test at once,
// and the queue is then their only bound.
type Queue struct {
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

// SetUp makes q the gate of the package's parallel tests, limit at a time
// or -parallel's value if the command line sets it; it parses the command
// line's flags. Call it from TestMain, before m.Run: the testing package
// reads -parallel as m.Run starts, and a bound of its own below the
// queue's would hold tests the queue waits for. A queue not set up leaves
// its tests to the testing package (Run is then t.Parallel).
//
// Under -fuzz it does nothing (Run is then t.Parallel): -parallel is then
// the number of fuzzing processes, which a thousand would swamp.
func (q *Queue) SetUp(limit int) {
	n, set := parallelFlag()
	if fuzzing() {
		return
	}
	if set && n > 0 {
		limit = n
	}
	q.mu.Lock()
	q.limit = max(limit, 1)
	q.mu.Unlock()
	_ = flag.Set("test.parallel", "1000")
}

// Run makes t a parallel test that starts in its turn, expect being about
// how long it runs alone (0 for a short test: those start in the order
// they were declared, after the longer ones); its place is freed when it
// ends. Call it where the test would call t.Parallel.
func (q *Queue) Run(t *testing.T, expect time.Duration) {
	t.Helper()
	q.mu.Lock()
	on := q.limit > 0
	q.mu.Unlock()
	if !on {
		t.Parallel()
		return
	}
	tk := q.register(expect)
	t.Cleanup(func() { q.done(tk) })
	t.Parallel()
	q.wait(tk)
}

func (q *Queue) register(expect time.Duration) *ticket {
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

func (q *Queue) wait(tk *ticket) {
	q.mu.Lock()
	tk.arrived = true
	q.dispatch()
	q.mu.Unlock()
	<-tk.start
}

// done frees tk's place, or drops it if it never started (a test that
// failed or skipped before its turn).
func (q *Queue) done(tk *ticket) {
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
func (q *Queue) dispatch() {
	for q.running < q.limit && len(q.pending) > 0 && q.pending[0].arrived {
		close(q.pending[0].start)
		q.pending = q.pending[1:]
		q.running++
	}
}
