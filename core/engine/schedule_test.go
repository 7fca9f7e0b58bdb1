package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// runs records when a job ran, relative to a start time.
type runs struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func newRuns() *runs { return &runs{start: time.Now()} }

func (r *runs) job(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, time.Since(r.start))
	return nil
}

func (r *runs) times() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.at)
}

// process is one run of an engine on a store shared with the engines
// before and after it, as a bot's processes share a NATS server.
type process struct {
	e    *engine.Engine
	mem  *memory.Adapter
	stop func()
}

func startProcess(t *testing.T, opts ...engine.Option) *process {
	t.Helper()
	mem := memory.New()
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(mem)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &process{e: e, mem: mem}
}

func (p *process) run(t *testing.T) *process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.e.Run(ctx) }()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(p.stop)
	synctest.Wait()
	return p
}

// Every runs on the interval's beat, from one interval after the start.
func TestEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRuns()
		p := startProcess(t)
		p.e.Every("tick", time.Hour, r.job)
		p.run(t)
		time.Sleep(3*time.Hour + 30*time.Minute)
		p.stop()
		if got, want := r.times(), []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}; !slices.Equal(got, want) {
			t.Fatalf("ran at %v; want %v", got, want)
		}
	})
}

// Every returns the job, whose Stop stops it: it runs no more, also in a
// process started later on the same store.
func TestEveryStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRuns()
		store := state.NewMemoryStore()
		p := startProcess(t, engine.WithScheduleStore(store))
		job := p.e.Every("tick", time.Hour, r.job)
		p.run(t)
		time.Sleep(2*time.Hour + 30*time.Minute)
		if err := job.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Hour)
		p.stop()
		p2 := startProcess(t, engine.WithScheduleStore(store))
		p2.e.Every("tick", time.Hour, r.job)
		p2.run(t)
		time.Sleep(3 * time.Hour)
		p2.stop()
		if got, want := r.times(), []time.Duration{time.Hour, 2 * time.Hour}; !slices.Equal(got, want) {
			t.Fatalf("ran at %v; want %v, then no more", got, want)
		}
	})
}

// A run that outlasts the interval delays the next; the runs missed
// meanwhile are skipped, and the beat is kept.
func TestEverySlowRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRuns()
		p := startProcess(t, engine.WithHandlerTimeout(time.Hour))
		p.e.Every("slow", 10*time.Minute, func(ctx context.Context) error {
			_ = r.job(ctx)
			if len(r.times()) == 1 {
				time.Sleep(25 * time.Minute)
			}
			return nil
		})
		p.run(t)
		time.Sleep(65 * time.Minute)
		p.stop()
		m := time.Minute
		if got, want := r.times(), []time.Duration{10 * m, 40 * m, 50 * m, 60 * m}; !slices.Equal(got, want) {
			t.Fatalf("ran at %v; want %v", got, want)
		}
	})
}

// Missed runs after a restart: a run that came due while no process ran
// is made once at start, the others missed are skipped, and the beat goes
// on; a restart within an interval makes no run of its own.
func TestEveryMissedRunsAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		r := newRuns()
		start := func() *process {
			p := startProcess(t, engine.WithScheduleStore(store))
			p.e.Every("tick", time.Hour, r.job)
			return p.run(t)
		}
		p := start()
		time.Sleep(90 * time.Minute) // a run at 1h
		p.stop()
		time.Sleep(20 * time.Minute)
		p = start() // at 1h50: the 2h run is still ahead
		time.Sleep(20 * time.Minute)
		p.stop()
		time.Sleep(4 * time.Hour) // down at 2h10 to 6h10: the 3h … 6h runs missed
		p = start()
		time.Sleep(time.Hour)
		p.stop()
		m := time.Minute
		want := []time.Duration{60 * m, 120 * m, 370 * m, 420 * m}
		if got := r.times(); !slices.Equal(got, want) {
			t.Fatalf("ran at %v; want %v", got, want)
		}
	})
}

// With the default store, a job lives with its process: a new engine
// begins its beat anew.
func TestEveryInMemoryLivesWithTheProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRuns()
		for range 2 {
			p := startProcess(t)
			p.e.Every("tick", time.Hour, r.job)
			p.run(t)
			time.Sleep(90 * time.Minute)
			p.stop()
		}
		if got, want := r.times(), []time.Duration{60 * time.Minute, 150 * time.Minute}; !slices.Equal(got, want) {
			t.Fatalf("ran at %v; want %v", got, want)
		}
	})
}

// Processes that share a store make each run once between them.
func TestEveryOnceAcrossProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		var n atomic.Int32
		var ps []*process
		for range 3 {
			p := startProcess(t, engine.WithScheduleStore(store))
			p.e.Every("tick", time.Minute, func(context.Context) error { n.Add(1); return nil })
			ps = append(ps, p.run(t))
		}
		time.Sleep(10*time.Minute + 30*time.Second)
		for _, p := range ps {
			p.stop()
		}
		if got := n.Load(); got != 10 {
			t.Fatalf("3 processes ran the job %d times in 10 intervals; want 10", got)
		}
	})
}

// At runs once at its time, not again after a restart; one whose time
// passed while no process ran runs at start.
func TestAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		t0 := time.Now()
		r := newRuns()
		late := newRuns()
		start := func() *process {
			p := startProcess(t, engine.WithScheduleStore(store))
			p.e.At("once", t0.Add(time.Hour), r.job)
			p.e.At("late", t0.Add(3*time.Hour), late.job)
			return p.run(t)
		}
		p := start()
		time.Sleep(2 * time.Hour)
		p.stop()
		time.Sleep(2 * time.Hour)
		p = start() // at 4h: "once" ran, "late" was due at 3h
		time.Sleep(time.Hour)
		p.stop()
		if got := r.times(); !slices.Equal(got, []time.Duration{time.Hour}) {
			t.Errorf("once ran at %v; want [1h]", got)
		}
		if got := late.times(); !slices.Equal(got, []time.Duration{4 * time.Hour}) {
			t.Errorf("late ran at %v; want at the start, 4h", got)
		}
	})
}

// A job's error and panic are logged, and the schedule goes on.
func TestJobFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.WarnLevel)
		p := startProcess(t, engine.WithLogger(zap.New(core)))
		var n atomic.Int32
		p.e.Every("bad", time.Minute, func(context.Context) error {
			switch n.Add(1) {
			case 1:
				return errors.New("boom")
			case 2:
				panic("bang")
			}
			return nil
		})
		p.run(t)
		time.Sleep(3*time.Minute + time.Second)
		p.stop()
		if n.Load() != 3 {
			t.Errorf("ran %d times; want 3", n.Load())
		}
		if logs.FilterMessage("job failed").Len() != 1 || logs.FilterMessage("job panicked").Len() != 1 {
			t.Errorf("logs: %v", logs.All())
		}
	})
}

// Shutdown waits for a run that began, and its sends are made.
func TestShutdownWaitsForJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startProcess(t)
		p.e.Every("report", time.Minute, func(ctx context.Context) error {
			time.Sleep(10 * time.Second)
			p.e.Send(p.mem.Name(), dm, platform.TextMessage("report"))
			return nil
		})
		p.run(t)
		time.Sleep(time.Minute + time.Second)
		p.stop()
		if got := p.mem.Texts(dm.ID); !slices.Equal(got, []string{"report"}) {
			t.Fatalf("chat got %q", got)
		}
	})
}

func TestJobRegistrationErrors(t *testing.T) {
	e, _ := newEngine(t)
	job := func(context.Context) error { return nil }
	e.Every("taken", time.Minute, job)
	for name, register := range map[string]func(){
		"nil job":       func() { e.Every("x", time.Minute, nil) },
		"zero interval": func() { e.Every("x", 0, job) },
		"empty name":    func() { e.At("", time.Now(), job) },
		"name taken":    func() { e.At("taken", time.Now(), job) },
	} {
		if err := registrationPanic(register); !errors.Is(err, engine.ErrInvalidJob) {
			t.Errorf("%s: %v; want a panic with ErrInvalidJob", name, err)
		}
	}
	err := e.Use(jobPlugin{})
	if !errors.Is(err, engine.ErrInvalidJob) {
		t.Errorf("Use of a plugin with a bad job: %v", err)
	}
}

type jobPlugin struct{}

func (jobPlugin) Name() string { return "jobs" }
func (jobPlugin) Register(e *engine.Engine) error {
	e.Every("bad", -time.Second, func(context.Context) error { return nil })
	return nil
}

// A delayed send is made when due, in the chat's order, and can be
// cancelled before.
func TestSendAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startProcess(t).run(t)
		e, ctx := p.e, context.Background()
		if _, err := e.SendAfter(ctx, 10*time.Minute, p.mem.Name(), dm, platform.TextMessage("later")); err != nil {
			t.Fatal(err)
		}
		id, err := e.SendAfter(ctx, 5*time.Minute, p.mem.Name(), dm, platform.TextMessage("cancelled"))
		if err != nil {
			t.Fatal(err)
		}
		pending, err := e.Scheduled(ctx)
		if err != nil || len(pending) != 2 || !pending[id].Equal(time.Now().Add(5*time.Minute)) {
			t.Fatalf("Scheduled = %v, %v", pending, err)
		}
		if err := e.CancelSend(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := e.CancelSend(ctx, id); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("a second CancelSend: %v; want ErrStateNotFound", err)
		}
		if _, err := e.SendAt(ctx, time.Now().Add(-time.Minute), p.mem.Name(), dm, platform.TextMessage("past")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := p.mem.Texts(dm.ID); !slices.Equal(got, []string{"past"}) {
			t.Fatalf("at once the chat got %q", got)
		}
		time.Sleep(10*time.Minute + time.Second)
		if got := p.mem.Texts(dm.ID); !slices.Equal(got, []string{"past", "later"}) {
			t.Fatalf("the chat got %q", got)
		}
		if sent := p.mem.Sent(dm.ID); sent[1].At.Sub(sent[0].At) != 10*time.Minute {
			t.Errorf("sent %v after the first; want 10m", sent[1].At.Sub(sent[0].At))
		}
		if pending, _ := e.Scheduled(ctx); len(pending) != 0 {
			t.Errorf("still scheduled: %v", pending)
		}

		for _, tc := range []struct {
			name     string
			platform string
			chat     platform.Chat
			msg      platform.OutboundMessage
			want     error
		}{
			{"no chat", p.mem.Name(), platform.Chat{}, platform.TextMessage("x"), engine.ErrNoChat},
			{"unknown adapter", "nope", dm, platform.TextMessage("x"), engine.ErrNoSender},
			{"empty message", p.mem.Name(), dm, platform.OutboundMessage{}, platform.ErrInvalidMessage},
		} {
			if _, err := e.SendAfter(ctx, time.Minute, tc.platform, tc.chat, tc.msg); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v; want %v", tc.name, err, tc.want)
			}
		}
	})
}

// A delayed send outlives the process that scheduled it when the store
// does: one due while no process ran is made at the next start; and of
// processes sharing the store, one makes it.
func TestSendAtSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := state.NewMemoryStore()
		ctx := context.Background()
		p := startProcess(t, engine.WithScheduleStore(store)).run(t)
		if _, err := p.e.SendAfter(ctx, time.Hour, p.mem.Name(), dm, platform.TextMessage("tea")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		p.stop()
		time.Sleep(2 * time.Hour)
		var ps []*process
		for range 3 {
			ps = append(ps, startProcess(t, engine.WithScheduleStore(store)).run(t))
		}
		time.Sleep(time.Minute)
		var got []string
		for _, p := range ps {
			p.stop()
			got = append(got, p.mem.Texts(dm.ID)...)
		}
		if !slices.Equal(got, []string{"tea"}) {
			t.Fatalf("the processes sent %q; want one tea", got)
		}
	})
}

// failingDeletes is a store whose next Delete fails, as a crash between a
// delayed send and its removal from the schedule would leave it.
type failingDeletes struct {
	*state.MemoryStore
	fail atomic.Int32
}

func (s *failingDeletes) Delete(ctx context.Context, key string, rev uint64) error {
	if s.fail.Add(-1) >= 0 {
		return errors.New("store unreachable")
	}
	return s.MemoryStore.Delete(ctx, key, rev)
}

// With a journal, a delayed send taken again after its process stopped
// between sending it and removing it from the schedule — once its claim's
// lease ran out — is no second send: the journal knows its id.
func TestSendAtRepeatedIsSentOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &failingDeletes{MemoryStore: state.NewMemoryStore()}
		store.fail.Store(1)
		j := newIDJournal()
		ctx := context.Background()
		p1 := startProcess(t, engine.WithScheduleStore(store), engine.WithJournal(journal.NewLocal(j))).run(t)
		if _, err := p1.e.SendAfter(ctx, time.Minute, p1.mem.Name(), dm, platform.TextMessage("tea")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute + time.Second)
		p1.stop()
		if store.Len() != 1 {
			t.Fatalf("the schedule holds %d entries; want the one not removed", store.Len())
		}
		p2 := startProcess(t, engine.WithScheduleStore(store), engine.WithJournal(journal.NewLocal(j))).run(t)
		time.Sleep(3 * time.Minute) // the first claim's lease: the handler timeout and a minute
		p2.stop()
		if got := append(p1.mem.Texts(dm.ID), p2.mem.Texts(dm.ID)...); !slices.Equal(got, []string{"tea"}) {
			t.Fatalf("sent %q; want one tea", got)
		}
		if n := len(j.journaled()); n != 1 {
			t.Fatalf("journaled %d sends; want 1", n)
		}
		if store.Len() != 0 {
			t.Fatalf("the schedule still holds %d entries", store.Len())
		}
	})
}

// A delayed send the dispatcher refuses (the chat's queue is full) is
// tried again at the next poll, not lost.
func TestSendAtRefusedIsTriedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startProcess(t, engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1})).run(t)
		p.mem.SlowNext(dm.ID, time.Minute)
		p.e.Send(p.mem.Name(), dm, platform.TextMessage("slow"))
		synctest.Wait() // running
		if _, err := p.e.Send(p.mem.Name(), dm, platform.TextMessage("queued")).Result(); !errors.Is(err, future.ErrNotReady) {
			t.Fatalf("the second send: %v", err)
		}
		if _, err := p.e.SendAfter(context.Background(), time.Second, p.mem.Name(), dm, platform.TextMessage("delayed")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		if got := p.mem.Texts(dm.ID); !slices.Equal(got, []string{"slow", "queued", "delayed"}) {
			t.Fatalf("the chat got %q", got)
		}
		if sent := p.mem.Sent(dm.ID); sent[2].At.Sub(sent[1].At) > engine.DefaultSchedulePoll {
			t.Errorf("the delayed send came %v after the queue had room; want within a poll", sent[2].At.Sub(sent[1].At))
		}
	})
}
