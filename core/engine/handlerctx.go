package engine

import (
	"context"
	"sync"
	"time"
)

// handlerContext is the context of one event's handling (Context.Context):
// a child of its task's context, which the engine's shutdown ends, that
// also ends, with context.DeadlineExceeded, once the handlers have run for
// the handler timeout — not counting the time they waited in Next or
// Prompt (pause, resume), which has a bound of its own. It has no
// deadline to report, since waits move it; it ends when the handling ends
// (end).
//
// Like taskContext it arms nothing (no timer, no registration with its
// parent) until someone asks for Done or derives a child from it: most
// handlings never do, and Err is computed from the parent and the clock
// until then. It implements the AfterFunc method the context package looks
// for, so its children cost no goroutine (10,000 handlers waiting in Next
// each have some).
type handlerContext struct {
	parent context.Context

	mu         sync.Mutex
	err        error
	deadline   time.Time     // when the running time is up, while not paused
	left       time.Duration // of the running time, while paused
	paused     int
	armed      bool
	done       chan struct{} // made when armed
	timer      *time.Timer   // while armed, running and not ended
	stopParent func() bool   // set when armed
	funcs      map[*func()]struct{}
}

func newHandlerContext(parent context.Context, timeout time.Duration) *handlerContext {
	return &handlerContext{parent: parent, deadline: time.Now().Add(timeout)}
}

// Deadline reports none: see handlerContext.
func (c *handlerContext) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *handlerContext) Value(key any) any { return c.parent.Value(key) }

func (c *handlerContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked()
	return c.done
}

func (c *handlerContext) Err() error {
	c.mu.Lock()
	if c.err != nil || c.armed {
		defer c.mu.Unlock()
		return c.err
	}
	var err error
	switch {
	case c.parent.Err() != nil:
		err = context.Cause(c.parent)
	case c.paused == 0 && !time.Now().Before(c.deadline):
		err = context.DeadlineExceeded
	}
	c.mu.Unlock()
	if err == nil {
		return nil
	}
	c.end(err)
	return c.Err()
}

// armLocked makes Done's channel, the timer and the registration with the
// parent.
func (c *handlerContext) armLocked() {
	if c.armed {
		return
	}
	c.armed = true
	c.done = make(chan struct{})
	if c.err != nil {
		close(c.done)
		return
	}
	if c.paused == 0 {
		c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	}
	c.stopParent = context.AfterFunc(c.parent, func() { c.end(context.Cause(c.parent)) })
}

// AfterFunc arranges for f to run in its own goroutine once c is done, as
// context.AfterFunc; the context package uses it for c's children.
func (c *handlerContext) AfterFunc(f func()) (stop func() bool) {
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

// end ends c with err (context.Canceled for nil), unless it ended.
func (c *handlerContext) end(err error) {
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

// pause stops counting the handlers' running time: they wait in Next.
// Each pause is followed by one resume.
func (c *handlerContext) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused++; c.paused > 1 || c.err != nil {
		return
	}
	c.left = time.Until(c.deadline)
	if c.timer != nil {
		c.timer.Stop()
	}
}

// resume counts the running time again.
func (c *handlerContext) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused--; c.paused > 0 || c.err != nil {
		return
	}
	c.deadline = time.Now().Add(c.left)
	if c.armed {
		if c.timer == nil {
			c.timer = time.AfterFunc(c.left, func() { c.end(context.DeadlineExceeded) })
		} else {
			c.timer.Reset(c.left)
		}
	}
}
