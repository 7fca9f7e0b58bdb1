package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/internal/lazyctx"
)

// ErrWouldExceedDeadline is returned by [Progress.Wait] when a wait cannot
// finish before the send's deadline. The wait is then not started at all,
// as rate.Limiter.Wait does: a send that cannot succeed in time fails at
// once instead of sleeping until its deadline.
var ErrWouldExceedDeadline = errors.New("platform: wait would exceed the send's deadline")

// Progress is how far one send has got, from its first attempt to its
// outcome, across the runs of its task: when it started, until when it may
// live, until when it waits, the attempts it made, the platform sender's
// own progress, and what each layer of the sender chain keeps of it
// ([Progress.Value]). Every layer of a send reads and updates the one
// Progress in the send's context (see [ProgressOf]); none keeps state of
// its own between runs.
//
// A send runs once, or, under a scheduler that resumes sends (the engine's
// OutboundDispatcher, which owns the Progress of each send it runs and
// creates it with [NewProgress]), once more after each wait: a layer that
// must wait (a retry backoff, a platform's retry-after, a rate-limit
// token) calls [Progress.Wait], which then returns a [*PauseError] instead
// of sleeping. Every layer above returns that error unchanged — the send
// is not over — and the scheduler runs the send again, from the top of
// the chain, when the wait is over; each layer then carries on from what
// Progress says. Without such a scheduler Wait sleeps, and a send is one
// run. Either way each layer does the same thing; Observe in package
// middleware/sender sees only the end.
//
// The exported fields marshal to JSON, so a journal can keep a send's
// progress with it; what layers keep with SetValue lives in memory only. A
// Progress is used by one run at a time (the runs of a send are
// sequential), so it needs no locking; it must not be used by goroutines
// that outlive a run.
type Progress struct {
	// Submitted is when the send was handed to the scheduler that runs it
	// (zero when unknown): Started less Submitted is how long it waited
	// for its first run, in its chat's queue.
	Submitted time.Time `json:"-"`
	// Started is when the send's first run began.
	Started time.Time `json:"started"`
	// Deadline is the end of the send's life, its waits between runs
	// included; zero means none but the context's. Wait refuses a wait
	// that would end later.
	Deadline time.Time `json:"deadline,omitzero"`
	// Attempts counts the attempts the send started: calls of the layers
	// below the one that repeats them (package middleware/sender's Retry).
	// A send made without retries counts one.
	Attempts int `json:"attempts,omitempty"`
	// NotBefore is when the wait the last run asked for ends.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Platform is what the platform sender keeps between runs, in its own
	// JSON form: how many parts of a long text it delivered, say.
	Platform json.RawMessage `json:"platform,omitempty"`
	// Sending is the time spent so far in the platform sender's calls,
	// as the layer right above it measures it (package middleware/sender's
	// Timeout); the rest of the send's time went to waits.
	Sending time.Duration `json:"-"`
	// Ended is when the send's outcome became final, as the first layer
	// that saw it there recorded it; zero until then.
	Ended time.Time `json:"-"`

	resumable bool
	// What layers keep (SetValue): the first ones inline, so that a send
	// through the default chain allocates nothing for them.
	values [2]layerValue
	more   []layerValue
}

// layerValue is what one layer keeps in a Progress (SetValue).
type layerValue struct {
	key, v any
}

// Value returns what the layer whose key is key keeps of the send (see
// SetValue), or nil.
func (p *Progress) Value(key any) any {
	for i := range p.values {
		if p.values[i].key == key {
			return p.values[i].v
		}
	}
	for _, lv := range p.more {
		if lv.key == key {
			return lv.v
		}
	}
	return nil
}

// SetValue keeps v under key for the send's later runs: what one layer of
// the chain keeps of the send (the attempt under way, the rate-limit
// tokens it holds), in memory only; a nil v removes it. Use a key of an
// unexported type of the layer's own, as with context values, so layers
// never share one.
func (p *Progress) SetValue(key, v any) {
	for i := range p.values {
		if p.values[i].key == key {
			if v == nil {
				p.values[i] = layerValue{}
			} else {
				p.values[i].v = v
			}
			return
		}
	}
	for i, lv := range p.more {
		if lv.key == key {
			if v == nil {
				p.more = append(p.more[:i], p.more[i+1:]...)
			} else {
				p.more[i].v = v
			}
			return
		}
	}
	if v == nil {
		return
	}
	for i := range p.values {
		if p.values[i].key == nil {
			p.values[i] = layerValue{key, v}
			return
		}
	}
	p.more = append(p.more, layerValue{key, v})
}

// Releaser is implemented by what a layer keeps in a [Progress] that must
// be given back when the send ends (a rate limiter's reserved tokens).
type Releaser interface {
	// Release gives back what is held and no longer needed.
	Release()
}

// Release gives back, once the send's outcome is final, what the layers
// keep in p that is a [Releaser], and forgets it. The scheduler that owns
// p calls it.
func (p *Progress) Release() {
	values, more := p.values, p.more
	p.values, p.more = [2]layerValue{}, nil
	for _, lv := range append(values[:], more...) {
		if r, ok := lv.v.(Releaser); ok {
			r.Release()
		}
	}
}

// NewProgress returns the Progress of a send that started at start and
// whose life ends at deadline (zero: no end but its contexts'), for a
// scheduler that resumes paused sends: its Wait pauses instead of
// sleeping.
func NewProgress(start, deadline time.Time) *Progress {
	return &Progress{Started: start, Deadline: deadline, resumable: true}
}

// Resumable reports whether the send is run by a scheduler that resumes
// it after a pause (see [NewProgress]).
func (p *Progress) Resumable() bool { return p.resumable }

type progressKey struct{}

// WithProgress returns a child of ctx that carries p, for one run of p's
// send.
func WithProgress(ctx context.Context, p *Progress) context.Context {
	// A value context the dispatcher's lazy contexts see through: a send's
	// attempt armed below it leaves its task's context unarmed.
	return lazyctx.WithValue(ctx, progressKey{}, p)
}

// ProgressOf returns the Progress ctx carries, or nil.
func ProgressOf(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}

// SendProgress returns the Progress of ctx's send and a context carrying
// it: ctx and its own Progress, or, if it has none, a child of ctx with a
// new one that started now and sleeps through its waits. A layer that
// reads or records a send's progress starts with it.
func SendProgress(ctx context.Context) (context.Context, *Progress) {
	if p := ProgressOf(ctx); p != nil {
		return ctx, p
	}
	pc := &progressContext{Context: ctx}
	pc.p.Started = time.Now()
	return pc, &pc.p
}

// progressContext is a context carrying its own Progress: one allocation
// for both, where WithProgress would take two.
type progressContext struct {
	context.Context
	p Progress
}

// Value returns the Progress for ProgressOf's key and asks the parent for
// any other.
func (c *progressContext) Value(key any) any {
	if _, ok := key.(progressKey); ok {
		return &c.p
	}
	return c.Context.Value(key)
}

// String names the context for debugging, as the context package's own do.
func (c *progressContext) String() string { return "platform.SendProgress" }

// Wait waits d before the send goes on. For a resumable send it sets
// NotBefore and returns a [*PauseError] for d at once, which the caller
// returns unchanged; otherwise it sleeps d and returns nil. A d of zero or
// less returns nil at once.
//
// Like rate.Limiter.Wait it fails at once, without waiting, with ctx's
// error if ctx has ended, and with [ErrWouldExceedDeadline] if the wait
// cannot end before the send's deadline: Deadline for a resumable send,
// whose later runs have deadlines of their own, ctx's deadline otherwise.
// If ctx ends during a sleep, Wait returns ctx's error.
func (p *Progress) Wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	deadline, ok := ctx.Deadline()
	if p.resumable {
		deadline, ok = p.Deadline, !p.Deadline.IsZero()
	}
	now := time.Now()
	if ok && !now.Add(d).Before(deadline) {
		return ErrWouldExceedDeadline
	}
	if p.resumable {
		p.NotBefore = now.Add(d)
		return &PauseError{Delay: d}
	}
	if !backoff.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// PauseError is what a run of a resumable send returns, through every
// layer, to be run again after Delay (see [Progress.Wait]). It does not
// mean the send failed: it is not over.
type PauseError struct {
	// Delay is how long the scheduler waits before the next run.
	Delay time.Duration
}

// Error returns "platform: send paused for" and the delay.
func (e *PauseError) Error() string { return fmt.Sprintf("platform: send paused for %v", e.Delay) }

// PauseOf reports whether err is, or wraps, a [*PauseError], and its delay.
func PauseOf(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	var pe *PauseError
	if errors.As(err, &pe) {
		return pe.Delay, true
	}
	return 0, false
}
