package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/internal/race"
	"github.com/heraldbot/herald/platform"
)

// Ten thousand conversations waiting on the embedded journal survive a
// clean restart of the bot and its server, and all of them finish: each
// answer after the restart continues its conversation where it waited,
// and no question is asked again. Under the race detector, which makes
// each conversation cost about eight times as much CPU, 2,200 (still more
// than the 1,000 events a partition holds in hand and the 2,048 handled
// marks a journal reads at its start); CI runs the full size without it
// too.
func TestManyConversationsAcrossRestart(t *testing.T) {
	parallel(t, 14*time.Second)
	n := 10000
	if race.Enabled {
		n = 2200
	}
	if testing.Short() {
		n = 500
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		srv := startServer(t, dir, embedded.Config{})
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{})))
		if err != nil {
			t.Fatal(err)
		}
		e.OnCommand("ask", func(c *engine.Context) error {
			answer, err := c.Prompt(c.Context(), platform.TextMessage("Your name?"))
			if err != nil {
				return err
			}
			c.ReplyText("Hello, " + answer.Text + "!")
			return nil
		})
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		return srv, e, done
	}
	stop := func(srv *server, e *engine.Engine, done chan error) {
		t.Helper()
		if err := e.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		srv.stop()
	}
	chat := func(i int) string { return strconv.Itoa(i) }

	mem := memory.New()
	srv, e, done := start(mem)
	for i := range n {
		mem.Say(memory.Private(chat(i)), memory.User(chat(i), "U"), "/ask")
	}
	for i := range n {
		if _, err := mem.WaitSent(ctx, chat(i), 1); err != nil {
			// Received below n says the engine refused events (the memory
			// adapter does not offer them again, as a platform would).
			t.Fatalf("chat %d: %v (engine: %+v)", i, err, e.Stats())
		}
	}
	stop(srv, e, done)

	mem2 := memory.New()
	srv2, e2, done2 := start(mem2)
	for i := range n {
		mem2.Say(memory.Private(chat(i)), memory.User(chat(i), "U"), "U"+chat(i))
	}
	for i := range n {
		sent, err := mem2.WaitSent(ctx, chat(i), 1)
		if err != nil {
			t.Fatalf("chat %d: %v (engine: %+v)", i, err, e2.Stats())
		}
		if want := fmt.Sprintf("Hello, U%d!", i); len(sent) != 1 || sent[0].Message.Text != want {
			t.Fatalf("chat %d after the restart got %q; want only %q", i, mem2.Texts(chat(i)), want)
		}
	}
	stop(srv2, e2, done2)
}
