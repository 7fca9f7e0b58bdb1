package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/internal/natstest"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
	"github.com/nats-io/nats.go"
)

// startNamedBot starts a bot on an embedded journal in dir whose /ready
// answers "ready", and waits for that answer: Run runs.
func startNamedBot(ctx context.Context, t *testing.T, dir string, mem *memory.Adapter, opts ...engine.Option) (*server, *engine.Engine, chan error) {
	t.Helper()
	srv := startServer(t, dir, embedded.Config{})
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{}))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.OnCommand("ready", func(c *engine.Context) error {
		c.ReplyText("ready")
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	ready := memory.Private("ready")
	mem.Emit(platform.Event{ID: time.Now().String(), Platform: mem.Name(), Kind: platform.EventMessage, Chat: ready,
		From: memory.User(ready.ID, "Ann"), Text: "/ready"})
	if _, err := mem.WaitSent(ctx, ready.ID, 1); err != nil {
		t.Fatal(err)
	}
	return srv, e, done
}

// A send named with engine.SendID is made once however often it is made
// again within the duplicate window, also after the process — and the
// embedded server with it — started again: a server started again knows
// only the ids of the messages it still holds, and the first send's was
// removed once delivered, so its delivered mark is what tells.
func TestSendIDOnceAcrossServerRestart(t *testing.T) {
	parallel(t, time.Second)
	ctx := ctxFor(t)
	dir := t.TempDir()
	chat := memory.Private("42")
	ship := func(e *engine.Engine, mem *memory.Adapter) (platform.SendResult, error) {
		return e.Send(mem.Name(), chat, platform.TextMessage("Your order shipped"), engine.SendID("order-42-shipped")).Wait(ctx)
	}

	mem := memory.New()
	srv, e, done := startNamedBot(ctx, t, dir, mem)
	first, err := ship(e, mem)
	if err != nil || first.Duplicate {
		t.Fatalf("the first send: %+v, %v", first, err)
	}
	stopBot(ctx, t, srv, e, done)

	mem2 := memory.New()
	srv, e, done = startNamedBot(ctx, t, dir, mem2)
	again, err := ship(e, mem2)
	if err != nil || !again.Duplicate || again.MessageID != first.MessageID {
		t.Errorf("made again after the restart: %+v, %v; want the first's result (message %s), Duplicate set", again, err, first.MessageID)
	}
	if _, err := e.Send(mem2.Name(), chat, platform.TextMessage("after")).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mem2.Texts(chat.ID); !slices.Equal(got, []string{"after"}) {
		t.Errorf("after the restart the chat got %q; want only the message sent after (the named one was made before)", got)
	}
	stopBot(ctx, t, srv, e, done)
}

// A dead letter replayed and delivered is not sent again by a replay of
// it after the process started again — a crash right after the replay
// left it in the store (here: restored by hand), or the store of another
// process listed it: its replay's delivered mark tells, where the
// restarted server no longer knows the replay's id.
func TestReplayOnceAcrossServerRestart(t *testing.T) {
	parallel(t, time.Second)
	ctx := ctxFor(t)
	dir := t.TempDir()
	chat := memory.Private("43")

	mem := memory.New()
	srv, e, done := startNamedBot(ctx, t, dir, mem)
	e.DeadLetterStore().Add(sender.DeadLetter{
		Request:  platform.SendRequest{Platform: mem.Name(), Target: chat, Message: platform.TextMessage("letter")},
		Attempts: 3, Err: errors.New("timeout"), At: time.Now(),
	})
	letters := e.DeadLetters()
	if len(letters) != 1 {
		t.Fatalf("the store holds %+v; want the letter", letters)
	}
	if n, err := e.ReplayDeadLetters(ctx); n != 1 || err != nil {
		t.Fatalf("replayed %d: %v", n, err)
	}
	if _, err := mem.WaitSent(ctx, chat.ID, 1); err != nil {
		t.Fatal(err)
	}
	stopBot(ctx, t, srv, e, done)

	mem2 := memory.New()
	srv, e, done = startNamedBot(ctx, t, dir, mem2)
	if got := e.DeadLetters(); len(got) != 0 {
		t.Fatalf("the restarted bot holds %+v; want no letter (it was replayed)", got)
	}
	e.DeadLetterStore().Restore(letters)
	if _, err := e.ReplayDeadLetters(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Send(mem2.Name(), chat, platform.TextMessage("after")).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mem2.Texts(chat.ID); !slices.Equal(got, []string{"after"}) {
		t.Errorf("after the restart the chat got %q; want only the message sent after (the letter was delivered before)", got)
	}
	if got := e.DeadLetters(); len(got) != 0 {
		t.Errorf("the store still holds %+v", got)
	}
	stopBot(ctx, t, srv, e, done)
}

// The same in several processes: a named send made again after the NATS
// server started again is found by its delivered mark, which the gateway
// wrote, and not made a second time.
func TestSharedSendIDOnceAcrossServerRestart(t *testing.T) {
	parallel(t, 3*time.Second)
	ns := natstest.Start(t, natstest.Options{})
	connect := func() (*nats.Conn, error) { return ns.Connect() } // reconnects across the restart
	mem := memory.New()
	a := startMemberOn(t, connect, "a", func(*cluster.Shared) platform.Adapter { return mem })
	waitFor(t, "a to lead", func() bool { return len(a.j.Stats().Leading) == 1 })
	ctx := ctxFor(t)
	chat := memory.Private("44")
	ship := func() (platform.SendResult, error) {
		return a.e.Send(mem.Name(), chat, platform.TextMessage("Your order shipped"), engine.SendID("order-44-shipped")).Wait(ctx)
	}
	first, err := ship()
	if err != nil || first.Duplicate {
		t.Fatalf("the first send: %+v, %v", first, err)
	}

	ns.Stop()
	ns.Restart()
	var again platform.SendResult
	waitFor(t, "the send made again to be answered", func() bool {
		again, err = ship() // refused while the member connects again
		return err == nil
	})
	if !again.Duplicate || again.MessageID != first.MessageID {
		t.Errorf("made again after the restart: %+v; want the first's result (message %s), Duplicate set", again, first.MessageID)
	}
	if _, err := a.e.Send(mem.Name(), chat, platform.TextMessage("after")).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mem.Texts(chat.ID); !slices.Equal(got, []string{"Your order shipped", "after"}) {
		t.Errorf("the chat got %q; want the named send once, then the message sent after", got)
	}
}

// A named send refused because its chat's queue is full is refused before
// its record is written: made again under its id once there is room, it
// is made, not taken for a duplicate of the one refused.
func TestRefusedNamedSendMadeOnRetry(t *testing.T) {
	parallel(t, time.Second)
	ctx := ctxFor(t)
	mem := memory.New()
	srv, e, done := startNamedBot(ctx, t, t.TempDir(), mem, engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1}))
	chat := memory.Private("45")
	mem.SlowNext(chat.ID, 2*time.Second) // the first send takes its time
	slow := e.Send(mem.Name(), chat, platform.TextMessage("slow"))
	waitFor(t, "the first send to run", func() bool { return e.Stats().Outbound.Running == 1 })
	e.Send(mem.Name(), chat, platform.TextMessage("queued")) // the queue is full
	if _, err := e.Send(mem.Name(), chat, platform.TextMessage("named"), engine.SendID("n-45")).Wait(ctx); !errors.Is(err, engine.ErrQueueFull) {
		t.Fatalf("the named send to a full chat = %v; want ErrQueueFull", err)
	}
	if _, err := slow.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.WaitSent(ctx, chat.ID, 2); err != nil { // the queue is empty
		t.Fatal(err)
	}
	res, err := e.Send(mem.Name(), chat, platform.TextMessage("named"), engine.SendID("n-45")).Wait(ctx)
	if err != nil || res.Duplicate {
		t.Fatalf("the named send made again once there was room: %+v, %v; want it made", res, err)
	}
	if _, err := mem.WaitSent(ctx, chat.ID, 3); err != nil {
		t.Fatal(err)
	}
	if got := mem.Texts(chat.ID); !slices.Equal(got, []string{"slow", "queued", "named"}) {
		t.Fatalf("the chat got %q", got)
	}
	stopBot(ctx, t, srv, e, done)
}

// In several processes a handler's send goes to the gateway through OUT,
// where no queue refuses it: it never waits for room in this process's
// queue (which the gateway fills past its bound with the account's sends).
func TestSharedRepliesDoNotWaitForRoom(t *testing.T) {
	parallel(t, 3*time.Second)
	ns := natstest.Start(t, natstest.Options{})
	connect := func() (*nats.Conn, error) { return ns.Connect() }
	mem := memory.New()
	a := startMemberOn(t, connect, "a", func(*cluster.Shared) platform.Adapter { return mem },
		engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 4}),
		engine.WithRateLimit("memory", sender.RateLimitConfig{PerChat: 2, PerChatBurst: 1}),
		engine.WithHandlerTimeout(2*time.Second))
	waitFor(t, "a to lead", func() bool { return len(a.j.Stats().Leading) == 1 })
	waited := make(chan time.Duration, 1)
	a.e.OnCommand("ping", func(c *engine.Context) error {
		start := time.Now()
		c.ReplyText("pong")
		waited <- time.Since(start)
		return nil
	})
	chat := memory.Private("77")
	for i := range 12 {
		a.e.Send(mem.Name(), chat, platform.TextMessage(fmt.Sprint("note ", i)))
	}
	waitFor(t, "the gateway to hold the notes past the chat's bound", func() bool { return a.e.Stats().Outbound.Queued > 4 })
	mem.Emit(platform.Event{ID: "p1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User("u", "U"), Text: "/ping"})
	if d := <-waited; d > time.Second {
		t.Errorf("a reply no queue can refuse waited %v for room", d)
	}
	if _, err := mem.WaitSent(ctxFor(t), chat.ID, 13); err != nil {
		t.Fatal(err)
	}
	if got := a.e.Stats().RoomWaits; got != 0 {
		t.Errorf("%d waits for room; want none", got)
	}
}
