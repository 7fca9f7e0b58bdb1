package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/platform"
)

// later is what a layer's Progress.Wait returns for a resumable send: the
// context's error once it has ended, a pause for d otherwise.
func later(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return &platform.PauseError{Delay: d}
}

// counted gives a task its run number, 1 for the first.
func counted(f func(ctx context.Context, run int) error) func(context.Context) error {
	runs := 0
	return func(ctx context.Context) error {
		runs++
		return f(ctx, runs)
	}
}

// waitOnce returns a task that pauses for d on its first run and finishes
// on its second, reporting both runs to log.
func waitOnce(log func(string), name string, d time.Duration) func(context.Context) error {
	return counted(func(ctx context.Context, run int) error {
		log(fmt.Sprintf("%s run %d", name, run))
		if run == 1 {
			return later(ctx, d)
		}
		return nil
	})
}

type eventLog struct {
	mu     sync.Mutex
	events []string
	at     []time.Duration
	start  time.Time
}

func newEventLog() *eventLog { return &eventLog{start: time.Now()} }

func (l *eventLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, s)
	l.at = append(l.at, time.Since(l.start))
}

func (l *eventLog) snapshot() ([]string, []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events), slices.Clone(l.at)
}

// A task waiting between runs holds no worker: with one worker, another
// chat's task runs meanwhile; the waiting chat's later task stays behind it;
// the second run comes after exactly the delay; hooks see one task.
func TestResumableFreesWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu      sync.Mutex
			starts  int
			done    []Info
			hookErr error
		)
		d := New(context.Background(), Config{MaxInflight: 1, Hooks: Hooks{
			OnStart: func(chat string) {
				mu.Lock()
				defer mu.Unlock()
				if chat == "a" {
					starts++
				}
			},
			OnDone: func(info Info) {
				mu.Lock()
				defer mu.Unlock()
				if info.ChatID == "a" {
					done = append(done, info)
					hookErr = errors.Join(hookErr, info.Err)
				}
			},
		}})
		log := newEventLog()
		if err := d.Submit("a", waitOnce(log.add, "a1", 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		mustSubmit(t, d, "a", func(context.Context) error { log.add("a2"); return nil })
		mustSubmit(t, d, "b", func(context.Context) error { log.add("b"); return nil })
		synctest.Wait()
		if st := d.Stats(); st.Waiting != 1 || st.Running != 0 || st.Queued != 1 || st.Chats != 1 {
			t.Fatalf("while a1 waits: %+v; want Waiting 1, Running 0, Queued 1, Chats 1", st)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		events, at := log.snapshot()
		want := []string{"a1 run 1", "b", "a1 run 2", "a2"}
		if !slices.Equal(events, want) {
			t.Fatalf("ran %q; want %q", events, want)
		}
		if at[1] != 0 || at[2] != 10*time.Second {
			t.Fatalf("b ran at %v and a1 again at %v; want 0 and 10s", at[1], at[2])
		}
		mu.Lock()
		defer mu.Unlock()
		if starts != 2 || len(done) != 2 || hookErr != nil {
			t.Fatalf("chat a: %d OnStart, %d OnDone, errors %v; want 2, 2, none (one per task)", starts, len(done), hookErr)
		}
		if done[0].RunLatency != 10*time.Second {
			t.Fatalf("a1's RunLatency = %v; want 10s, both runs and the wait", done[0].RunLatency)
		}
		if st := d.Stats(); st.Submitted != 3 || st.Completed != 3 || st.Failed != 0 || st.Waiting != 0 {
			t.Fatalf("after Shutdown: %+v", st)
		}
	})
}

// Each run of a resumable task has RunTimeout of its own, and all of them
// MaxLifetime from Submit: a wait past it is cut to it, and the next run
// sees its context expired. A retry-after longer than RunTimeout is
// waited out.
func TestResumableLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{RunTimeout: 5 * time.Second, MaxLifetime: time.Minute})
		start := time.Now()
		type run struct {
			at       time.Duration
			deadline time.Duration
			err      error
		}
		var runs []run
		err := d.Submit("c", func(ctx context.Context) error {
			dl, _ := ctx.Deadline()
			runs = append(runs, run{time.Since(start), dl.Sub(start), ctx.Err()})
			if err := ctx.Err(); err != nil {
				return err
			}
			switch len(runs) {
			case 1:
				time.Sleep(time.Second)
				return later(ctx, 40*time.Second) // longer than RunTimeout
			case 2:
				return later(ctx, time.Hour) // longer than what is left
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := []run{
			{0, 5 * time.Second, nil},
			{41 * time.Second, 46 * time.Second, nil},
			{time.Minute, time.Minute, context.DeadlineExceeded},
		}
		if !slices.Equal(runs, want) {
			t.Fatalf("runs %+v; want %+v", runs, want)
		}
	})
}

// A task queued past its MaxLifetime runs once, with an expired context.
func TestLifetimeCountsQueueTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{MaxLifetime: 10 * time.Second})
		release := make(chan struct{})
		if err := d.Submit("c", func(context.Context) error { <-release; return nil }); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		if err := d.Submit("c", func(ctx context.Context) error { got <- ctx.Err(); return nil }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(11 * time.Second)
		close(release)
		if err := <-got; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a task queued past its lifetime ran with %v; want DeadlineExceeded", err)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// ForceClose, or the end of the dispatcher's context, ends a wait at once:
// the task runs again with its context cancelled and can report it.
func TestResumableWaitEndsWithContext(t *testing.T) {
	for _, how := range []string{"ForceClose", "parent"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				parent, cancel := context.WithCancel(context.Background())
				defer cancel()
				d := New(parent, Config{RunTimeout: 2 * time.Hour})
				start := time.Now()
				result := make(chan error, 1)
				err := d.Submit("c", counted(func(ctx context.Context, run int) error {
					if run == 1 {
						return later(ctx, time.Hour)
					}
					result <- ctx.Err()
					return ctx.Err()
				}))
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				time.Sleep(time.Minute)
				if how == "ForceClose" {
					d.ForceClose()
				} else {
					cancel()
				}
				if err := <-result; !errors.Is(err, context.Canceled) {
					t.Fatalf("second run's context: %v; want Canceled", err)
				}
				if took := time.Since(start); took != time.Minute {
					t.Fatalf("second run after %v; want 1m, when the wait was ended", took)
				}
				if err := d.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// Shutdown waits for a task waiting between runs, and Drain does not see
// the dispatcher idle while one waits.
func TestResumableDrainWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{})
		log := newEventLog()
		if err := d.Submit("c", waitOnce(log.add, "t", 3*time.Second)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := d.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Drain during the wait = %v; want DeadlineExceeded", err)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if events, at := log.snapshot(); len(events) != 2 || at[1] != 3*time.Second {
			t.Fatalf("runs %q at %v; want two, the second at 3s", events, at)
		}
	})
}

// Waiting chats hold timers, not goroutines.
func TestResumableWaitsHoldNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const max, chats = 4, 2000
		before := runtime.NumGoroutine()
		d := New(context.Background(), Config{MaxInflight: max})
		var mu sync.Mutex
		finished := 0
		for c := range chats {
			err := d.Submit(fmt.Sprint(c), counted(func(ctx context.Context, run int) error {
				if run == 1 {
					return later(ctx, time.Second)
				}
				mu.Lock()
				finished++
				mu.Unlock()
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if st := d.Stats(); st.Waiting != chats {
			t.Fatalf("Stats %+v; want %d waiting", st, chats)
		}
		// NumGoroutine counts the whole process, where other tests'
		// goroutines may still be ending: allow the bound the dispatcher
		// promises for waiting chats, MaxInflight plus a constant — far
		// from one per chat.
		if n := runtime.NumGoroutine() - before; n > max+2 {
			t.Fatalf("%d goroutines while %d chats wait; want at most %d", n, chats, max+2)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if finished != chats {
			t.Fatalf("%d of %d tasks finished", finished, chats)
		}
	})
}

// A run that panics or fails after a pause finishes the task, as a first
// run's would.
func TestPausedTaskThatFailsFinishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var errs []error
		d := New(context.Background(), Config{Hooks: Hooks{
			OnDone: func(info Info) {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, info.Err)
			},
		}})
		boom := errors.New("boom")
		mustSubmit(t, d, "fails", counted(func(ctx context.Context, run int) error {
			if run == 1 {
				return later(ctx, time.Second)
			}
			return boom
		}))
		mustSubmit(t, d, "panics", counted(func(ctx context.Context, run int) error {
			if run == 1 {
				return later(ctx, time.Second)
			}
			panic("second run")
		}))
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := d.Stats()
		if st.Completed != 2 || st.Failed != 2 || st.Panicked != 1 || st.Waiting != 0 {
			t.Fatalf("Stats %+v; want 2 completed, 2 failed, 1 panicked", st)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(errs) != 2 {
			t.Fatalf("OnDone called %d times; want 2", len(errs))
		}
	})
}

// Order holds with waits of random lengths in many chats: each chat's tasks
// finish in submission order, and every task finishes once.
func TestResumablePerChatFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const chats, perChat = 50, 20
		d := New(context.Background(), Config{MaxInflight: 3, QueueSize: perChat})
		var mu sync.Mutex
		got := make(map[int][]int)
		for i := range perChat {
			for c := range chats {
				wait := time.Duration((c*7+i*13)%5) * time.Second
				err := d.Submit(fmt.Sprint(c), counted(func(ctx context.Context, run int) error {
					if r := run; r <= i%3 {
						return later(ctx, wait)
					}
					mu.Lock()
					got[c] = append(got[c], i)
					mu.Unlock()
					return nil
				}))
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := make([]int, perChat)
		for i := range want {
			want[i] = i
		}
		for c := range chats {
			if !slices.Equal(got[c], want) {
				t.Fatalf("chat %d finished %v; want %v", c, got[c], want)
			}
		}
	})
}

// A task that asks to wait after its context ended is run once more at
// once, then finished with the context's error: it cannot spin.
func TestResumableWaitAfterContextEndedFinishes(t *testing.T) {
	for _, name := range []string{"Later", "WaitError"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var errs []error
				d := New(context.Background(), Config{
					RunTimeout:  100 * time.Millisecond,
					MaxLifetime: 100 * time.Millisecond,
					Hooks:       Hooks{OnDone: func(info Info) { errs = append(errs, info.Err) }},
				})
				runs := 0
				err := d.Submit("c", counted(func(ctx context.Context, run int) error {
					runs++
					if name == "Later" {
						return later(ctx, 50*time.Millisecond)
					}
					return &platform.PauseError{Delay: 50 * time.Millisecond} // ignores ctx
				}))
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				// Runs at 0 and 50 ms ask to wait; the wait is cut to the
				// 100 ms deadline. Later then reports the context's end;
				// a task that still asks to wait gets one more run, at
				// once, and is finished.
				wantRuns := map[string]int{"Later": 3, "WaitError": 4}[name]
				if runs != wantRuns || len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
					t.Fatalf("%d runs, OnDone errors %v; want %d runs and DeadlineExceeded", runs, errs, wantRuns)
				}
			})
		})
	}
}

// Sleeping chats wake at their own times, whatever order they went to
// sleep in, and many waking at once all run.
func TestResumableWakeTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const each = 500
		d := New(context.Background(), Config{MaxInflight: 4})
		start := time.Now()
		var mu sync.Mutex
		woke := map[time.Duration]int{}
		delays := []time.Duration{10 * time.Second, time.Second, 5 * time.Second, time.Second}
		for i := range each * len(delays) {
			delay := delays[i%len(delays)]
			err := d.Submit(fmt.Sprint(i), counted(func(ctx context.Context, run int) error {
				if run == 1 {
					return later(ctx, delay)
				}
				mu.Lock()
				woke[time.Since(start)]++
				mu.Unlock()
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := map[time.Duration]int{time.Second: 2 * each, 5 * time.Second: each, 10 * time.Second: each}
		if fmt.Sprint(woke) != fmt.Sprint(want) {
			t.Fatalf("second runs at %v; want %v", woke, want)
		}
	})
}

func TestSleepHeap(t *testing.T) {
	var h sleepHeap
	base := time.Now()
	order := []int{5, 3, 9, 1, 1, 7, 0, 8, 2, 6, 4}
	for _, n := range order {
		h.push(sleeper{at: base.Add(time.Duration(n))})
	}
	var got []time.Duration
	for len(h) > 0 {
		got = append(got, h.pop().at.Sub(base))
	}
	if !slices.IsSorted(got) || len(got) != len(order) {
		t.Fatalf("popped %v; want %d values in order", got, len(order))
	}
	if h != nil {
		t.Fatal("empty heap keeps its array")
	}
}
