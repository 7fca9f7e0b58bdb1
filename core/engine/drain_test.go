package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// connAdapter imitates a WebSocket adapter: its Sender works only while
// Run runs, and Run keeps running after it stopped taking events.
type connAdapter struct {
	*memory.Adapter
	mu      sync.Mutex
	running bool
	stops   int // times Run saw Receiving close
}

func (a *connAdapter) Run(ctx context.Context, in platform.Inbound) error {
	a.mu.Lock()
	a.running = true
	a.mu.Unlock()
	go func() { // ends with Run's context
		select {
		case <-in.Receiving:
			a.mu.Lock()
			a.stops++
			a.mu.Unlock()
		case <-ctx.Done():
		}
	}()
	// The memory adapter stops taking events when Receiving closes; the
	// connection stays until ctx ends.
	err := a.Adapter.Run(ctx, in)
	<-ctx.Done()
	a.mu.Lock()
	a.running = false
	a.mu.Unlock()
	return err
}

func (a *connAdapter) Sender() platform.Sender {
	inner := a.Adapter.Sender()
	return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
		a.mu.Lock()
		up := a.running
		a.mu.Unlock()
		if !up {
			return platform.SendResult{}, platform.Permanent(errors.New("not connected"))
		}
		return inner.Send(ctx, req)
	})
}

// Run keeps an adapter's connections open until the pending replies were
// sent: it stops taking events when Run's context ends, and its Run's
// context ends once a /count whose replies were still queued was
// delivered in full.
func TestRunDrainsBeforeClosingConnections(t *testing.T) {
	conn := &connAdapter{Adapter: memory.New()}
	e, err := engine.New(engine.WithAdapter(conn), engine.WithSenderConfig(fastRetry))
	if err != nil {
		t.Fatal(err)
	}
	e.OnCommand("count", func(c *engine.Context) error {
		for _, s := range []string{"1", "2", "3", "4", "5"} {
			c.ReplyText(s)
		}
		return nil
	})
	for range 4 {
		conn.SlowNext(dm.ID, 20*time.Millisecond) // replies still queued at the stop
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	conn.Say(dm, ann, "/count")
	if _, err := conn.WaitSent(testCtx(t), dm.ID, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if got := conn.Texts(dm.ID); !slices.Equal(got, []string{"1", "2", "3", "4", "5"}) {
		t.Fatalf("delivered %q; want all five", got)
	}
	if st := e.Stats(); st.DeadLetters != 0 {
		t.Fatalf("%d dead letters", st.DeadLetters)
	}
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if conn.stops != 1 || conn.running {
		t.Fatalf("Receiving closed %d times before the connection ended, running %v", conn.stops, conn.running)
	}
}

// confirmingAdapter records what the engine answers for each event.
type confirmingAdapter struct {
	*memory.Adapter
	events  chan platform.Event
	answers chan error
}

func (a *confirmingAdapter) Run(ctx context.Context, in platform.Inbound) error {
	for {
		select {
		case ev := <-a.events:
			a.answers <- in.Handle(ev)
		case <-in.Receiving:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// An adapter learns which events the engine refused.
func TestHandleReportsRefusals(t *testing.T) {
	a := &confirmingAdapter{Adapter: memory.New(), events: make(chan platform.Event), answers: make(chan error)}
	e, err := engine.New(engine.WithAdapter(a), engine.WithInboundQueueSize(1), engine.WithHandlerConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	started, release := blockOnMessage(e)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	ev := msg(dm, ann, "x")
	a.events <- ev
	if err := <-a.answers; err != nil {
		t.Fatalf("first event refused: %v", err)
	}
	<-started
	a.events <- ev
	if err := <-a.answers; err != nil {
		t.Fatalf("second event refused: %v", err)
	}
	a.events <- ev
	if err := <-a.answers; !errors.Is(err, engine.ErrQueueFull) {
		t.Fatalf("third event: %v; want ErrQueueFull", err)
	}
	close(release)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}
