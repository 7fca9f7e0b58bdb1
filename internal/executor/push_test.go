package executor

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Push queues past QueueSize and keeps the order of everything queued;
// Submit still refuses while the chat holds QueueSize or more.
func TestPushIgnoresTheQueueBound(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 1, QueueSize: 2})
	release, started := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	var order []int
	task := func(i int) func(context.Context) error {
		return func(context.Context) error {
			if i == 0 {
				close(started)
				<-release
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			return nil
		}
	}
	mustSubmit(t, d, "c", task(0)) // running, holding the only worker
	<-started
	for i := 1; i <= 5; i++ {
		if err := d.Push("c", task(i)); err != nil {
			t.Fatalf("Push %d: %v", i, err)
		}
	}
	if err := d.Submit("c", task(99)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Submit to a chat Push filled: %v; want ErrQueueFull", err)
	}
	if st := d.Stats(); st.Queued != 5 {
		t.Fatalf("Queued = %d; want 5", st.Queued)
	}
	once.Do(func() { close(release) })
	drain(t, d)
	for i, got := range order {
		if got != i {
			t.Fatalf("order = %v; want 0..5", order)
		}
	}
	if len(order) != 6 {
		t.Fatalf("ran %v; want 0..5", order)
	}
	d.Close()
	if err := d.Push("c", task(7)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Push after Close: %v; want ErrClosed", err)
	}
	if err := d.Push("", task(7)); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("Push with no key: %v; want ErrEmptyKey", err)
	}
}
