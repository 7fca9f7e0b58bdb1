package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/platform"
)

var errClosed = errors.New("closed")

// pool runs each task it is given on a goroutine of its own, as the
// engine's handler pool would, until closed.
type pool struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	closed bool
}

func (p *pool) submit(_ string, task func(context.Context) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	p.wg.Go(func() { _ = task(context.Background()) })
	return nil
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}

// newScheduler returns a started Scheduler on store, whose delayed sends
// go to sent; it stops with the test.
func newScheduler(t *testing.T, store state.Store, sent func(platform.SendRequest, string) error) *Scheduler {
	t.Helper()
	p := &pool{}
	if sent == nil {
		sent = func(platform.SendRequest, string) error { return nil }
	}
	s := New(Config{Store: store, Poll: 5 * time.Second, Lease: 2 * time.Minute, RunTimeout: time.Minute,
		Submit: p.submit, Closed: errClosed, Send: sent, Logger: zap.NewNop(), Limited: ratelog.New(zap.NewNop(), 0)})
	s.Start()
	t.Cleanup(func() { s.Stop(); p.close() })
	return s
}

// A run claimed by a process that died is taken over when its claim's
// lease ends, not before.
func TestTakesOverAnExpiredClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		start := time.Now()
		claimed := schedEntry{Due: start.Add(-time.Minute), Every: time.Hour, Owner: "dead", Until: start.Add(10 * time.Minute)}
		data, _ := json.Marshal(&claimed)
		if _, err := store.Create(context.Background(), "every/tick", data, 0); err != nil {
			t.Fatal(err)
		}
		s := newScheduler(t, store, nil)
		var ran atomic.Int64
		if _, err := s.Every("tick", time.Hour, func(context.Context) error { ran.Store(int64(time.Since(start))); return nil }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Minute)
		synctest.Wait()
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

// A delayed send is made once when due, under its key, and leaves the
// store.
func TestDelayedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		var mu sync.Mutex
		var ids []string
		s := newScheduler(t, store, func(r platform.SendRequest, id string) error {
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, id+"="+r.Message.Text)
			return nil
		})
		ctx := context.Background()
		req := platform.SendRequest{Platform: "p", Target: platform.Chat{ID: "c"}, Message: platform.TextMessage("tea")}
		id, err := s.SendAt(ctx, time.Now().Add(time.Minute), req, "r-1")
		if err != nil || id != "r-1" {
			t.Fatalf("SendAt = %q, %v", id, err)
		}
		if again, err := s.SendAt(ctx, time.Now().Add(time.Hour), req, "r-1"); err != nil || again != "r-1" {
			t.Fatalf("SendAt of a waiting id = %q, %v; want it kept", again, err)
		}
		if sends, err := s.Sends(ctx); err != nil || len(sends) != 1 {
			t.Fatalf("Sends = %v, %v", sends, err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(ids) != 1 || ids[0] != "send/r-1=tea" {
			t.Fatalf("sent %q; want the one send", ids)
		}
		if n := store.Len(); n != 0 {
			t.Fatalf("%d entries left in the store", n)
		}
		if err := s.Cancel(ctx, "r-1"); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("Cancel of a send made: %v; want ErrNotFound", err)
		}
	})
}

func TestInvalidJobs(t *testing.T) {
	s := New(Config{Store: state.NewMemoryStore()})
	run := func(context.Context) error { return nil }
	_, e1 := s.Every("x", 0, run)
	_, e2 := s.Every("", time.Second, run)
	_, e3 := s.At("y", time.Now(), nil)
	for _, err := range []error{e1, e2, e3} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("got %v; want ErrInvalid", err)
		}
	}
	if _, err := s.Every("x", time.Second, run); err != nil {
		t.Fatal(err)
	}
	if _, err := s.At("x", time.Now(), run); !errors.Is(err, ErrInvalid) {
		t.Errorf("a second job named x: %v; want ErrInvalid", err)
	}
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

// A stopped job runs no more, here or in another process sharing the
// store, also one that registers it after the stop.
func TestStopJobInEveryProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		var runs atomic.Int32
		run := func(context.Context) error { runs.Add(1); return nil }
		a, b := newScheduler(t, store, nil), newScheduler(t, store, nil)
		key, err := a.Every("tick", time.Minute, run)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Every("tick", time.Minute, run); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		if n := runs.Load(); n != 3 {
			t.Fatalf("%d runs in three minutes over two processes; want one a minute", n)
		}
		if err := a.StopJob(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		c := newScheduler(t, store, nil) // a process started after the stop
		if _, err := c.Every("tick", time.Minute, run); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := runs.Load(); n != 3 {
			t.Fatalf("%d runs; want none after the stop", n)
		}
	})
}
