package executor

import (
	"context"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/lazyctx"
)

// The benchmarks compare the dispatcher with a baseline: a bare pool that
// hashes each chat onto one of MaxInflight goroutines, one channel each,
// doing the same per-task work as the dispatcher: a context with the
// RunTimeout deadline, built the dispatcher's way (a lazyctx.Context,
// which arms no timer unless the task asks for Done) so that the
// comparison measures scheduling alone. The "baseline-stdctx" variant
// builds each context with context.WithTimeout instead, as a pool written
// without the dispatcher's helpers would. The baseline keeps per-chat order
// but is unfair (a hot chat blocks every chat hashed to its goroutine) and
// refuses nothing (Submit blocks when a channel is full).
//
// Run: go test -run='^$' -bench=DispatcherThroughput -benchmem -count=5 ./internal/executor

// submitter is what the throughput workload drives.
type submitter interface {
	Submit(chatID string, task func(context.Context) error) error
	Drain(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

type baselinePool struct {
	seed    maphash.Seed
	timeout time.Duration
	chans   []chan func(context.Context) error
	pending sync.WaitGroup
	workers sync.WaitGroup
}

// newBaselinePool starts the baseline pool. With stdctx, each task's
// context is a context.WithTimeout; otherwise it is the dispatcher's lazy
// lazyctx.Context under a cancellable base, as the dispatcher builds it.
func newBaselinePool(workers, queue int, timeout time.Duration, stdctx bool) *baselinePool {
	p := &baselinePool{seed: maphash.MakeSeed(), timeout: timeout, chans: make([]chan func(context.Context) error, workers)}
	base, cancel := context.WithCancel(context.Background())
	tc := lazyctx.NewClock(base, time.Now())
	var running sync.WaitGroup
	for i := range p.chans {
		ch := make(chan func(context.Context) error, queue)
		p.chans[i] = ch
		running.Add(1)
		p.workers.Go(func() {
			defer running.Done()
			for task := range ch {
				if stdctx {
					ctx, cancel := context.WithTimeout(base, p.timeout)
					_ = task(ctx)
					cancel()
				} else {
					ctx := tc.New(tc.Now() + int64(p.timeout))
					_ = task(ctx)
					ctx.Release()
				}
				p.pending.Done()
			}
		})
	}
	p.workers.Go(func() { running.Wait(); cancel() })
	return p
}

func (p *baselinePool) Submit(chatID string, task func(context.Context) error) error {
	p.pending.Add(1)
	p.chans[maphash.String(p.seed, chatID)%uint64(len(p.chans))] <- task
	return nil
}

func (p *baselinePool) Drain(context.Context) error {
	p.pending.Wait()
	return nil
}

func (p *baselinePool) Shutdown(ctx context.Context) error {
	p.pending.Wait()
	for _, ch := range p.chans {
		close(ch)
	}
	p.workers.Wait()
	return nil
}
func chatKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("telegram:%d", 100000+i)
	}
	return keys
}

// BenchmarkDispatcherThroughput: 10,000 chats × 20 no-op tasks from 2
// producers per iteration; ns/task (wall time), cpu-ns/task (the process's
// CPU time, which other load on a shared machine disturbs less), B/task
// and allocs/task are reported.
func BenchmarkDispatcherThroughput(b *testing.B) {
	b.Run("herald", func(b *testing.B) {
		runThroughput(b, New(context.Background(), Config{}))
	})
	b.Run("baseline", func(b *testing.B) {
		runThroughput(b, newBaselinePool(DefaultMaxInflight, DefaultQueueSize, DefaultRunTimeout, false))
	})
	b.Run("baseline-stdctx", func(b *testing.B) {
		runThroughput(b, newBaselinePool(DefaultMaxInflight, DefaultQueueSize, DefaultRunTimeout, true))
	})
}

// runThroughput runs the workload of BenchmarkDispatcherThroughput on s,
// then shuts s down.
func runThroughput(b *testing.B, s submitter) {
	const chats, perChat, producers = 10000, 20, 2
	keys := chatKeys(chats)
	noop := func(context.Context) error { return nil }
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	start, cpu0 := time.Now(), cpuTime()
	iters := 0
	for b.Loop() {
		iters++
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				mine := keys[p*chats/producers : (p+1)*chats/producers]
				for range perChat {
					for _, k := range mine {
						if err := s.Submit(k, noop); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		if err := s.Drain(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	runtime.ReadMemStats(&ms1)
	tasks := float64(iters * chats * perChat)
	b.ReportMetric(float64(elapsed.Nanoseconds())/tasks, "ns/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/tasks, "cpu-ns/task")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/tasks, "B/task")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/tasks, "allocs/task")
	if err := s.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDispatcherWaitingChats: MaxInflight 8, 20,000 chats with one
// blocked task each. Reports the goroutines the dispatcher started and the
// heap it holds per waiting chat.
func BenchmarkDispatcherWaitingChats(b *testing.B) {
	const max, chats = 8, 20000
	keys := chatKeys(chats)
	var goroutines, heapPerChat float64
	for b.Loop() {
		release := make(chan struct{})
		task := func(context.Context) error { <-release; return nil }
		var ms0, ms1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		g0 := runtime.NumGoroutine()
		d := New(context.Background(), Config{MaxInflight: max})
		for _, k := range keys {
			if err := d.Submit(k, task); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		goroutines = float64(runtime.NumGoroutine() - g0)
		heapPerChat = float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / chats
		runtime.KeepAlive(d)
		close(release)
		if err := d.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(goroutines, "goroutines")
	b.ReportMetric(heapPerChat, "heapB/chat")
}

// BenchmarkDispatcherFairness: MaxInflight 2, two chats with 2,000 queued
// 50µs tasks each, then 200 cold chats with one task each. Reports the cold
// tasks' wait from Submit to start (p50, p99, max).
func BenchmarkDispatcherFairness(b *testing.B) {
	const hotTasks, cold = 2000, 200
	keys := chatKeys(cold)
	var waits []time.Duration
	for b.Loop() {
		d := New(context.Background(), Config{MaxInflight: 2, QueueSize: hotTasks})
		hot := func(context.Context) error { time.Sleep(50 * time.Microsecond); return nil }
		for range hotTasks {
			for _, k := range []string{"hot-a", "hot-b"} {
				if err := d.Submit(k, hot); err != nil {
					b.Fatal(err)
				}
			}
		}
		timedSubmits(b, d, keys, &waits)
		if err := d.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(quantileMs(waits, 0.5), "p50-ms")
	b.ReportMetric(quantileMs(waits, 0.99), "p99-ms")
	b.ReportMetric(quantileMs(waits, 1), "max-ms")
}

// timedSubmits submits one task to each chat of keys; each task appends to
// *waits how long it waited from its Submit to its start. Read *waits
// after the dispatcher has drained.
func timedSubmits(b *testing.B, d *Executor, keys []string, waits *[]time.Duration) {
	var mu sync.Mutex
	for _, k := range keys {
		submitted := time.Now()
		err := d.Submit(k, func(context.Context) error {
			w := time.Since(submitted)
			mu.Lock()
			*waits = append(*waits, w)
			mu.Unlock()
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// quantileMs sorts waits and returns their p-quantile (0 ≤ p ≤ 1) in
// milliseconds.
func quantileMs(waits []time.Duration, p float64) float64 {
	slices.Sort(waits)
	return float64(waits[int(p*float64(len(waits)-1))].Microseconds()) / 1000
}

// BenchmarkDispatcherRetryWaits: MaxInflight 8; 64 flooded chats whose
// sends must wait 20 ms (a platform's retry-after) before they succeed,
// then 1,000 other chats with one send each. Reports how long the other
// chats' sends waited from Submit to start (p50, p99), and when the last of
// all finished, with the waits slept in place (Submit, a worker held) and
// as pauses (a platform.PauseError, no worker held).
func BenchmarkDispatcherRetryWaits(b *testing.B) {
	const max, flooded, others, wait = 8, 64, 1000, 20 * time.Millisecond
	keys := chatKeys(flooded + others)
	run := func(b *testing.B, resumable bool) {
		var waits []time.Duration
		var total time.Duration
		for b.Loop() {
			d := New(context.Background(), Config{MaxInflight: max})
			start := time.Now()
			for _, k := range keys[:flooded] {
				var err error
				if resumable {
					err = d.Submit(k, counted(func(ctx context.Context, run int) error {
						if run == 1 {
							return later(ctx, wait)
						}
						return nil
					}))
				} else {
					err = d.Submit(k, func(context.Context) error { time.Sleep(wait); return nil })
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			timedSubmits(b, d, keys[flooded:], &waits)
			if err := d.Shutdown(context.Background()); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
		}
		b.ReportMetric(quantileMs(waits, 0.5), "others-p50-ms")
		b.ReportMetric(quantileMs(waits, 0.99), "others-p99-ms")
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "all-done-ms")
	}
	b.Run("in-place", func(b *testing.B) { run(b, false) })
	b.Run("resumable", func(b *testing.B) { run(b, true) })
}
