package onebot

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// TestHandleSerialisedAndOrdered has three bots send events at once: handle
// is never entered twice at the same time, each bot's events arrive in the
// order it sent them, and none is lost.
func TestHandleSerialisedAndOrdered(t *testing.T) {
	const bots, perBot = 3, 100
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		inside     atomic.Int32
		overlap    atomic.Bool
		mu         sync.Mutex
		last       = map[string]int{}
		total      int
		outOfOrder []string
		all        = make(chan struct{})
	)
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
			if inside.Add(1) != 1 {
				overlap.Store(true)
			}
			defer inside.Add(-1)
			time.Sleep(10 * time.Microsecond) // widen the window for an overlap
			n, _ := strconv.Atoi(ev.MessageID)
			mu.Lock()
			defer mu.Unlock()
			if n <= last[ev.Chat.ID] {
				outOfOrder = append(outOfOrder, ev.Chat.ID+"#"+ev.MessageID)
			}
			last[ev.Chat.ID] = n
			total++
			if total == bots*perBot {
				close(all)
			}
			return nil
		}})
	}()
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	h := &harness{t: t, a: a}
	waitFor(t, "Run", func() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.acceptingLocked() })
	u := h.reverseServer()
	peers := make([]*peer, bots)
	for i := range bots {
		peers[i] = h.connect(u, int64(i+1))
	}
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			for n := 1; n <= perBot; n++ {
				p.sendJSON(privateMsg(int64(i+1), 42, int64(n), "x"))
			}
		})
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d events delivered", total, bots*perBot)
	}
	if overlap.Load() {
		t.Fatal("handle called concurrently")
	}
	if len(outOfOrder) > 0 {
		t.Fatalf("out of order: %v", outOfOrder)
	}
	if len(last) != bots {
		t.Fatalf("chats = %v", last)
	}
}
