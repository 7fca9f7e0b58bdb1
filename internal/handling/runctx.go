package handling

import (
	"context"
	"sync"
	"time"
)

// RunContext is the context of one run of a handling (Context.Context):
// a child of the executor's base context, which a forced shutdown ends,
// that also ends, with context.DeadlineExceeded, once the handlers have
// run for the handler timeout, and when the run ends (End): its handlers
// returned, or one waits. It reports no deadline: a handler's deadline is
// the engine's business, and a wait in Next has a bound of its own.
//
// It arms nothing (no timer, no registration with its parent) until
// someone asks for Done or derives a child from it: most runs never do,
// and Err is computed from the parent and the clock until then. It
// implements the AfterFunc method the context package looks for, so its
// children cost no goroutine.
type RunContext struct {
	parent context.Context

	mu         sync.Mutex
	err        error
	deadline   time.Time // when the running time is up
	armed      bool
	done       chan struct{} // made when armed
	timer      *time.Timer   // while armed and not ended
	stopParent func() bool   // set when armed
	funcs      map[*func()]struct{}
}

// NewRunContext returns the context of a run whose handlers may run for
// timeout, a child of parent.
func NewRunContext(parent context.Context, timeout time.Duration) *RunContext {
	return &RunContext{parent: parent, deadline: time.Now().Add(timeout)}
}

// Deadline reports none: see RunContext.
func (c *RunContext) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value returns the parent's value for key.
func (c *RunContext) Value(key any) any { return c.parent.Value(key) }

// Done returns a channel closed when c ends; the first call arms c.
func (c *RunContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked()
	return c.done
}

// Err returns why c ended, or nil.
func (c *RunContext) Err() error {
	c.mu.Lock()
	if c.err != nil || c.armed {
		defer c.mu.Unlock()
		return c.err
	}
	var err error
	switch {
	case c.parent.Err() != nil:
		err = context.Cause(c.parent)
	case !time.Now().Before(c.deadline):
		err = context.DeadlineExceeded
	}
	c.mu.Unlock()
	if err == nil {
		return nil
	}
	c.End(err)
	return c.Err()
}

// armLocked makes Done's channel, the timer and the registration with the
// parent.
func (c *RunContext) armLocked() {
	if c.armed {
		return
	}
	c.armed = true
	c.done = make(chan struct{})
	if c.err != nil {
		close(c.done)
		return
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.End(context.DeadlineExceeded) }) // the handler timeout
	c.stopParent = context.AfterFunc(c.parent, func() { c.End(context.Cause(c.parent)) })
}

// AfterFunc arranges for f to run in its own goroutine once c is done, as
// context.AfterFunc; the context package uses it for c's children.
func (c *RunContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	if c.funcs == nil {
		c.funcs = make(map[*func()]struct{})
	}
	key := &f
	c.funcs[key] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.funcs[key]
		delete(c.funcs, key)
		return ok
	}
}

// End ends c with err (context.Canceled for nil), unless it ended.
func (c *RunContext) End(err error) {
	if err == nil {
		err = context.Canceled
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if !c.armed {
		c.mu.Unlock()
		return
	}
	close(c.done)
	if c.timer != nil {
		c.timer.Stop()
	}
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	c.stopParent()
	for f := range funcs {
		go (*f)()
	}
}
