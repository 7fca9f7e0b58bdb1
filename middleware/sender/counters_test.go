package sender_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// chatReplies answers by chat ID: "ok" succeeds, "flaky2" fails twice and
// then succeeds, "blocked" fails permanently, "down" always fails.
func chatReplies() func(context.Context, int, platform.SendRequest) error {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(_ context.Context, _ int, rq platform.SendRequest) error {
		mu.Lock()
		seen[rq.Target.ID]++
		n := seen[rq.Target.ID]
		mu.Unlock()
		switch rq.Target.ID {
		case "flaky2":
			if n <= 2 {
				return errFlaky
			}
		case "blocked":
			return platform.Permanent(errors.New("blocked"))
		case "down":
			return errFlaky
		}
		return nil
	}
}

func TestCountersInDefault(t *testing.T) {
	for _, withStore := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			c := new(sender.Counters) // the zero value is ready
			cfg := sender.DefaultConfig{Counters: c, Retry: noJitter(3, 10*time.Millisecond, time.Second)}
			if withStore {
				cfg.DeadLetters = sender.NewDeadLetterStore(0)
			}
			s := sender.Default(cfg)(&recorder{reply: chatReplies()})
			for _, chat := range []string{"ok", "flaky2", "blocked", "down"} {
				_, _ = s.Send(context.Background(), req(chat))
			}
			want := sender.SendStats{Delivered: 2, Failed: 2, Attempts: 1 + 3 + 1 + 3, Retries: 0 + 2 + 0 + 2}
			if withStore {
				want.DeadLettered = 2
			}
			if got := c.Snapshot(); got != want {
				t.Fatalf("with store %v: Snapshot = %+v; want %+v", withStore, got, want)
			}
		})
	}
}

func TestCountersConcurrent(t *testing.T) {
	var c sender.Counters
	store := sender.NewDeadLetterStore(0)
	s := sender.Chain(sender.Count(&c), sender.DeadLetters(store))(&recorder{reply: func(_ context.Context, n int, _ platform.SendRequest) error {
		if n%3 == 0 {
			return errFlaky
		}
		return nil
	}})
	const goroutines, each = 8, 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var snapshots sync.WaitGroup
	snapshots.Go(func() { // snapshots taken during sends keep the invariant
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s := c.Snapshot(); s.DeadLettered > s.Failed {
				t.Errorf("Snapshot %+v: more dead letters than failures", s)
				return
			}
		}
	})
	for range goroutines {
		wg.Go(func() {
			for range each {
				_, _ = s.Send(context.Background(), req("1"))
			}
		})
	}
	wg.Wait()
	close(stop)
	snapshots.Wait()
	got := c.Snapshot()
	total := uint64(goroutines * each)
	if got.Attempts != total || got.Retries != 0 || got.Delivered+got.Failed != total || got.Failed != got.DeadLettered ||
		got.DeadLettered != total/3 || uint64(store.Len()) != got.DeadLettered {
		t.Fatalf("Snapshot = %+v (store %d); want %d sends, a third dead-lettered", got, store.Len(), total)
	}
}

func TestCountersNil(t *testing.T) {
	var c *sender.Counters
	r := &recorder{}
	if got := sender.Count(c)(r); got != platform.Sender(r) {
		t.Fatalf("nil Counters' decorator = %T; want the sender unchanged", got)
	}
}
