package executor

import (
	"context"
	"math"
	"sync/atomic"
	"time"
)

// ctxBase is what the task contexts of one executor share: their parent
// and the clock their deadlines are read on. Deadlines are monotonic
// offsets from epoch, so that a task's context costs one small allocation
// and comparing with its deadline one monotonic clock reading
// (time.Since, about half the cost of time.Now).
type ctxBase struct {
	parent context.Context
	epoch  time.Time // has a monotonic reading
	limit  int64     // the parent's deadline as an offset from epoch, or math.MaxInt64
}

func newCtxBase(parent context.Context) ctxBase {
	b := ctxBase{parent: parent, epoch: time.Now(), limit: math.MaxInt64}
	if pd, ok := parent.Deadline(); ok {
		b.limit = b.offset(pd)
	}
	return b
}

// now returns the monotonic time since epoch, in nanoseconds.
func (b *ctxBase) now() int64 { return int64(time.Since(b.epoch)) }

// offset returns t as an offset from epoch.
func (b *ctxBase) offset(t time.Time) int64 { return int64(t.Sub(b.epoch)) }

// at returns the time at offset off from epoch.
func (b *ctxBase) at(off int64) time.Time { return b.epoch.Add(time.Duration(off)) }

// newTaskContext returns a task context with the deadline at offset
// deadline from b's epoch, or at the parent's deadline if that is earlier.
func (b *ctxBase) newTaskContext(deadline int64) *taskContext {
	return &taskContext{b: b, deadline: min(deadline, b.limit)}
}

// taskContext is the context a dispatcher task runs with: a child of the
// dispatcher's base context with the run's deadline.
//
// It behaves like context.WithDeadline(parent, deadline) but arms nothing
// until the task asks for Done: most of the cost of a deadline context is its
// timer and its registration with the parent, and a task that never selects
// on Done (a no-op, or a send that finishes without blocking) needs neither.
// Until then Err is computed on demand from the parent and the clock. The
// first call to Done creates a real context.WithDeadline and every later call
// delegates to it, so children, context.AfterFunc and context.Cause see an
// ordinary stdlib context.
//
// Its state moves once, by compare-and-swap, from nil (unarmed, not ended)
// to an armed stdlib context, or to the error it ended with unarmed: the
// parent's, or Canceled after release. So it takes no lock, and it is
// three words.
//
// INVARIANT: once Err has returned a non-nil error it keeps returning that
// error, and Done returns a closed channel. Tested in taskctx_test.go.
//
// One difference from the stdlib remains: after release, the context is
// cancelled without a cause of its own, so if the parent is cancelled later
// with a cause, context.Cause reports the parent's cause (Err still says
// Canceled). Only goroutines a task left running can observe it.
type taskContext struct {
	b        *ctxBase
	deadline int64                    // offset from b.epoch
	state    atomic.Pointer[ctxState] // nil until armed or ended
}

// ctxState is a task context's state once armed or ended.
type ctxState struct {
	ctx    context.Context    // the armed stdlib context; nil if it ended unarmed
	cancel context.CancelFunc // ctx's cancel function
	err    error              // the error it ended with unarmed
}

// The states of contexts that ended unarmed with the two errors a
// context may end with; each is read-only.
var (
	endedCanceled = &ctxState{err: context.Canceled}
	endedDeadline = &ctxState{err: context.DeadlineExceeded}
)

func (s *ctxState) error() error {
	if s.ctx != nil {
		return s.ctx.Err()
	}
	return s.err
}

// closedDone is a closed channel returned by Done after the task context
// ended before it was armed.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (c *taskContext) Deadline() (time.Time, bool) { return c.b.at(c.deadline), true }

func (c *taskContext) Value(key any) any {
	if s := c.state.Load(); s != nil && s.ctx != nil {
		return s.ctx.Value(key)
	}
	return c.b.parent.Value(key)
}

func (c *taskContext) Done() <-chan struct{} {
	s := c.state.Load()
	if s == nil {
		if c.check() == nil {
			s = c.arm()
		} else {
			s = c.state.Load()
		}
	}
	if s.ctx != nil {
		return s.ctx.Done()
	}
	return closedDone
}

func (c *taskContext) Err() error {
	if s := c.state.Load(); s != nil {
		return s.error()
	}
	return c.check()
}

// check computes the error of a context found unarmed and not ended, and
// records it if it is not nil. A context found past its deadline is armed
// with an already expired stdlib context, so that context.Cause agrees
// with Err even if the parent is cancelled later (the rare path
// allocates).
func (c *taskContext) check() error {
	if err := c.b.parent.Err(); err != nil {
		s := endedCanceled
		switch err {
		case context.Canceled:
		case context.DeadlineExceeded:
			s = endedDeadline
		default:
			s = &ctxState{err: err}
		}
		return c.settle(s).error()
	}
	if c.b.now() < c.deadline {
		return nil
	}
	return c.arm().error()
}

// arm records an armed stdlib context as the state, unless another state
// was recorded first, and returns the recorded state.
func (c *taskContext) arm() *ctxState {
	a := new(ctxState)
	a.ctx, a.cancel = context.WithDeadline(c.b.parent, c.b.at(c.deadline))
	return c.settle(a)
}

// settle records s as the state unless another was recorded first, and
// returns the recorded state; an armed s that lost is cancelled.
func (c *taskContext) settle(s *ctxState) *ctxState {
	if c.state.CompareAndSwap(nil, s) {
		return s
	}
	if s.cancel != nil {
		s.cancel()
	}
	return c.state.Load()
}

// release cancels the context once its task has returned, like the cancel
// function of context.WithDeadline: goroutines the task left behind see
// context.Canceled, and an armed timer is stopped. Like the cancel
// function of context.WithDeadline, releasing a context whose deadline
// passed unobserved reports Canceled.
func (c *taskContext) release() {
	if s := c.settle(endedCanceled); s.cancel != nil {
		s.cancel()
	}
}

func (c *taskContext) String() string { return "executor.taskContext" }
