// Package resume lets a task that must wait give its worker back meanwhile.
//
// A scheduler that supports it (the engine's OutboundDispatcher, for tasks
// submitted with SubmitResumable) runs a resumable task with a context that
// carries a [Task]. When code deep inside the task needs to wait — a retry
// backoff, a platform's retry-after — it calls [Later] instead of sleeping.
// If the context carries a Task, Later returns a [*WaitError], which every
// layer passes up unchanged after saving in the Task where it stopped; the
// scheduler frees the worker and runs the task again, from the start, when
// the delay is over. Each layer then reads its saved state back and carries
// on where it stopped. Without a Task, Later returns nil and the caller
// waits in place as usual.
//
// A layer that wraps code which may return a *WaitError, and that does
// something with errors (logging, counting, storing failures), must check
// [DelayOf] first: the task has not finished, and will be run again.
package resume

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Task is the state a resumable task keeps across its runs: a small store
// of values, one per layer that saves where it stopped.
//
// The runs of a task are sequential and the scheduler orders each run after
// the one before it, so a Task needs no locking; it must not be used by
// goroutines that outlive a run.
type Task struct {
	runs     int
	deadline time.Time
	keys     []any
	values   []any
}

// NewTask returns an empty Task, for a scheduler to give to a task's first
// run.
func NewTask() *Task { return &Task{} }

// Runs returns how many runs of the task have started: 1 during the first.
func (t *Task) Runs() int { return t.runs }

// Start records that a run starts. The scheduler calls it before each run.
func (t *Task) Start() { t.runs++ }

// Deadline returns when the task's life ends, waits between runs
// included, and whether it has such a bound. Each run's context has a
// deadline of its own, no later than this one: a layer deciding whether it
// can wait (instead of in place, until its run's deadline) asks Deadline.
func (t *Task) Deadline() (time.Time, bool) { return t.deadline, !t.deadline.IsZero() }

// SetDeadline sets what Deadline returns; the zero time means no bound.
// The scheduler calls it before the first run.
func (t *Task) SetDeadline(d time.Time) { t.deadline = d }

// Value returns the value saved under key, or nil.
func (t *Task) Value(key any) any {
	for i, k := range t.keys {
		if k == key {
			return t.values[i]
		}
	}
	return nil
}

// SetValue saves val under key, replacing any value saved before; a nil val
// removes the key. Keys are compared with ==, as context keys are, so use a
// pointer or a value of an unexported type.
func (t *Task) SetValue(key, val any) {
	for i, k := range t.keys {
		if k == key {
			if val == nil {
				t.keys = append(t.keys[:i], t.keys[i+1:]...)
				t.values = append(t.values[:i], t.values[i+1:]...)
				return
			}
			t.values[i] = val
			return
		}
	}
	if val != nil {
		t.keys = append(t.keys, key)
		t.values = append(t.values, val)
	}
}

type taskKey struct{}

// NewContext returns a child of parent that carries t, for a scheduler to
// run a resumable task with.
func NewContext(parent context.Context, t *Task) context.Context {
	return context.WithValue(parent, taskKey{}, t)
}

// FromContext returns the Task ctx carries, or nil when ctx's task cannot
// be resumed.
func FromContext(ctx context.Context) *Task {
	t, _ := ctx.Value(taskKey{}).(*Task)
	return t
}

// Later asks for the task to be run again after d, without holding a worker
// meanwhile. If ctx carries a [Task] it returns a *WaitError for d: the
// caller saves where it stopped in the Task and returns that error. If not,
// it returns nil, and the caller waits in place. If ctx has ended, waiting
// cannot help: Later returns ctx.Err(), which the caller returns as its
// failure.
func Later(ctx context.Context, d time.Duration) error {
	if FromContext(ctx) == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return &WaitError{Delay: max(d, 0)}
}

// WaitError is the error a resumable task returns, through every layer,
// to be run again after Delay. It does not mean the task failed.
type WaitError struct {
	// Delay is how long the scheduler waits before the next run.
	Delay time.Duration
}

// Error returns "resume: run again after" and the delay.
func (e *WaitError) Error() string { return fmt.Sprintf("resume: run again after %v", e.Delay) }

// DelayOf reports whether err is, or wraps, a *WaitError, and its delay.
func DelayOf(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	var we *WaitError
	if errors.As(err, &we) {
		return we.Delay, true
	}
	return 0, false
}
