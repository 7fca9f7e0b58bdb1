package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/core/engine"
)

// The OutboundDispatcher is the engine's face of internal/executor, whose
// own tests check every invariant in depth; these check that the face
// keeps the design's contract: per-chat order, the bound on running
// tasks, refusals with the engine's errors, hooks with DispatchInfo,
// panics as PanicError, SendTimeout as each run's deadline, and every
// accepted task run once, also after ForceClose.
func TestOutboundDispatcherContract(t *testing.T) {
	const chats, perChat, inflight = 20, 50, 4
	var running, peak atomic.Int32
	var mu sync.Mutex
	got := map[string][]int{}
	var done []engine.DispatchInfo
	d := engine.NewOutboundDispatcher(context.Background(), engine.DispatcherConfig{
		MaxInflight: inflight, QueueSize: perChat,
		Hooks: engine.DispatcherHooks{OnDone: func(i engine.DispatchInfo) {
			mu.Lock()
			done = append(done, i)
			mu.Unlock()
		}},
	})
	var wg sync.WaitGroup
	for c := range chats {
		wg.Go(func() {
			chat := fmt.Sprint("t:", c)
			for i := range perChat {
				err := d.Submit(chat, func(ctx context.Context) error {
					n := running.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					mu.Lock()
					got[chat] = append(got[chat], i)
					mu.Unlock()
					running.Add(-1)
					return nil
				})
				if err != nil {
					t.Errorf("Submit: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for c, seq := range got {
		for i, v := range seq {
			if v != i {
				t.Fatalf("chat %s ran %v; want its tasks in order", c, seq)
			}
		}
	}
	if len(got) != chats || len(done) != chats*perChat {
		t.Fatalf("%d chats ran, %d tasks reported done; want %d and %d", len(got), len(done), chats, chats*perChat)
	}
	if p := peak.Load(); p > inflight {
		t.Fatalf("%d tasks ran at once; want at most %d", p, inflight)
	}
	if st := d.Stats(); st.Submitted != chats*perChat || st.Completed != st.Submitted || st.Queued+st.Running+st.Waiting != 0 {
		t.Fatalf("Stats = %+v", st)
	}
	if err := d.Submit("t:1", func(context.Context) error { return nil }); !errors.Is(err, engine.ErrDispatcherClosed) {
		t.Fatalf("Submit after Shutdown: %v; want ErrDispatcherClosed", err)
	}
}

func TestOutboundDispatcherRefusals(t *testing.T) {
	var rejected []error
	d := engine.NewOutboundDispatcher(context.Background(), engine.DispatcherConfig{
		MaxInflight: 1, QueueSize: 1,
		Hooks: engine.DispatcherHooks{OnRejected: func(_ string, err error) { rejected = append(rejected, err) }},
	})
	defer d.ForceClose()
	release := make(chan struct{})
	started := make(chan struct{})
	noop := func(context.Context) error { return nil }
	if err := d.Submit("c", func(context.Context) error { close(started); <-release; return nil }); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := d.Submit("c", noop); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		task func(context.Context) error
		want error
	}{{"c", noop, engine.ErrQueueFull}, {"", noop, engine.ErrEmptyKey}, {"c", nil, engine.ErrNilTask}} {
		if err := d.Submit(tc.key, tc.task); !errors.Is(err, tc.want) {
			t.Errorf("Submit(%q): %v; want %v", tc.key, err, tc.want)
		}
	}
	close(release)
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 3 {
		t.Fatalf("OnRejected got %v; want the three refusals", rejected)
	}
}

func TestOutboundDispatcherPanicsTimeoutsAndForceClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var infos []engine.DispatchInfo
		var recovered []any
		d := engine.NewOutboundDispatcher(context.Background(), engine.DispatcherConfig{
			MaxInflight: 1, SendTimeout: -1, // negative: the default, 30 s
			Recover: func(v any) { recovered = append(recovered, v) },
			Hooks:   engine.DispatcherHooks{OnDone: func(i engine.DispatchInfo) { infos = append(infos, i) }},
		})
		var deadline time.Duration
		start := time.Now()
		_ = d.Submit("c", func(ctx context.Context) error {
			dl, _ := ctx.Deadline()
			deadline = dl.Sub(start)
			panic("boom")
		})
		var after error
		_ = d.Submit("c", func(context.Context) error { after = errors.New("ran"); return nil })
		synctest.Wait()
		if deadline != engine.DefaultSendTimeout {
			t.Errorf("a run's deadline is %v after its start; want %v", deadline, engine.DefaultSendTimeout)
		}
		var pe *engine.PanicError
		if len(infos) != 2 || !errors.As(infos[0].Err, &pe) || pe.Value != "boom" || len(recovered) != 1 || after == nil {
			t.Fatalf("after a panic: infos %+v, recovered %v, next ran: %v", infos, recovered, after)
		}

		block := make(chan struct{})
		var cancelled atomic.Int32
		_ = d.Submit("c", func(ctx context.Context) error {
			select {
			case <-ctx.Done():
			case <-block:
			}
			cancelled.Add(1)
			return ctx.Err()
		})
		_ = d.Submit("c", func(ctx context.Context) error {
			if ctx.Err() != nil {
				cancelled.Add(1)
			}
			return ctx.Err()
		})
		synctest.Wait()
		d.ForceClose()
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if cancelled.Load() != 2 {
			t.Fatalf("%d of the 2 tasks pending at ForceClose ran with a cancelled context", cancelled.Load())
		}
		close(block)
	})
}
