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
