package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// A send made before Run took up what the journal held — a bot's "I'm
// up" notice right after `go e.Run(ctx)` — is made once: recorded and
// made at once, it would be in the journal when Run reads it, and taken up
// a second time. Run makes it after what it took up, its Future then
// resolved.
func TestSendBeforeRunMadeOnce(t *testing.T) {
	parallel(t, time.Second)
	ctx := ctxFor(t)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	chat := memory.Private("46")
	mem.SlowNext(chat.ID, 300*time.Millisecond) // in flight while Run reads the journal
	first := e.Send(mem.Name(), chat, platform.TextMessage("up"))
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	second := e.Send(mem.Name(), chat, platform.TextMessage("and running"))
	for _, f := range []interface {
		Wait(context.Context) (platform.SendResult, error)
	}{first, second} {
		if res, err := f.Wait(ctx); err != nil || res.Duplicate {
			t.Fatalf("a send made before Run ran: %+v, %v", res, err)
		}
	}
	if _, err := e.Send(mem.Name(), chat, platform.TextMessage("after")).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mem.Texts(chat.ID); !slices.Equal(got, []string{"up", "and running", "after"}) {
		t.Fatalf("the chat got %q; want each send once, in order", got)
	}
	stopBot(ctx, t, srv, e, done)
}

// Shutdown without Run resolves the sends made before it.
func TestSendBeforeRunResolvedByShutdown(t *testing.T) {
	parallel(t, time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	f := e.Send(mem.Name(), memory.Private("47"), platform.TextMessage("never"))
	if err := e.Shutdown(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctxFor(t)); err == nil {
		t.Fatal("a send held for a Run that never came was resolved without an error")
	}
}
