package lazyctx

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// The lazy task context must honour the whole context.Context contract,
// armed (after Done) or not.

// newTaskContext returns a context under parent with deadline d, made
// as the executor makes its tasks' contexts.
func newTaskContext(parent context.Context, d time.Time) *Context {
	b := NewClock(parent, time.Now())
	return b.New(b.Offset(d))
}

func TestTaskContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		c := newTaskContext(context.Background(), now.Add(5*time.Second))
		if dl, ok := c.Deadline(); !ok || !dl.Equal(now.Add(5*time.Second)) {
			t.Fatalf("Deadline = %v, %v", dl, ok)
		}
		parent, cancel := context.WithDeadline(context.Background(), now.Add(time.Second))
		defer cancel()
		if dl, _ := newTaskContext(parent, now.Add(5*time.Second)).Deadline(); !dl.Equal(now.Add(time.Second)) {
			t.Fatalf("Deadline with an earlier parent deadline = %v", dl)
		}
	})
}

func TestTaskContextExpiresUnarmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTaskContext(context.Background(), time.Now().Add(time.Second))
		if c.Err() != nil {
			t.Fatal("Err before the deadline")
		}
		time.Sleep(time.Second)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline = %v", c.Err())
		}
		select {
		case <-c.Done():
		default:
			t.Fatal("Done open after Err returned an error")
		}
		c.Release()
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("release changed Err to %v", c.Err())
		}
	})
}

func TestTaskContextExpiresArmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := newTaskContext(context.Background(), start.Add(3*time.Second))
		<-c.Done()
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("Done closed after %v; want 3s", got)
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(c), context.DeadlineExceeded) {
			t.Fatalf("Err = %v, Cause = %v", c.Err(), context.Cause(c))
		}
	})
}

func TestTaskContextParentCancel(t *testing.T) {
	for _, armed := range []bool{false, true} {
		parent, cancel := context.WithCancelCause(context.Background())
		c := newTaskContext(parent, time.Now().Add(time.Hour))
		if armed {
			_ = c.Done()
		}
		cause := errors.New("force close")
		cancel(cause)
		<-c.Done()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("armed=%v: Err = %v", armed, c.Err())
		}
		if got := context.Cause(c); !errors.Is(got, cause) {
			t.Fatalf("armed=%v: Cause = %v", armed, got)
		}
	}
}

func TestTaskContextRelease(t *testing.T) {
	for _, armed := range []bool{false, true} {
		c := newTaskContext(context.Background(), time.Now().Add(time.Hour))
		if armed {
			_ = c.Done()
		}
		c.Release()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("armed=%v: Err after release = %v", armed, c.Err())
		}
		<-c.Done()
	}
}

func TestTaskContextValueAndChildren(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	c := newTaskContext(parent, time.Now().Add(time.Hour))
	if c.Value(key{}) != "v" {
		t.Fatal("Value not delegated before arming")
	}
	child, cancel := context.WithCancel(c)
	defer cancel()
	if child.Value(key{}) != "v" {
		t.Fatal("Value not delegated after arming")
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(c, func() { close(fired) })
	defer stop()
	c.Release()
	<-child.Done()
	<-fired
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("child Err = %v", child.Err())
	}
}

func TestTaskContextConcurrentUse(t *testing.T) {
	for range 100 {
		c := newTaskContext(context.Background(), time.Now().Add(time.Hour))
		done := make(chan struct{})
		for range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				<-c.Done()
				if c.Err() == nil {
					t.Error("Err nil after Done closed")
				}
			}()
		}
		go c.Release()
		for range 4 {
			<-done
		}
	}
}

// Cause agrees with Err for a context found expired before it was armed,
// even when the parent is cancelled with a cause afterwards.
func TestTaskContextCauseAfterUnarmedExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancelCause(context.Background())
		c := newTaskContext(parent, time.Now().Add(time.Second))
		time.Sleep(2 * time.Second)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v", c.Err())
		}
		cancel(errors.New("later"))
		if got := context.Cause(c); !errors.Is(got, context.DeadlineExceeded) {
			t.Fatalf("Cause = %v; want DeadlineExceeded", got)
		}
		c.Release()
	})
}

// WithDeadline is context.WithDeadline: its deadline, or the parent's
// when earlier; expiry; Release.
func TestWithDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		c := WithDeadline(context.Background(), now, now.Add(2*time.Second))
		if dl, ok := c.Deadline(); !ok || !dl.Equal(now.Add(2*time.Second)) {
			t.Fatalf("Deadline = %v, %v", dl, ok)
		}
		parent, cancel := context.WithDeadline(context.Background(), now.Add(time.Second))
		defer cancel()
		early := WithDeadline(parent, now, now.Add(2*time.Second))
		if dl, _ := early.Deadline(); !dl.Equal(now.Add(time.Second)) {
			t.Fatalf("Deadline under an earlier parent = %v", dl)
		}
		<-early.Done()
		if got := time.Since(now); got != time.Second || !errors.Is(early.Err(), context.DeadlineExceeded) {
			t.Fatalf("ended after %v with %v; want 1s, DeadlineExceeded", got, early.Err())
		}
		time.Sleep(time.Second)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline, unarmed = %v", c.Err())
		}
		c.Release()
		r := WithDeadline(context.Background(), time.Now(), time.Now().Add(time.Hour))
		r.Release()
		<-r.Done()
		if !errors.Is(r.Err(), context.Canceled) {
			t.Fatalf("Err after Release = %v", r.Err())
		}
	})
}

// A lazy context costs one allocation until it is asked for Done.
func TestWithDeadlineAllocs(t *testing.T) {
	parent := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		now := time.Now()
		c := WithDeadline(parent, now, now.Add(time.Minute))
		_ = c.Err()
		c.Release()
	})
	if allocs != 1 {
		t.Fatalf("%v allocations; want 1", allocs)
	}
}

// attemptUnder returns a send's attempt context as the sender Timeout
// makes it, under a Progress value (WithValue) under task.
func attemptUnder(task context.Context, key, val any, d time.Duration) *Context {
	now := time.Now()
	return WithDeadline(WithValue(task, key, val), now, now.Add(d))
}

// An attempt under a task's context, through WithValue, arms beside it:
// the task stays unarmed, and the attempt still ends when it is released,
// when the root ends (with its cause) or at the earlier deadline, and
// sees every value on the way.
func TestArmedBeside(t *testing.T) {
	type rootKey struct{}
	type valKey struct{}
	t.Run("released", func(t *testing.T) {
		root, cancel := context.WithCancel(context.WithValue(context.Background(), rootKey{}, "root"))
		defer cancel()
		task := newTaskContext(root, time.Now().Add(time.Hour))
		a := attemptUnder(task, valKey{}, "progress", time.Minute)
		done := a.Done()
		if task.state.Load() != nil {
			t.Fatal("arming the attempt armed the task's context")
		}
		if a.Value(valKey{}) != "progress" || a.Value(rootKey{}) != "root" {
			t.Fatalf("values %v, %v", a.Value(valKey{}), a.Value(rootKey{}))
		}
		fired := make(chan struct{})
		defer context.AfterFunc(a, func() { close(fired) })()
		child, stop := context.WithCancel(a)
		defer stop()
		select {
		case <-done:
			t.Fatal("attempt ended before its task")
		default:
		}
		task.Release()
		<-done
		<-fired
		<-child.Done()
		if !errors.Is(a.Err(), context.Canceled) || !errors.Is(context.Cause(a), context.Canceled) {
			t.Fatalf("Err = %v, Cause = %v", a.Err(), context.Cause(a))
		}
		a.Release()
	})
	t.Run("root", func(t *testing.T) {
		root, cancel := context.WithCancelCause(context.Background())
		task := newTaskContext(root, time.Now().Add(time.Hour))
		a := attemptUnder(task, valKey{}, 1, time.Minute)
		_ = a.Done()
		cause := errors.New("force close")
		cancel(cause)
		<-a.Done()
		if !errors.Is(a.Err(), context.Canceled) || !errors.Is(context.Cause(a), cause) {
			t.Fatalf("Err = %v, Cause = %v", a.Err(), context.Cause(a))
		}
		a.Release()
		task.Release()
	})
	// The earlier deadline ends the attempt, its task's or its own; the
	// task lives on when it is the attempt's.
	for _, dl := range []struct {
		name          string
		task, attempt time.Duration
	}{{"task deadline", time.Second, time.Hour}, {"own deadline", time.Hour, time.Second}} {
		t.Run(dl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				task := newTaskContext(context.Background(), start.Add(dl.task))
				a := attemptUnder(task, valKey{}, 1, dl.attempt)
				if d, _ := a.Deadline(); !d.Equal(start.Add(time.Second)) {
					t.Fatalf("Deadline = %v", d)
				}
				<-a.Done()
				if got := time.Since(start); got != time.Second || !errors.Is(a.Err(), context.DeadlineExceeded) {
					t.Fatalf("ended after %v with %v; want 1s, DeadlineExceeded", got, a.Err())
				}
				if dl.task > time.Second && task.Err() != nil {
					t.Fatalf("task ended with its attempt: %v", task.Err())
				}
				a.Release()
				task.Release()
			})
		})
	}
	t.Run("task ended first", func(t *testing.T) {
		task := newTaskContext(context.Background(), time.Now().Add(time.Hour))
		task.Release()
		a := attemptUnder(task, valKey{}, 1, time.Minute)
		<-a.Done()
		if !errors.Is(a.Err(), context.Canceled) {
			t.Fatalf("Err = %v", a.Err())
		}
	})
	t.Run("nested", func(t *testing.T) {
		task := newTaskContext(context.Background(), time.Now().Add(time.Hour))
		outer := attemptUnder(task, valKey{}, 1, time.Minute)
		inner := attemptUnder(outer, rootKey{}, 2, time.Minute)
		_ = inner.Done()
		if task.state.Load() != nil || outer.state.Load() != nil {
			t.Fatal("arming the inner attempt armed a context above it")
		}
		if inner.Value(valKey{}) != 1 || inner.Value(rootKey{}) != 2 {
			t.Fatal("values not seen through")
		}
		outer.Release()
		<-inner.Done()
		inner.Release()
		task.Release()
	})
}

// However an attempt's arming and its task's Release interleave, the
// attempt ends.
func TestArmedBesideRacesRelease(t *testing.T) {
	type key struct{}
	for range 1000 {
		task := newTaskContext(context.Background(), time.Now().Add(time.Hour))
		a := attemptUnder(task, key{}, 1, time.Hour)
		go task.Release()
		<-a.Done()
		a.Release()
	}
}

// BenchmarkArmAttempt arms and releases a send's attempt and its task's
// context, the attempt under a value of WithValue (beside: the task stays
// unarmed) or of context.WithValue (under: arming the attempt arms the
// task).
func BenchmarkArmAttempt(b *testing.B) {
	type key struct{}
	root, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, bc := range []struct {
		name string
		with func(context.Context, any, any) context.Context
	}{{"beside", WithValue}, {"under", context.WithValue}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			clock := NewClock(root, time.Now())
			for b.Loop() {
				task := clock.New(clock.Now() + int64(time.Hour))
				now := time.Now()
				a := WithDeadline(bc.with(task, key{}, 1), now, now.Add(time.Minute))
				_ = a.Done()
				a.Release()
				task.Release()
			}
		})
	}
}
