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
// Run runs, and it implements platform.Drainer.
type connAdapter struct {
	*memory.Adapter
	mu        sync.Mutex
	running   bool
	receiving bool
	stops     int
}

func (a *connAdapter) Run(ctx context.Context, handle func(platform.Event)) error {
	a.mu.Lock()
	a.running, a.receiving = true, true
	a.mu.Unlock()
	err := a.Adapter.Run(ctx, func(ev platform.Event) {
		a.mu.Lock()
		ok := a.receiving
		a.mu.Unlock()
		if ok {
			handle(ev)
		}
	})
	a.mu.Lock()
	a.running = false
	a.mu.Unlock()
	return err
}

func (a *connAdapter) StopReceiving() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.receiving = false
	a.stops++
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

var _ platform.Drainer = (*connAdapter)(nil)

// Run keeps a Drainer's connections open until the pending replies were
// sent: a /count whose replies are still queued when Run's context ends is
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
		t.Fatalf("StopReceiving called %d times, running %v", conn.stops, conn.running)
	}
}

// confirmingAdapter records what the engine answers for each event.
type confirmingAdapter struct {
	*memory.Adapter
	events  chan platform.Event
	answers chan error
}

func (a *confirmingAdapter) Run(context.Context, func(platform.Event)) error {
	return errors.New("Run called instead of RunConfirmed")
}

func (a *confirmingAdapter) RunConfirmed(ctx context.Context, handle func(platform.Event) error) error {
	for {
		select {
		case ev := <-a.events:
			a.answers <- handle(ev)
		case <-ctx.Done():
			return nil
		}
	}
}

var _ platform.ConfirmingAdapter = (*confirmingAdapter)(nil)

// A ConfirmingAdapter learns which events the engine refused.
func TestRunConfirmedReportsRefusals(t *testing.T) {
	a := &confirmingAdapter{Adapter: memory.New(), events: make(chan platform.Event), answers: make(chan error)}
	e, err := engine.New(engine.WithAdapter(a), engine.WithInboundQueueSize(1), engine.WithHandlerConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	e.OnMessage(func(*engine.Context) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
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
