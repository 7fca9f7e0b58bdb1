// Package lazyctx is a deadline context that arms nothing until it is
// asked for Done: the executor's task contexts and the sender Timeout's
// attempt contexts, which most tasks and sends end without ever selecting
// on.
package lazyctx

import (
	"context"
	"math"
	"sync/atomic"
	"time"
)

// Clock is what the contexts made from it share: their parent and the
// clock their deadlines are read on. Deadlines are monotonic offsets from
// the clock's epoch, so that a context costs one small allocation and
// comparing with its deadline one monotonic clock reading (time.Since,
// about half the cost of time.Now). The zero Clock is not usable; make
// one with NewClock.
type Clock struct {
	parent context.Context
	epoch  time.Time // has a monotonic reading
	limit  int64     // the parent's deadline as an offset from epoch, or math.MaxInt64
}

// NewClock returns the clock of contexts under parent, its epoch now (a
// time with a monotonic reading, as time.Now gives).
func NewClock(parent context.Context, now time.Time) Clock {
	b := Clock{parent: parent, epoch: now, limit: math.MaxInt64}
	if pd, ok := parent.Deadline(); ok {
		b.limit = b.Offset(pd)
	}
	return b
}

// Now returns the monotonic time since b's epoch, in nanoseconds.
func (b *Clock) Now() int64 { return int64(time.Since(b.epoch)) }

// Offset returns t as an offset from b's epoch.
func (b *Clock) Offset(t time.Time) int64 { return int64(t.Sub(b.epoch)) }

// at returns the time at offset off from epoch.
func (b *Clock) at(off int64) time.Time { return b.epoch.Add(time.Duration(off)) }

// New returns a context with the deadline at offset deadline from b's
// epoch, or at the parent's deadline if that is earlier. b must outlive
// it.
func (b *Clock) New(deadline int64) *Context {
	return &Context{b: b, deadline: min(deadline, b.limit)}
}

// WithDeadline is context.WithDeadline(parent, deadline) made lazily, in
// one allocation: now is the time the caller read last (the clock's
// epoch). Call Release when done with it, as the cancel function of
// context.WithDeadline.
func WithDeadline(parent context.Context, now, deadline time.Time) *Context {
	o := &struct {
		clock Clock
		ctx   Context
	}{clock: NewClock(parent, now)}
	o.ctx = Context{b: &o.clock, deadline: min(o.clock.Offset(deadline), o.clock.limit)}
	return &o.ctx
}

// Context is a child of its clock's parent with a deadline: the context
// a dispatcher task runs with, or a send's attempt under Timeout.
//
// It behaves like context.WithDeadline(parent, deadline) but arms nothing
// until it is asked for Done: most of the cost of a deadline context is its
// timer and its registration with the parent, and a task that never selects
// on Done (a no-op, or a send that finishes without blocking) needs neither.
// Until then Err is computed on demand from the parent and the clock. The
// first call to Done creates a real context.WithDeadline and every later call
// delegates to it, so children, context.AfterFunc and context.Cause see an
// ordinary stdlib context.
//
// Its state moves once, by compare-and-swap, from nil (unarmed, not ended)
// to an armed stdlib context, or to the error it ended with unarmed: the
// parent's, or Canceled after Release. So it takes no lock, and it is
// four words.
//
// INVARIANT: once Err has returned a non-nil error it keeps returning that
// error, and Done returns a closed channel. Tested in lazyctx_test.go.
//
// One difference from the stdlib remains: after Release, the context is
// cancelled without a cause of its own, so if the parent is cancelled later
// with a cause, context.Cause reports the parent's cause (Err still says
// Canceled). Only goroutines a task left running can observe it.
type Context struct {
	b        *Clock
	deadline int64                    // offset from b.epoch
	state    atomic.Pointer[ctxState] // nil until armed or ended
	// kids are the cancel functions of contexts below it armed beside it
	// (see arm), which Release calls; released once it has.
	kids atomic.Pointer[kid]
}

// ctxState is a task context's state once armed or ended.
type ctxState struct {
	ctx    context.Context    // the armed stdlib context; nil if it ended unarmed
	cancel context.CancelFunc // ctx's cancel function
	err    error              // the error it ended with unarmed
}

// besideState is the state of a context armed beside unarmed contexts
// above it (see arm), with the parent its stdlib context was made under
// and its entry in the first such context's kids, in one allocation.
type besideState struct {
	ctxState
	parent besideParent
	kid    kid
}

// kid is an entry in a Context's list of kids.
type kid struct {
	cancel context.CancelFunc
	next   *kid
}

// released ends the list of kids of a released Context: a kid added
// after it is cancelled at once.
var released = new(kid)

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

// Deadline returns the context's deadline: it always has one.
func (c *Context) Deadline() (time.Time, bool) { return c.b.at(c.deadline), true }

// Value returns the parent's value for key.
func (c *Context) Value(key any) any {
	if s := c.state.Load(); s != nil && s.ctx != nil {
		return s.ctx.Value(key)
	}
	return c.b.parent.Value(key)
}

// Done returns a channel closed when the context ends; the first call
// arms the context.
func (c *Context) Done() <-chan struct{} {
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

// Err returns nil until the context ends, then why it ended.
func (c *Context) Err() error {
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
func (c *Context) check() error {
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
	if c.b.Now() < c.deadline {
		return nil
	}
	return c.arm().error()
}

// arm records an armed stdlib context as the state, unless another state
// was recorded first, and returns the recorded state.
//
// A context whose parent is, through value contexts of this package
// (WithValue), an unarmed Context — a send's attempt under its task's
// context — is armed beside it rather than under it, so that the one
// above stays unarmed: its stdlib context is made under the first
// ancestor that is neither, with the earliest deadline on the way, and
// registered with each unarmed Context on the way, whose Release cancels
// it. It ends when a stdlib child of theirs would: at the earliest
// deadline, when that ancestor ends, or when one of them is released;
// its values are its parent's. Arming it under its parent would arm each
// of them, each a timer and a registration of its own.
func (c *Context) arm() *ctxState {
	deadline := c.b.at(c.deadline)
	above, lazies := c.b.parent, 0
	for walking := true; walking; {
		switch p := above.(type) {
		case *valueCtx:
			above = p.Context
		case *Context:
			if p.state.Load() != nil {
				walking = false // armed or ended: an ordinary parent
				break
			}
			lazies++
			if d := p.b.at(p.deadline); d.Before(deadline) {
				deadline = d
			}
			above = p.b.parent
		default:
			walking = false
		}
	}
	if lazies == 0 {
		a := new(ctxState)
		a.ctx, a.cancel = context.WithDeadline(c.b.parent, deadline)
		return c.settle(a)
	}
	b := &besideState{parent: besideParent{Context: above, values: c.b.parent}}
	a := &b.ctxState
	a.ctx, a.cancel = context.WithDeadline(&b.parent, deadline)
	if s := c.settle(a); s != a {
		return s
	}
	// Registered with each after it is recorded, so that a Release of c
	// racing with this cancels it either way.
	first := true
	for p := c.b.parent; p != above; {
		switch q := p.(type) {
		case *valueCtx:
			p = q.Context
		case *Context:
			k := &b.kid
			if !first {
				k = &kid{}
			}
			first = false
			k.cancel = a.cancel
			q.adopt(k)
			p = q.b.parent
		}
	}
	return a
}

// adopt adds k to c's kids, or, c released, cancels it at once.
func (c *Context) adopt(k *kid) {
	for {
		next := c.kids.Load()
		if next == released {
			k.cancel()
			return
		}
		k.next = next
		if c.kids.CompareAndSwap(next, k) {
			return
		}
	}
}

// besideParent is the parent of a context armed beside the unarmed
// contexts above it (see arm): it ends with the first ancestor above
// them and has the values of the context's own parent.
type besideParent struct {
	context.Context
	values context.Context
}

func (p *besideParent) Value(key any) any { return p.values.Value(key) }

// WithValue is context.WithValue(parent, key, val) that a Context below
// it sees through (see arm). Like context.WithValue's, key must be
// comparable and should be a type of the caller's own.
func WithValue(parent context.Context, key, val any) context.Context {
	return &valueCtx{Context: parent, key: key, val: val}
}

// valueCtx is a context made by WithValue.
type valueCtx struct {
	context.Context
	key, val any
}

func (v *valueCtx) Value(key any) any {
	if key == v.key {
		return v.val
	}
	return v.Context.Value(key)
}

// String names the context's type, as the stdlib's contexts do.
func (v *valueCtx) String() string { return "lazyctx.WithValue" }

// settle records s as the state unless another was recorded first, and
// returns the recorded state; an armed s that lost is cancelled.
func (c *Context) settle(s *ctxState) *ctxState {
	if c.state.CompareAndSwap(nil, s) {
		return s
	}
	if s.cancel != nil {
		s.cancel()
	}
	return c.state.Load()
}

// Release cancels the context once its task has returned, like the cancel
// function of context.WithDeadline: goroutines the task left behind see
// context.Canceled, and an armed timer is stopped. Like the cancel
// function of context.WithDeadline, releasing a context whose deadline
// passed unobserved reports Canceled.
func (c *Context) Release() {
	if s := c.settle(endedCanceled); s.cancel != nil {
		s.cancel()
	}
	for k := c.kids.Swap(released); k != nil && k != released; k = k.next {
		k.cancel()
	}
}

// String names the context's type, as the stdlib's contexts do.
func (c *Context) String() string { return "lazyctx.Context" }
