package executor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// newTestDispatcher returns a dispatcher that is shut down when the test
// ends; the test fails if the shutdown does not finish.
func newTestDispatcher(t *testing.T, cfg Config) *Executor {
	t.Helper()
	d := New(context.Background(), cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
			d.ForceClose()
		}
	})
	return d
}

func mustSubmit(t *testing.T, d *Executor, chat string, task func(context.Context) error) {
	t.Helper()
	if err := d.Submit(chat, task); err != nil {
		t.Fatalf("Submit(%q): %v", chat, err)
	}
}

func drain(t *testing.T, d *Executor) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	if d := newTestDispatcher(t, Config{RunTimeout: -time.Second, MaxLifetime: -1}); d.cfg.runTimeout != noRunTimeout || d.cfg.maxLifetime != 0 {
		t.Fatalf("negative RunTimeout and MaxLifetime normalised to %v and %v; want none", d.cfg.runTimeout, d.cfg.maxLifetime)
	}
	for _, cfg := range []Config{{}, {MaxInflight: -1, QueueSize: -5}} {
		d := newTestDispatcher(t, cfg)
		if d.cfg.maxInflight != 512 || d.cfg.queueSize != 64 || d.cfg.runTimeout != 30*time.Second || d.cfg.maxLifetime != 15*time.Minute {
			t.Fatalf("config %+v normalised to %+v", cfg, d.cfg)
		}
		quota := 0
		for i := range d.shards {
			if d.shards[i].quota < minShardQuota {
				t.Fatalf("shard %d has quota %d", i, d.shards[i].quota)
			}
			quota += d.shards[i].quota
		}
		if quota != 512 {
			t.Fatalf("shard quotas sum to %d; want 512", quota)
		}
	}
}

func TestShardCount(t *testing.T) {
	tests := []struct{ max, procs, want int }{
		{1, 8, 1}, {2, 8, 1}, {100, 8, 1}, {127, 2, 1}, {128, 2, 8}, {512, 2, 32}, {512, 1, 32},
		{512, 64, 32}, {1024, 2, 32}, {1024, 16, 64}, {4096, 64, 64}, {1 << 20, 64, 64},
	}
	for _, tt := range tests {
		if got := shardCount(tt.max, tt.procs); got != tt.want {
			t.Errorf("shardCount(%d, %d) = %d; want %d", tt.max, tt.procs, got, tt.want)
		}
	}
}

func TestSubmitRefusals(t *testing.T) {
	type rejection struct {
		chat string
		err  error
	}
	var mu sync.Mutex
	var got []rejection
	d := newTestDispatcher(t, Config{Hooks: Hooks{
		OnRejected: func(chat string, err error) {
			mu.Lock()
			got = append(got, rejection{chat, err})
			mu.Unlock()
		},
	}})
	if err := d.Submit("", func(context.Context) error { return nil }); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("empty key: %v", err)
	}
	if err := d.Submit("c", nil); !errors.Is(err, ErrNilTask) {
		t.Fatalf("nil task: %v", err)
	}
	d.Close()
	if err := d.Submit("c", func(context.Context) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	want := []rejection{{"", ErrEmptyKey}, {"c", ErrNilTask}, {"c", ErrClosed}}
	if len(got) != len(want) {
		t.Fatalf("OnRejected calls = %v; want %v", got, want)
	}
	for i := range want {
		if got[i].chat != want[i].chat || !errors.Is(got[i].err, want[i].err) {
			t.Fatalf("OnRejected call %d = %v; want %v", i, got[i], want[i])
		}
	}
	if st := d.Stats(); st.Rejected != 3 || st.Submitted != 0 {
		t.Fatalf("Stats = %+v; want 3 rejected, 0 submitted", st)
	}
}

// Invariant 1: per-chat FIFO, whatever the tasks' durations, with no two
// tasks of one chat running at once.
func TestPerChatFIFO(t *testing.T) {
	const chats, perChat = 50, 200
	d := newTestDispatcher(t, Config{MaxInflight: 8, QueueSize: perChat})
	var running [chats]atomic.Int32
	var next [chats]int
	var violations atomic.Int32
	var wg sync.WaitGroup
	for c := range chats {
		wg.Go(func() {
			key := fmt.Sprintf("chat-%d", c)
			for i := range perChat {
				spin := rand.IntN(200)
				mustSubmit(t, d, key, func(context.Context) error {
					if running[c].Add(1) != 1 {
						violations.Add(1)
					}
					if next[c] != i {
						violations.Add(1)
					}
					next[c] = i + 1
					for range spin {
						runtime.Gosched()
					}
					running[c].Add(-1)
					return nil
				})
			}
		})
	}
	wg.Wait()
	drain(t, d)
	if n := violations.Load(); n != 0 {
		t.Fatalf("%d order or overlap violations", n)
	}
	for c := range chats {
		if next[c] != perChat {
			t.Fatalf("chat %d ran %d tasks; want %d", c, next[c], perChat)
		}
	}
}

// Invariant 2: at no moment do more than MaxInflight tasks run, and the
// bound is reached when enough chats have work.
func TestBoundedConcurrency(t *testing.T) {
	for _, max := range []int{1, 3, 16} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			d := newTestDispatcher(t, Config{MaxInflight: max})
			var cur, peak atomic.Int32
			release := make(chan struct{})
			started := make(chan struct{}, 1000)
			const chats = 100
			for c := range chats {
				mustSubmit(t, d, fmt.Sprint(c), func(context.Context) error {
					n := cur.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					started <- struct{}{}
					<-release
					cur.Add(-1)
					return nil
				})
			}
			for range max {
				<-started
			}
			if st := d.Stats(); st.Running != max || st.Queued != chats-max {
				t.Fatalf("Stats = %+v; want %d running, %d queued", st, max, chats-max)
			}
			close(release)
			drain(t, d)
			if p := int(peak.Load()); p != max {
				t.Fatalf("peak concurrency %d; want %d", p, max)
			}
		})
	}
}

// Invariant 3: a chat holds at most QueueSize waiting tasks.
func TestQueueFull(t *testing.T) {
	var rejected atomic.Int32
	d := newTestDispatcher(t, Config{QueueSize: 3, Hooks: Hooks{
		OnRejected: func(_ string, err error) {
			if errors.Is(err, ErrQueueFull) {
				rejected.Add(1)
			}
		},
	}})
	release := make(chan struct{})
	started := make(chan struct{})
	mustSubmit(t, d, "c", func(context.Context) error {
		close(started)
		<-release
		return nil
	})
	<-started
	var ran atomic.Int32
	for range 3 {
		mustSubmit(t, d, "c", func(context.Context) error { ran.Add(1); return nil })
	}
	if err := d.Submit("c", func(context.Context) error { return nil }); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("4th waiting task: %v; want ErrQueueFull", err)
	}
	if rejected.Load() != 1 {
		t.Fatalf("OnRejected(ErrQueueFull) called %d times", rejected.Load())
	}
	// Other chats are not affected.
	mustSubmit(t, d, "other", func(context.Context) error { return nil })
	close(release)
	drain(t, d)
	if ran.Load() != 3 {
		t.Fatalf("%d queued tasks ran; want 3", ran.Load())
	}
	// The queue has room again.
	mustSubmit(t, d, "c", func(context.Context) error { return nil })
}

// Invariant 3: a chat with nothing queued or running holds no memory.
func TestIdleChatsRetired(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 4})
	for c := range 5000 {
		for range 3 {
			mustSubmit(t, d, fmt.Sprint(c), func(context.Context) error { return nil })
		}
	}
	d.Close() // so that Drain also waits for the workers to exit
	drain(t, d)
	st := d.Stats()
	if st.Chats != 0 || st.Queued != 0 || st.Running != 0 || st.Completed != 15000 {
		t.Fatalf("Stats after drain = %+v", st)
	}
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		if s.chats.n != 0 || s.readyHead != nil || s.freeChats.n > s.keepChats || s.workers != 0 {
			t.Errorf("shard %d: %d chats, ready %v, %d free, %d workers", i, s.chats.n, s.readyHead, s.freeChats.n, s.workers)
		}
		s.mu.Unlock()
	}
	if n := d.slots.Load(); n != 0 {
		t.Fatalf("%d slots held while idle", n)
	}
}

// Invariant 3: goroutines stay at most MaxInflight plus a constant however
// many chats wait.
func TestGoroutinesBounded(t *testing.T) {
	const max, chats = 8, 20000
	before := runtime.NumGoroutine()
	d := newTestDispatcher(t, Config{MaxInflight: max})
	release := make(chan struct{})
	for c := range chats {
		mustSubmit(t, d, fmt.Sprint(c), func(context.Context) error {
			<-release
			return nil
		})
	}
	if n := runtime.NumGoroutine() - before; n > max+2 {
		t.Fatalf("%d goroutines for %d waiting chats; want at most %d", n, chats, max+2)
	}
	if st := d.Stats(); st.Chats != chats {
		t.Fatalf("Stats.Chats = %d; want %d", st.Chats, chats)
	}
	close(release)
	drain(t, d)
}

// Invariant 4: with one slot, a chat with a long backlog gives the slot up
// after each task: a chat that becomes ready runs next.
func TestFairness(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 1, QueueSize: 100})
	var mu sync.Mutex
	var order []string
	record := func(s string) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
			return nil
		}
	}
	release := make(chan struct{})
	started := make(chan struct{})
	mustSubmit(t, d, "hot", func(context.Context) error {
		close(started)
		<-release
		return record("hot0")(nil)
	})
	<-started
	for i := 1; i <= 5; i++ {
		mustSubmit(t, d, "hot", record(fmt.Sprintf("hot%d", i)))
	}
	mustSubmit(t, d, "cold1", record("cold1"))
	mustSubmit(t, d, "cold2", record("cold2"))
	close(release)
	drain(t, d)
	want := []string{"hot0", "cold1", "cold2", "hot1", "hot2", "hot3", "hot4", "hot5"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order = %v; want %v", order, want)
	}
}

// Invariant 4 on the worker's fast path: a worker whose chat has more
// work keeps it while no other chat is ready, but gives it up after the
// task during which another chat became ready.
func TestFairnessKeptChat(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 1, QueueSize: 100})
	var mu sync.Mutex
	var order []string
	record := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	release := make(chan struct{})
	mustSubmit(t, d, "hot", func(context.Context) error {
		<-release
		record("hot1")
		return nil
	})
	mustSubmit(t, d, "hot", func(context.Context) error {
		record("hot2") // kept: no other chat is ready
		mustSubmit(t, d, "cold", func(context.Context) error { record("cold"); return nil })
		return nil
	})
	for i := 3; i <= 5; i++ {
		mustSubmit(t, d, "hot", func(context.Context) error { record(fmt.Sprint("hot", i)); return nil })
	}
	close(release)
	drain(t, d)
	want := []string{"hot1", "hot2", "cold", "hot3", "hot4", "hot5"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("order = %v; want %v", order, want)
	}
}

// A chat that becomes ready while a worker of its shard spins for work is
// left to that worker: no other worker starts.
func TestSpinningWorkerTakesReadyChat(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 2})
	ran := make(chan struct{})
	var slots int64
	var once sync.Once
	d.testHookSpin = func() {
		once.Do(func() {
			mustSubmit(t, d, "b", func(context.Context) error { close(ran); return nil })
			slots = d.slots.Load()
		})
	}
	mustSubmit(t, d, "a", func(context.Context) error { return nil })
	<-ran
	drain(t, d)
	if slots != 1 {
		t.Fatalf("%d worker slots held after a Submit during a spin; want 1, the spinner's", slots)
	}
}

// A worker out of work waits idle for idleLinger: a chat of another shard
// that becomes ready meanwhile gets it, with no new goroutine; then it
// ends, and the executor runs no goroutine.
func TestIdleWorkerReusedThenEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{MaxInflight: minShardedInflight})
		defer d.Shutdown(context.Background())
		a, b := keysInShards(d, 1, 1)
		mustSubmit(t, d, a[0], func(context.Context) error { return nil })
		synctest.Wait()
		if n, idle := d.slots.Load(), d.idleN.Load(); n != 1 || idle != 1 {
			t.Fatalf("after a task: %d workers, %d idle; want 1 idle", n, idle)
		}
		time.Sleep(idleLinger / 2)
		mustSubmit(t, d, b[0], func(context.Context) error { return nil })
		synctest.Wait()
		if n, idle := d.slots.Load(), d.idleN.Load(); n != 1 || idle != 1 {
			t.Fatalf("after a task of another shard: %d workers, %d idle; want the same one", n, idle)
		}
		time.Sleep(idleLinger - time.Nanosecond)
		synctest.Wait()
		if n := d.slots.Load(); n != 1 {
			t.Fatalf("%d workers before the idle worker's linger ended; want 1", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n, idle := d.slots.Load(), d.idleN.Load(); n != 0 || idle != 0 {
			t.Fatalf("%d workers (%d idle) after idleLinger; want none", n, idle)
		}
	})
}

// Close ends the idle workers at once.
func TestCloseEndsIdleWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{MaxInflight: 4})
		release := make(chan struct{})
		for i := range 4 {
			mustSubmit(t, d, fmt.Sprint(i), func(context.Context) error { <-release; return nil })
		}
		synctest.Wait()
		close(release)
		synctest.Wait()
		if n, idle := d.slots.Load(), d.idleN.Load(); n != 4 || idle != 4 {
			t.Fatalf("%d workers, %d idle; want 4 idle", n, idle)
		}
		start := time.Now()
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := d.slots.Load(); n != 0 || time.Since(start) != 0 {
			t.Fatalf("%d workers after Shutdown, which took %v; want none, at once", n, time.Since(start))
		}
	})
}

// Chats that become ready while a worker is on its way to their shard get
// workers one after the other: the first to arrive takes one and sends
// for another, so all run at once when their tasks block.
func TestWorkersChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{MaxInflight: 8})
		defer d.Shutdown(context.Background())
		release := make(chan struct{})
		for i := range 8 {
			mustSubmit(t, d, fmt.Sprint(i), func(context.Context) error { <-release; return nil })
		}
		synctest.Wait()
		if st := d.Stats(); st.Running != 8 || d.slots.Load() != 8 {
			t.Fatalf("%d running on %d workers; want 8 on 8", st.Running, d.slots.Load())
		}
		close(release)
	})
}

// A chat that becomes ready while a worker is on its way to its shard
// starts no other worker: the one on its way takes it, and sends for
// another only if it finds more ready (TestWorkersChain).
func TestNoWorkerWhileOneIsComing(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 4})
	s := &d.shards[0]
	s.mu.Lock()
	s.coming = 1
	coming := d.grantLocked(s)
	s.coming = 0
	none := d.grantLocked(s)
	s.mu.Unlock()
	if coming.need != needNone || none.need != needSpawn {
		t.Fatalf("grants %d with a worker on its way and %d without; want %d and %d",
			coming.need, none.need, needNone, needSpawn)
	}
	d.startWorker(s, none) // it arrives, finds nothing ready, and idles
}

// keysInShards returns n keys of shard 0 and m keys of shard 1.
func keysInShards(d *Executor, n, m int) (s0, s1 []string) {
	for i := 0; len(s0) < n || len(s1) < m; i++ {
		k := fmt.Sprint("k", i)
		switch d.shardOf(k) {
		case 0:
			if len(s0) < n {
				s0 = append(s0, k)
			}
		case 1:
			if len(s1) < m {
				s1 = append(s1, k)
			}
		}
	}
	return s0, s1
}

// Invariant 4 across shards: a shard below its quota gets a slot held by a
// shard above its quota after that shard's current task.
func TestFairnessAcrossShards(t *testing.T) {
	const max = minShardedInflight
	d := newTestDispatcher(t, Config{MaxInflight: max})
	if len(d.shards) < 2 {
		t.Fatalf("want shards, have %d", len(d.shards))
	}
	// max hot chats of shard 0 take every slot. A cold chat of shard 1
	// arrives: after one hot task finishes, its worker must move to shard
	// 1. The hot chats' second tasks wait for the cold task, so without the
	// move every worker would wait forever.
	hot, cold := keysInShards(d, max, 1)
	release := make(chan struct{})
	coldDone := make(chan struct{})
	var started sync.WaitGroup
	var starved atomic.Int32
	started.Add(max)
	for _, k := range hot {
		mustSubmit(t, d, k, func(context.Context) error {
			started.Done()
			<-release
			return nil
		})
		mustSubmit(t, d, k, func(context.Context) error {
			select {
			case <-coldDone:
			case <-time.After(10 * time.Second):
				starved.Add(1)
			}
			return nil
		})
	}
	started.Wait()
	mustSubmit(t, d, cold[0], func(context.Context) error {
		close(coldDone)
		return nil
	})
	if d.hungryN.Load() != 1 {
		t.Fatalf("cold shard not hungry: hungryN = %d", d.hungryN.Load())
	}
	close(release)
	drain(t, d)
	if starved.Load() != 0 {
		t.Fatal("the cold chat waited for the hot chats' backlog")
	}
}

// A Submit that marks its shard hungry holds the dispatcher open until it
// has served the hungry list, so no worker starts after Shutdown returned.
func TestNoWorkerAfterShutdown(t *testing.T) { synctest.Test(t, testNoWorkerAfterShutdown) }

func testNoWorkerAfterShutdown(t *testing.T) {
	const max = minShardedInflight
	d := New(context.Background(), Config{MaxInflight: max})
	a, b := keysInShards(d, 2, max-1)
	relA, relB := make(chan struct{}), make(chan struct{})
	var running sync.WaitGroup
	running.Add(max)
	block := func(rel chan struct{}) func(context.Context) error {
		return func(context.Context) error { running.Done(); <-rel; return nil }
	}
	mustSubmit(t, d, a[0], block(relA)) // shard 0: one worker, below quota
	for _, k := range b {
		mustSubmit(t, d, k, block(relB)) // shard 1 takes every other slot
	}
	running.Wait()

	var shutdownReturned atomic.Bool
	var returnedDuringHook atomic.Bool
	hookIn, hookOut := make(chan struct{}), make(chan struct{})
	d.testHookHungry = func() {
		close(hookIn)
		<-hookOut
		returnedDuringHook.Store(shutdownReturned.Load())
	}
	submitted := make(chan error, 1)
	go func() { submitted <- d.Submit(a[1], func(context.Context) error { return nil }) }()
	<-hookIn // Submit decided shard 0 is hungry and waits in the hook
	close(relA)
	close(relB)
	shut := make(chan error, 1)
	go func() {
		err := d.Shutdown(context.Background())
		shutdownReturned.Store(true)
		shut <- err
	}()
	// Shutdown must not return while the hungry Submit is unfinished:
	// once every goroutine is blocked, it must still be waiting.
	synctest.Wait()
	select {
	case <-shut:
		shutdownReturned.Store(true)
		t.Error("Shutdown returned while a Submit was about to start a worker")
	default:
	}
	close(hookOut)
	if err := <-submitted; err != nil {
		t.Fatal(err)
	}
	if !shutdownReturned.Load() {
		if err := <-shut; err != nil {
			t.Fatal(err)
		}
	}
	if returnedDuringHook.Load() {
		t.Error("Shutdown returned before the hungry shard was served")
	}
	if n := d.slots.Load(); n != 0 {
		t.Fatalf("%d slots held after Shutdown", n)
	}
}

// Invariant 5: ForceClose runs every queued task once, with a cancelled
// context.
func TestForceCloseRunsQueuedTasks(t *testing.T) {
	const chats, queued = 6, 10
	d := newTestDispatcher(t, Config{MaxInflight: 3})
	release := make(chan struct{})
	var runs, cancelled atomic.Int32
	started := make(chan struct{}, chats)
	for c := range chats {
		key := fmt.Sprint(c)
		mustSubmit(t, d, key, func(ctx context.Context) error {
			started <- struct{}{}
			<-release
			return ctx.Err()
		})
		for range queued {
			mustSubmit(t, d, key, func(ctx context.Context) error {
				runs.Add(1)
				if ctx.Err() != nil {
					cancelled.Add(1)
				}
				return ctx.Err()
			})
		}
	}
	for range 3 {
		<-started
	}
	d.ForceClose()
	if err := d.Submit("x", func(context.Context) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after ForceClose: %v", err)
	}
	close(release)
	drain(t, d)
	if runs.Load() != chats*queued || cancelled.Load() != chats*queued {
		t.Fatalf("%d queued tasks ran, %d with a cancelled context; want %d each", runs.Load(), cancelled.Load(), chats*queued)
	}
	if st := d.Stats(); st.Completed != chats*(queued+1) || st.Failed != chats*(queued+1) {
		t.Fatalf("Stats = %+v", st)
	}
}

// Invariant 5 and 7: ForceClose cancels the context of running tasks.
func TestForceCloseCancelsRunning(t *testing.T) {
	d := newTestDispatcher(t, Config{})
	started := make(chan struct{})
	errc := make(chan error, 1)
	mustSubmit(t, d, "c", func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		errc <- ctx.Err()
		return ctx.Err()
	})
	<-started
	d.ForceClose()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("running task saw %v; want Canceled", err)
	}
}

// Invariant 6: a panicking task is recovered and reported, and the chat's
// later tasks still run.
func TestPanicStaysLocal(t *testing.T) {
	var recovered atomic.Value
	var mu sync.Mutex
	var infos []Info
	d := newTestDispatcher(t, Config{
		Recover: func(v any) { recovered.Store(v) },
		Hooks: Hooks{OnDone: func(i Info) {
			mu.Lock()
			infos = append(infos, i)
			mu.Unlock()
		}},
	})
	var after atomic.Int32
	mustSubmit(t, d, "c", func(context.Context) error { panic("boom") })
	for range 5 {
		mustSubmit(t, d, "c", func(context.Context) error { after.Add(1); return nil })
	}
	drain(t, d)
	if after.Load() != 5 {
		t.Fatalf("%d tasks ran after the panic; want 5", after.Load())
	}
	if recovered.Load() != "boom" {
		t.Fatalf("Recover got %v", recovered.Load())
	}
	var pe *PanicError
	if len(infos) != 6 || !errors.As(infos[0].Err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Fatalf("OnDone infos = %+v", infos)
	}
	if st := d.Stats(); st.Panicked != 1 || st.Failed != 1 || st.Completed != 6 {
		t.Fatalf("Stats = %+v", st)
	}
}

// A task that calls runtime.Goexit (t.FailNow in a fake sender) does not
// wedge its chat or the dispatcher.
func TestGoexitTask(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 1})
	var after atomic.Int32
	mustSubmit(t, d, "c", func(context.Context) error { runtime.Goexit(); return nil })
	mustSubmit(t, d, "c", func(context.Context) error { after.Add(1); return nil })
	mustSubmit(t, d, "d", func(context.Context) error { after.Add(1); return nil })
	drain(t, d)
	if after.Load() != 2 {
		t.Fatalf("%d tasks ran after Goexit; want 2", after.Load())
	}
	if st := d.Stats(); st.Failed != 1 || st.Completed != 3 {
		t.Fatalf("Stats = %+v", st)
	}
}

// Invariant 8: hooks run with no lock held, so they may call back into the
// dispatcher.
func TestHooksMayCallBack(t *testing.T) {
	var d *Executor
	var calls atomic.Int32
	callback := func() {
		calls.Add(1)
		_ = d.Stats()
		_ = d.Submit("hook-chat", func(context.Context) error { return nil })
	}
	d = newTestDispatcher(t, Config{QueueSize: 1, Hooks: Hooks{
		OnQueued:   func(string, int) { callback() },
		OnStart:    func(string) { callback() },
		OnDone:     func(Info) { callback() },
		OnRejected: func(string, error) { calls.Add(1); _ = d.Stats() },
	}})
	mustSubmit(t, d, "c", func(context.Context) error { return nil })
	done := make(chan struct{})
	go func() {
		for calls.Load() < 50 {
			runtime.Gosched()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("hooks deadlocked")
	}
	d.Close()
	drain(t, d)
}

// Hooks see the right values.
func TestHookValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var queued []int
		var infos []Info
		d := New(context.Background(), Config{Hooks: Hooks{
			OnQueued: func(_ string, n int) { mu.Lock(); queued = append(queued, n); mu.Unlock() },
			OnDone:   func(i Info) { mu.Lock(); infos = append(infos, i); mu.Unlock() },
		}})
		release := make(chan struct{})
		boom := errors.New("boom")
		mustSubmit(t, d, "c", func(context.Context) error {
			<-release
			time.Sleep(2 * time.Second)
			return nil
		})
		synctest.Wait()
		mustSubmit(t, d, "c", func(context.Context) error { return boom })
		mustSubmit(t, d, "c", func(context.Context) error { return nil })
		time.Sleep(time.Second)
		close(release)
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(queued) != "[1 1 2]" {
			t.Fatalf("OnQueued lengths = %v; want [1 1 2]", queued)
		}
		if len(infos) != 3 {
			t.Fatalf("OnDone calls = %d", len(infos))
		}
		if i := infos[0]; i.ChatID != "c" || i.QueueLen != 0 || i.RunLatency != 3*time.Second || i.QueueLatency != 0 || i.Err != nil {
			t.Fatalf("first OnDone = %+v", i)
		}
		if i := infos[1]; i.QueueLen != 1 || i.QueueLatency != 3*time.Second || !errors.Is(i.Err, boom) {
			t.Fatalf("second OnDone = %+v", i)
		}
	})
}

// Invariant 7: each task's context carries RunTimeout from its start.
func TestSendTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{RunTimeout: 5 * time.Second, MaxInflight: 1})
		type result struct {
			waited   time.Duration
			err      error
			deadline time.Duration
		}
		results := make(chan result, 2)
		for range 2 {
			mustSubmit(t, d, "c", func(ctx context.Context) error {
				start := time.Now()
				dl, _ := ctx.Deadline()
				<-ctx.Done()
				results <- result{time.Since(start), ctx.Err(), dl.Sub(start)}
				return ctx.Err()
			})
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			r := <-results
			if r.waited != 5*time.Second || r.deadline != 5*time.Second || !errors.Is(r.err, context.DeadlineExceeded) {
				t.Fatalf("task result %+v; want 5s and DeadlineExceeded", r)
			}
		}
	})
}

// Shutdown with an expiring context returns the context's error and leaves
// the tasks running; ForceClose then interrupts them.
func TestShutdownTimeoutThenForceClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{})
		var ran atomic.Int32
		for c := range 3 {
			mustSubmit(t, d, fmt.Sprint(c), func(ctx context.Context) error {
				<-ctx.Done()
				ran.Add(1)
				return ctx.Err()
			})
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v; want DeadlineExceeded", err)
		}
		if ran.Load() != 0 {
			t.Fatal("tasks interrupted by an expired Shutdown")
		}
		d.ForceClose()
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatalf("second Shutdown = %v", err)
		}
		if ran.Load() != 3 {
			t.Fatalf("%d tasks finished; want 3", ran.Load())
		}
	})
}

// Drain checks its context first and waits for accepted work.
func TestDrain(t *testing.T) {
	d := newTestDispatcher(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Drain(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain(cancelled) = %v", err)
	}
	var done atomic.Int32
	for c := range 100 {
		mustSubmit(t, d, fmt.Sprint(c%7), func(context.Context) error {
			runtime.Gosched()
			done.Add(1)
			return nil
		})
	}
	drain(t, d)
	if done.Load() != 100 {
		t.Fatalf("Drain returned with %d of 100 tasks done", done.Load())
	}
	// Drain does not close.
	mustSubmit(t, d, "again", func(context.Context) error { return nil })
}

// The dispatcher's parent context reaches every task.
func TestParentContext(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	d := New(parent, Config{})
	defer d.Shutdown(context.Background())
	got := make(chan any, 1)
	mustSubmit(t, d, "c", func(ctx context.Context) error {
		got <- ctx.Value(key{})
		return nil
	})
	if v := <-got; v != "v" {
		t.Fatalf("Value = %v", v)
	}
	cancel()
	errc := make(chan error, 1)
	mustSubmit(t, d, "c", func(ctx context.Context) error {
		errc <- ctx.Err()
		return nil
	})
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("task after parent cancel saw %v", err)
	}
}

// Submit racing with queue retirement: tiny bursts on many chats, so chats
// retire and reappear constantly. Zero order violations, zero overlapping
// runs, accepted == completed.
func TestSubmitRacesRetirement(t *testing.T) {
	const producers, chatsPer, rounds = 8, 16, 400
	d := newTestDispatcher(t, Config{MaxInflight: 4})
	type state struct {
		running atomic.Int32
		next    int
	}
	states := make([]state, producers*chatsPer)
	var violations, accepted, ran atomic.Int64
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			seq := make([]int, chatsPer)
			for r := range rounds {
				for i := range chatsPer {
					idx := p*chatsPer + i
					st := &states[idx]
					key := fmt.Sprint(idx)
					burst := 1 + (r+i)%3
					for range burst {
						want := seq[i]
						err := d.Submit(key, func(context.Context) error {
							if st.running.Add(1) != 1 {
								violations.Add(1)
							}
							if st.next != want {
								violations.Add(1)
							}
							st.next = want + 1
							ran.Add(1)
							st.running.Add(-1)
							return nil
						})
						if err == nil {
							seq[i]++
							accepted.Add(1)
						} else if !errors.Is(err, ErrQueueFull) {
							t.Errorf("Submit: %v", err)
						}
					}
				}
				if r%16 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	wg.Wait()
	drain(t, d)
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d order/overlap violations", v)
	}
	if accepted.Load() != ran.Load() {
		t.Fatalf("accepted %d, ran %d", accepted.Load(), ran.Load())
	}
	st := d.Stats()
	if st.Submitted != uint64(accepted.Load()) || st.Completed != st.Submitted || st.Chats != 0 {
		t.Fatalf("Stats = %+v; accepted %d", st, accepted.Load())
	}
}

// 100 goroutines race Submit, Close, Drain, Shutdown and ForceClose: no
// panic, no deadlock, every accepted task runs exactly once.
func TestConcurrentLifecycle(t *testing.T) {
	for round := range 20 {
		d := New(context.Background(), Config{MaxInflight: 4, QueueSize: 8})
		var accepted, ran atomic.Int64
		var wg sync.WaitGroup
		for g := range 100 {
			wg.Go(func() {
				switch g % 10 {
				case 0:
					d.Close()
				case 1:
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					_ = d.Drain(ctx)
					cancel()
				case 2:
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					_ = d.Shutdown(ctx)
					cancel()
				case 3:
					if g > 50 {
						d.ForceClose()
					}
				default:
					for i := range 20 {
						err := d.Submit(fmt.Sprint(g%13), func(ctx context.Context) error {
							ran.Add(1)
							if i%5 == 0 {
								runtime.Gosched()
							}
							return nil
						})
						switch {
						case err == nil:
							accepted.Add(1)
						case errors.Is(err, ErrQueueFull), errors.Is(err, ErrClosed):
						default:
							t.Errorf("Submit: %v", err)
						}
					}
				}
			})
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := d.Shutdown(ctx); err != nil {
			t.Fatalf("round %d: Shutdown: %v", round, err)
		}
		cancel()
		if accepted.Load() != ran.Load() {
			t.Fatalf("round %d: accepted %d, ran %d", round, accepted.Load(), ran.Load())
		}
		st := d.Stats()
		if st.Submitted != uint64(accepted.Load()) || st.Completed != st.Submitted || st.Queued+st.Running+st.Chats != 0 {
			t.Fatalf("round %d: Stats = %+v, accepted %d", round, st, accepted.Load())
		}
	}
}

// Stats keeps Submitted == Completed + Queued + Running.
func TestStatsBalance(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 2})
	release := make(chan struct{})
	for c := range 10 {
		for range 3 {
			mustSubmit(t, d, fmt.Sprint(c), func(context.Context) error { <-release; return errors.New("x") })
		}
	}
	st := d.Stats()
	if st.Submitted != 30 || st.Completed+uint64(st.Queued+st.Running) != 30 || st.Chats != 10 {
		t.Fatalf("Stats = %+v", st)
	}
	close(release)
	drain(t, d)
	st = d.Stats()
	if st.Completed != 30 || st.Failed != 30 || st.Queued != 0 || st.Running != 0 || st.Chats != 0 {
		t.Fatalf("Stats after drain = %+v", st)
	}
}

// A panicking hook is recovered and does not break the dispatcher.
func TestPanickingHook(t *testing.T) {
	var recovered atomic.Int32
	d := newTestDispatcher(t, Config{
		Recover: func(any) { recovered.Add(1) },
		Hooks: Hooks{
			OnQueued: func(string, int) { panic("queued") },
			OnStart:  func(string) { panic("start") },
			OnDone:   func(Info) { panic("done") },
		},
	})
	var ran atomic.Int32
	for range 3 {
		mustSubmit(t, d, "c", func(context.Context) error { ran.Add(1); return nil })
	}
	drain(t, d)
	if ran.Load() != 3 || recovered.Load() != 9 {
		t.Fatalf("ran %d, recovered %d; want 3 and 9", ran.Load(), recovered.Load())
	}
}

// Large queues shrink back: an idle shard keeps no more free chats and
// task nodes than its limits, and its table shrinks with its chats.
func TestMemoryReturned(t *testing.T) {
	d := newTestDispatcher(t, Config{MaxInflight: 1, QueueSize: 1000})
	release := make(chan struct{})
	mustSubmit(t, d, "block", func(context.Context) error { <-release; return nil })
	for c := range 4000 {
		mustSubmit(t, d, fmt.Sprint(c), func(context.Context) error { return nil })
	}
	for range 500 {
		mustSubmit(t, d, "big", func(context.Context) error { return nil })
	}
	close(release)
	drain(t, d)
	for i := range d.shards {
		s := &d.shards[i]
		s.mu.Lock()
		chats, tasks := 0, 0
		for c := s.freeChats.head; c != nil; c = c.next {
			chats++
		}
		for nd := s.freeTasks.head; nd != nil; nd = nd.next {
			tasks++
		}
		if chats != s.freeChats.n || tasks != s.freeTasks.n {
			t.Errorf("shard %d: free lists of %d chats and %d tasks counted as %d and %d", i, chats, tasks, s.freeChats.n, s.freeTasks.n)
		}
		if chats > s.keepChats || tasks > s.keepTasks || s.freeChats.spill != nil || s.freeTasks.spill != nil {
			t.Errorf("shard %d: idle with %d free chats, %d free tasks, spills %d and %d", i, chats, tasks, s.freeChats.spillN, s.freeTasks.spillN)
		}
		if len(s.chats.slots) > shrinkTableLen {
			t.Errorf("shard %d: table of %d slots kept for no chat", i, len(s.chats.slots))
		}
		s.mu.Unlock()
	}
}

func (d *Executor) shardOf(key string) int { return int(d.hash(key) & d.mask) }

// Full says what the next Submit would meet: a chat with QueueSize tasks
// waiting behind the one running is full, and no longer once one of them
// started; a chat never seen is not.
func TestFull(t *testing.T) {
	var hooked atomic.Int32
	d := newTestDispatcher(t, Config{QueueSize: 2, Hooks: Hooks{
		OnRejected: func(chat string, err error) {
			if chat == "c" && errors.Is(err, ErrQueueFull) {
				hooked.Add(1)
			}
		},
	}})
	release := make(chan struct{})
	started := make(chan struct{}, 3)
	task := func(context.Context) error {
		started <- struct{}{}
		<-release
		return nil
	}
	if d.Full("c") {
		t.Fatal("a chat never seen is full")
	}
	for i := range 3 {
		if err := d.Submit("c", task); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-started // running: the next two wait
		}
		if full := d.Full("c"); full != (i == 2) {
			t.Fatalf("after %d submits Full = %v", i+1, full)
		}
	}
	if err := d.Submit("c", task); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a submit while Full = %v; want ErrQueueFull", err)
	}
	// A refusal of the caller's own, on finding the chat Full, is told as
	// Submit's is (invariant 5: refused through an error, OnRejected fired).
	if err := d.RejectFull("c"); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("RejectFull = %v; want ErrQueueFull", err)
	}
	if got, st := hooked.Load(), d.Stats(); got != 2 || st.Rejected != 2 {
		t.Fatalf("%d OnRejected calls, %d rejected in Stats; want the submit's and RejectFull's", got, st.Rejected)
	}
	if d.Full("d") {
		t.Fatal("another chat is full")
	}
	release <- struct{}{} // the first ends, the second starts
	<-started
	if d.Full("c") {
		t.Fatal("still full once a waiting task started")
	}
	close(release)
}
