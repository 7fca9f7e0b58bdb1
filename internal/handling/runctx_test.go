package handling

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A RunContext arms nothing until asked for Done, yet reports its end by
// the clock; armed, it ends at its deadline, with its parent, or with End,
// and runs its AfterFuncs once.
func TestRunContext(t *testing.T) {
	t.Run("unarmed ends by the clock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := NewRunContext(context.Background(), time.Second)
			if _, ok := c.Deadline(); ok {
				t.Fatal("a RunContext reports a deadline")
			}
			time.Sleep(999 * time.Millisecond)
			if err := c.Err(); err != nil {
				t.Fatalf("Err before the deadline = %v", err)
			}
			time.Sleep(time.Millisecond)
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err at the deadline = %v; want DeadlineExceeded", err)
			}
			<-c.Done() // closed at once once ended
		})
	})
	t.Run("armed ends at its deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := NewRunContext(context.Background(), time.Second)
			start := time.Now()
			ran := make(chan time.Duration, 1)
			c.AfterFunc(func() { ran <- time.Since(start) })
			<-c.Done()
			if d := <-ran; d != time.Second {
				t.Fatalf("AfterFunc ran after %v; want 1s", d)
			}
			if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Err = %v", err)
			}
		})
	})
	t.Run("the parent's end", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.Background())
			c := NewRunContext(parent, time.Hour)
			child, stop := context.WithCancel(c) // derives through AfterFunc: no goroutine
			defer stop()
			boom := errors.New("forced")
			cancel(boom)
			<-child.Done()
			if err := c.Err(); !errors.Is(err, boom) {
				t.Fatalf("Err = %v; want the parent's cause", err)
			}
		})
	})
	t.Run("End", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := NewRunContext(context.Background(), time.Hour)
			ran := 0
			stopped := c.AfterFunc(func() { ran++ })
			removed := c.AfterFunc(func() { t.Error("a stopped AfterFunc ran") })
			if !removed() {
				t.Fatal("stop of a pending AfterFunc = false")
			}
			c.End(ErrWaiting)
			c.End(nil) // the first end stands
			synctest.Wait()
			if ran != 1 {
				t.Fatalf("AfterFunc ran %d times; want 1", ran)
			}
			if stopped() {
				t.Fatal("stop after the run = true")
			}
			if err := c.Err(); !errors.Is(err, ErrWaiting) {
				t.Fatalf("Err = %v; want the first End's", err)
			}
			late := make(chan struct{})
			c.AfterFunc(func() { close(late) }) // on an ended context: runs at once
			<-late
		})
	})
}
