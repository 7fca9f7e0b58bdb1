package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/state"
)

// A run claimed by a process that died is taken over when its claim's
// lease ends, not before.
func TestScheduleTakesOverAnExpiredClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		start := time.Now()
		claimed := schedEntry{Due: start.Add(-time.Minute), Every: time.Hour, Owner: "dead", Until: start.Add(10 * time.Minute)}
		data, _ := json.Marshal(&claimed)
		if _, err := store.Create(context.Background(), "every/tick", data, 0); err != nil {
			t.Fatal(err)
		}
		e, err := New(WithAdapter(memory.New()), WithScheduleStore(store))
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int64
		e.Every("tick", time.Hour, func(context.Context) error { ran.Store(int64(time.Since(start))); return nil })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		time.Sleep(15 * time.Minute)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := time.Duration(ran.Load()); got != 10*time.Minute {
			t.Fatalf("ran at %v; want when the dead claim ended, 10m", got)
		}
		v, _, err := store.Get(context.Background(), "every/tick")
		if err != nil {
			t.Fatal(err)
		}
		var en schedEntry
		if err := json.Unmarshal(v, &en); err != nil {
			t.Fatal(err)
		}
		if en.Owner != "" || !en.Due.Equal(start.Add(59*time.Minute)) {
			t.Fatalf("after the run the entry is %+v; want unclaimed, due at 59m (the beat kept)", en)
		}
	})
}

func TestNextTick(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := time.Hour
	for _, tc := range []struct {
		due, now, want time.Time
	}{
		{t0.Add(h), t0, t0.Add(h)},
		{t0, t0, t0.Add(h)},
		{t0, t0.Add(h / 2), t0.Add(h)},
		{t0, t0.Add(5*h + 1), t0.Add(6 * h)},
		{time.Time{}, t0, t0.Add(h)},
	} {
		if got := nextTick(tc.due, h, tc.now); !got.Equal(tc.want) {
			t.Errorf("nextTick(%v, 1h, %v) = %v; want %v", tc.due, tc.now, got, tc.want)
		}
	}
}
