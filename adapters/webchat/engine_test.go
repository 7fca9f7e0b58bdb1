package webchat_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/plugins/count"
	"github.com/heraldbot/herald/plugins/echo"
	"github.com/heraldbot/herald/plugins/help"
	"github.com/heraldbot/herald/plugins/ping"
)

// engineChat is the adapter run by a real engine.Engine, with the real
// plugins and the default sender chain, as the example bot runs it.
type engineChat struct {
	a *webchat.Adapter
	e *engine.Engine

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	runErr   error
}

// startEngine runs the adapter for cfg (on a free port of 127.0.0.1 unless
// cfg says otherwise) under an Engine with the ping, echo, count and help
// plugins; register, if not nil, adds handlers before Run. At cleanup it
// stops the engine and requires Run to return nil.
func startEngine(t *testing.T, cfg webchat.Config, register func(*engine.Engine) error) *engineChat {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	a, err := webchat.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e, err := engine.New(engine.WithAdapter(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(ping.New(), echo.New(), count.New(), help.New()); err != nil {
		t.Fatal(err)
	}
	if register != nil {
		if err := register(e); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ec := &engineChat{a: a, e: e, cancel: cancel, done: make(chan error, 1)}
	go func() { ec.done <- e.Run(ctx) }()
	t.Cleanup(func() {
		if err := ec.stop(); err != nil {
			t.Errorf("Run = %v; want nil", err)
		}
	})
	select {
	case <-a.Ready():
	case err := <-ec.done:
		ec.done <- err
		t.Fatalf("Run: %v", err)
	case <-time.After(ioTimeout):
		t.Fatal("adapter not ready")
	}
	return ec
}

// stop ends Run and returns its error; later calls return the same.
func (ec *engineChat) stop() error {
	ec.stopOnce.Do(func() {
		ec.cancel()
		select {
		case ec.runErr = <-ec.done:
		case <-time.After(ioTimeout):
			ec.runErr = fmt.Errorf("Run did not return within %v", ioTimeout)
		}
	})
	return ec.runErr
}

// botTexts reads frames until n bot messages came and returns their texts;
// the echoes of users' messages in between are skipped.
func (c *client) botTexts(n int) ([]string, error) {
	var got []string
	for len(got) < n {
		f, err := c.tryRead()
		if err != nil {
			return got, fmt.Errorf("after %d of %d bot messages: %w", len(got), n, err)
		}
		switch {
		case f.Type == "echo":
		case f.Type == "message" && f.Message != nil && f.Message.Bot:
			got = append(got, f.Message.Text)
		default:
			return got, fmt.Errorf("after %d of %d bot messages: unexpected frame %+v", len(got), n, f)
		}
	}
	return got, nil
}

// TestEngine has private chats and the tabs of a room talk to the real
// plugins at once: each chat gets every reply exactly once and in order,
// and every tab of the room sees the same sequence.
func TestEngine(t *testing.T) {
	ec := startEngine(t, webchat.Config{}, nil)
	const privates, roomTabs, n = 6, 3, 5
	var tabs, room []*client
	for i := range privates {
		tabs = append(tabs, connect(t, ec.a, hello{Name: "user" + strconv.Itoa(i)}))
	}
	for i := range roomTabs {
		room = append(room, connect(t, ec.a, hello{Room: "lobby", Name: "member" + strconv.Itoa(i)}))
	}

	var wg sync.WaitGroup
	// Private chats: /ping and /count, then an /echo marker: nothing may
	// come between the last number and the marker.
	for i, c := range tabs {
		wg.Go(func() {
			marker := "end " + strconv.Itoa(i)
			for _, text := range []string{"/ping", "/count " + strconv.Itoa(n), "/echo " + marker} {
				if err := c.trySend(map[string]string{"type": "message", "text": text}); err != nil {
					t.Errorf("tab %d: %v", i, err)
					return
				}
			}
			got, err := c.botTexts(n + 2)
			if err != nil {
				t.Errorf("tab %d: %v", i, err)
				return
			}
			if !strings.HasPrefix(got[0], "pong") || !slices.Equal(got[1:n+1], counting(nil, n)) || got[n+1] != marker {
				t.Errorf("tab %d got %q; want pong, 1 … %d, %q", i, got, n, marker)
			}
		})
	}
	// The room: every tab sends /count at once. The room's events are
	// handled one at a time, and each /count queues all its replies, so
	// every tab sees 1 … n once per /count, in one order.
	for i, c := range room {
		wg.Go(func() {
			if err := c.trySend(map[string]string{"type": "message", "text": "/count " + strconv.Itoa(n)}); err != nil {
				t.Errorf("room tab %d: %v", i, err)
			}
		})
	}
	var want []string
	for range roomTabs {
		want = append(want, counting(nil, n)...)
	}
	for i, c := range room {
		wg.Go(func() {
			got, err := c.botTexts(len(want))
			if err != nil {
				t.Errorf("room tab %d: %v", i, err)
				return
			}
			if !slices.Equal(got, want) {
				t.Errorf("room tab %d got %q; want %q", i, got, want)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	room[0].say(t, "/echo end")
	for i, c := range room {
		got, err := c.botTexts(1)
		if err != nil || got[0] != "end" {
			t.Errorf("room tab %d: after the numbers got %q, %v; want the marker", i, got, err)
		}
	}

	// Run drains every reply before it returns.
	if err := ec.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	wantSends := privates*(n+2) + len(want) + 1
	st := ec.e.Stats()
	if st.Sends.Delivered != uint64(wantSends) || st.Sends.Retries != 0 || st.DeadLetters != 0 ||
		st.HandlerErrors != 0 || st.HandlerPanics != 0 || st.Dropped != 0 {
		t.Errorf("stats = %+v; want %d sends delivered at the first attempt and no failures", st, wantSends)
	}
}
