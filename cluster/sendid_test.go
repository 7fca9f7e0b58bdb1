package cluster_test

import (
	"context"
	"errors"
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
func startNamedBot(ctx context.Context, t *testing.T, dir string, mem *memory.Adapter) (*server, *engine.Engine, chan error) {
	t.Helper()
	srv := startServer(t, dir, embedded.Config{})
	e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{})))
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
