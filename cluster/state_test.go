package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/core/state/statetest"
	"github.com/heraldbot/herald/platform"
)

func sessionStore(t *testing.T, nc *nats.Conn, cfg cluster.Config) *cluster.StateStore {
	t.Helper()
	s, err := cluster.NewSessionStore(ctxFor(t), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scheduleStore(t *testing.T, nc *nats.Conn, cfg cluster.Config) *cluster.StateStore {
	t.Helper()
	s, err := cluster.NewScheduleStore(ctxFor(t), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStateStoreSuite(t *testing.T) {
	parallel(t, 4*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	n := 0
	statetest.Run(t, func(t *testing.T) state.Store {
		n++
		return sessionStore(t, srv.nc, cluster.Config{Bot: fmt.Sprint("suite", n)})
	}, statetest.Features{TTLUnit: time.Second})
}

// What a store holds survives a restart of the server, and is read by
// another connection (another process) as written.
func TestStateStoreAcrossRestart(t *testing.T) {
	parallel(t, 0)
	dir := t.TempDir()
	ctx := ctxFor(t)
	srv := startServer(t, dir, embedded.Config{})
	s := sessionStore(t, srv.nc, cluster.Config{})
	rev, err := s.Create(ctx, "chat/memory/1/count", []byte("41"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "chat/memory/1/count", []byte("42"), rev, time.Hour); err != nil {
		t.Fatal(err)
	}
	srv.stop()

	srv = startServer(t, dir, embedded.Config{})
	other, err := srv.s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s = sessionStore(t, other, cluster.Config{})
	v, _, err := s.Get(ctx, "chat/memory/1/count")
	if err != nil || string(v) != "42" {
		t.Fatalf("after a restart: %q, %v", v, err)
	}
}

// With the server gone, calls fail with the context's end or an error,
// and do not hang.
func TestStateStoreServerDown(t *testing.T) {
	parallel(t, 0)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	s := sessionStore(t, srv.nc, cluster.Config{})
	srv.s.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, _, err := s.Get(ctx, "k"); err == nil || errors.Is(err, state.ErrNotFound) {
		t.Fatalf("Get with the server down: %v", err)
	}
	if _, err := s.Create(ctx, "k", []byte("v"), 0); err == nil {
		t.Fatal("Create with the server down: no error")
	}
}

// Two engines — two processes — sharing the KV store update one user's
// state at once from many chats: compare and swap loses no update.
func TestSessionsSharedByProcesses(t *testing.T) {
	parallel(t, 0)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	key := engine.NewUserSession[int]("n", 0)
	const chats, each = 8, 5
	var engines []*engine.Engine
	for range 2 {
		nc, err := srv.s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		e, err := engine.New(engine.WithAdapter(memory.New()), engine.WithSessionStore(sessionStore(t, nc, cluster.Config{})))
		if err != nil {
			t.Fatal(err)
		}
		e.OnCommand("inc", func(c *engine.Context) error {
			_, err := key.Update(c, func(n *int) error { *n++; return nil })
			return err
		})
		engines = append(engines, e)
	}
	for i := range each {
		for c := range chats {
			for p, e := range engines {
				if err := e.HandleEvent(platform.Event{ID: fmt.Sprint(p, c, i), Platform: "memory", Kind: platform.EventMessage,
					Chat: memory.Private(fmt.Sprint(c)), From: memory.User("u", "U"), Text: "/inc"}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, e := range engines {
		if err := e.Shutdown(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		if n := e.Stats().HandlerErrors; n != 0 {
			t.Errorf("%d handler errors", n)
		}
	}
	n, err := key.Of(engines[0], "memory", "u").Get(ctxFor(t))
	if want := 2 * chats * each; err != nil || n != want {
		t.Fatalf("the user's count is %d, %v; want %d", n, err, want)
	}
}

// A delayed send scheduled by a bot that then stopped is made once by the
// bot's next run, two processes on the same server (a shared journal:
// one-process journals of one bot must never run at once, as each takes
// up every send the streams hold), one of which claims it.
func TestDelayedSendAcrossRestart(t *testing.T) {
	parallel(t, 3*time.Second)
	dir := t.TempDir()
	srv := startServer(t, dir, embedded.Config{})
	// The first bot schedules, and stops before the send is due.
	e, err := engine.New(engine.WithAdapter(memory.New()), engine.WithJournal(open(t, srv.nc, cluster.Config{})),
		engine.WithScheduleStore(scheduleStore(t, srv.nc, cluster.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SendAfter(ctxFor(t), time.Second, "memory", memory.Private("1"), platform.TextMessage("tea")); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	srv.stop()

	srv = startServer(t, dir, embedded.Config{})
	mem := memory.New() // the platform: the gateway of the two sends on it
	var stops []func()
	for _, name := range []string{"a", "b"} {
		nc, err := srv.s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		cfg := fast
		cfg.Node = name
		j, err := cluster.OpenShared(ctxFor(t), nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(j),
			engine.WithScheduleStore(scheduleStore(t, nc, cfg.Config)), engine.WithSchedulePoll(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		stops = append(stops, func() {
			if err := e.Shutdown(ctxFor(t)); err != nil {
				t.Error(err)
			}
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	if _, err := mem.WaitSent(ctxFor(t), "1", 1); err != nil {
		t.Fatalf("the delayed send: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // a second send would come by now
	for _, stop := range stops {
		stop()
	}
	if got := mem.Texts("1"); !slices.Equal(got, []string{"tea"}) {
		t.Fatalf("the processes sent %q; want one tea", got)
	}
}

func TestStateStoreRefusesBadBotName(t *testing.T) {
	parallel(t, 0)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	if _, err := cluster.NewSessionStore(ctxFor(t), srv.nc, cluster.Config{Bot: "a.b"}); err == nil {
		t.Fatal("a bot name with a dot: no error")
	}
}

// Two processes sharing the schedule bucket make each run of a job once
// between them.
func TestEveryOnceAcrossProcessesOnKV(t *testing.T) {
	parallel(t, 2*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	const interval = 300 * time.Millisecond
	var mu sync.Mutex
	var runs []time.Time
	var stops []func()
	start := time.Now()
	for range 2 {
		nc, err := srv.s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		e, err := engine.New(engine.WithAdapter(memory.New()), engine.WithScheduleStore(scheduleStore(t, nc, cluster.Config{})))
		if err != nil {
			t.Fatal(err)
		}
		e.Every("tick", interval, func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, time.Now())
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		stops = append(stops, func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(7*interval + interval/2)
	for _, stop := range stops {
		stop()
	}
	mu.Lock()
	defer mu.Unlock()
	// Counted from the first run to the last: the start of the processes
	// and their stop are not intervals the job could run in. A run late
	// on a loaded machine may skip a beat, never double one.
	n := len(runs)
	if n < 3 {
		t.Fatalf("%d runs in %v", n, time.Since(start))
	}
	beats := int((runs[n-1].Sub(runs[0])+interval/2)/interval) + 1 // runs due in the span
	t.Logf("%d runs, %d due", n, beats)
	if n > beats+1 || n < beats/2 {
		t.Fatalf("%d runs by two processes, %d due; want one per interval", n, beats)
	}
}
