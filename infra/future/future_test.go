package future_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/internal/leakcheck"

	"github.com/heraldbot/herald/infra/future"
)

// TestMain fails the run if the tests leave goroutines behind.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

func TestResolveFirstWins(t *testing.T) {
	f := future.New[int]()
	if !f.Resolve(1, nil) {
		t.Fatal("first Resolve returned false")
	}
	if f.Resolve(2, errors.New("late")) {
		t.Fatal("second Resolve returned true")
	}
	v, err := f.Result()
	if v != 1 || err != nil {
		t.Fatalf("Result = %d, %v; want 1, nil", v, err)
	}
}

func TestResultBeforeResolve(t *testing.T) {
	f := future.New[string]()
	if f.IsDone() {
		t.Fatal("IsDone before Resolve")
	}
	if _, err := f.Result(); !errors.Is(err, future.ErrNotReady) {
		t.Fatalf("Result err = %v; want ErrNotReady", err)
	}
	select {
	case <-f.Done():
		t.Fatal("Done closed before Resolve")
	default:
	}
	f.Resolve("x", nil)
	if !f.IsDone() {
		t.Fatal("IsDone false after Resolve")
	}
	<-f.Done()
}

func TestResolvedHelper(t *testing.T) {
	want := errors.New("boom")
	f := future.Resolved(7, want)
	v, err := f.Wait(context.Background())
	if v != 7 || !errors.Is(err, want) {
		t.Fatalf("Wait = %d, %v", v, err)
	}
}

func TestWaitContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := future.New[int]()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := f.Wait(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait err = %v; want DeadlineExceeded", err)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("Wait returned after %v; want 1s", got)
		}
	})
}

func TestWaitPrefersResultOverEndedContext(t *testing.T) {
	f := future.Resolved(3, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		v, err := f.Wait(ctx)
		if v != 3 || err != nil {
			t.Fatalf("Wait = %d, %v; want the resolved result", v, err)
		}
	}
}

func TestMustWait(t *testing.T) {
	if got := future.Resolved(5, nil).MustWait(context.Background()); got != 5 {
		t.Fatalf("MustWait = %d", got)
	}
	want := errors.New("bad")
	defer func() {
		r := recover()
		if err, ok := r.(error); !ok || !errors.Is(err, want) {
			t.Fatalf("recovered %v; want %v", r, want)
		}
	}()
	future.Resolved(0, want).MustWait(context.Background())
}

// TestConcurrentWaitersAndResolvers races many waiters against many
// resolvers: exactly one resolver wins and every waiter sees its value.
func TestConcurrentWaitersAndResolvers(t *testing.T) {
	for round := range 50 {
		f := future.New[int]()
		const waiters, resolvers = 64, 16
		var wins atomic.Int32
		var winner atomic.Int64
		got := make([]int, waiters)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range waiters {
			wg.Go(func() {
				<-start
				v, err := f.Wait(context.Background())
				if err != nil {
					t.Errorf("round %d: waiter err %v", round, err)
				}
				got[i] = v
			})
		}
		for i := range resolvers {
			wg.Go(func() {
				<-start
				if f.Resolve(i+1, nil) {
					wins.Add(1)
					winner.Store(int64(i + 1))
				}
			})
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("round %d: %d resolvers won; want 1", round, n)
		}
		for i, v := range got {
			if int64(v) != winner.Load() {
				t.Fatalf("round %d: waiter %d saw %d; winner resolved %d", round, i, v, winner.Load())
			}
		}
	}
}

// TestDoneChannel: the channel of Done, asked for before the resolution,
// is one for every caller and closed by it; asked for after, it is closed
// at once; and the value is there to read once it is.
func TestDoneChannel(t *testing.T) {
	f := future.New[int]()
	early, again := f.Done(), f.Done()
	if early != again {
		t.Fatal("Done before the resolution returned two channels")
	}
	select {
	case <-early:
		t.Fatal("Done closed before the resolution")
	default:
	}
	go f.Resolve(7, nil)
	<-early
	if v, err := f.Result(); v != 7 || err != nil || !f.IsDone() {
		t.Fatalf("after Done closed: %d, %v, done %v; want 7, nil, true", v, err, f.IsDone())
	}
	select {
	case <-f.Done():
	default:
		t.Fatal("Done after the resolution is not closed")
	}
	select {
	case <-future.Resolved(1, nil).Done():
	default:
		t.Fatal("a Resolved Future's Done is not closed")
	}
}

// BenchmarkResolve is a send's Future that nobody waits for: made, then
// resolved (Run: go test -bench=Resolve -benchmem ./infra/future).
func BenchmarkResolve(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		future.New[int]().Resolve(1, nil)
	}
}
