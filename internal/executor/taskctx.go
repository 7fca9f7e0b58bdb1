package executor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

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
// INVARIANT: once Err has returned a non-nil error it keeps returning that
// error, and Done returns a closed channel. Tested in taskctx_test.go.
//
// One difference from the stdlib remains: after release, the context is
// cancelled without a cause of its own, so if the parent is cancelled later
// with a cause, context.Cause reports the parent's cause (Err still says
// Canceled). Only goroutines a task left running can observe it.
type taskContext struct {
	parent   context.Context
	deadline time.Time

	// inner is the armed stdlib context; nil until the first Done.
	inner atomic.Pointer[armedContext]

	mu  sync.Mutex
	err error // set before arming when the context is found ended or released
}

type armedContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// closedDone is a closed channel returned by Done after the task context
// ended before it was armed.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func newTaskContext(parent context.Context, d time.Time) *taskContext {
	if pd, ok := parent.Deadline(); ok && pd.Before(d) {
		d = pd
	}
	return &taskContext{parent: parent, deadline: d}
}

func (c *taskContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *taskContext) Value(key any) any {
	if a := c.inner.Load(); a != nil {
		return a.ctx.Value(key)
	}
	return c.parent.Value(key)
}

func (c *taskContext) Done() <-chan struct{} {
	if a := c.inner.Load(); a != nil {
		return a.ctx.Done()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.inner.Load(); a != nil {
		return a.ctx.Done()
	}
	if c.errLocked() != nil {
		if a := c.inner.Load(); a != nil { // armed expired by errLocked
			return a.ctx.Done()
		}
		return closedDone
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	c.inner.Store(&armedContext{ctx: ctx, cancel: cancel})
	return ctx.Done()
}

func (c *taskContext) Err() error {
	if a := c.inner.Load(); a != nil {
		return a.ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.inner.Load(); a != nil {
		return a.ctx.Err()
	}
	return c.errLocked()
}

// errLocked computes the unarmed context's error and remembers it once set.
// A context found past its deadline is armed with an already expired
// stdlib context, so that context.Cause agrees with Err even if the parent
// is cancelled later (the rare path may allocate).
func (c *taskContext) errLocked() error {
	if c.err != nil {
		return c.err
	}
	if err := c.parent.Err(); err != nil {
		c.err = err
	} else if !time.Now().Before(c.deadline) {
		ctx, cancel := context.WithDeadline(c.parent, c.deadline)
		c.inner.Store(&armedContext{ctx: ctx, cancel: cancel})
		c.err = ctx.Err()
	}
	return c.err
}

// release cancels the context once its task has returned, like the cancel
// function of context.WithDeadline: goroutines the task left behind see
// context.Canceled, and an armed timer is stopped.
func (c *taskContext) release() {
	if a := c.inner.Load(); a != nil {
		a.cancel()
		return
	}
	c.mu.Lock()
	if a := c.inner.Load(); a != nil {
		c.mu.Unlock()
		a.cancel()
		return
	}
	if c.err == nil {
		// Like the cancel function of context.WithDeadline, releasing a
		// context whose deadline passed unobserved reports Canceled.
		c.err = context.Canceled
	}
	c.mu.Unlock()
}

func (c *taskContext) String() string { return "executor.taskContext" }
