package plugins_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/plugins/note"
	"github.com/heraldbot/herald/plugins/remind"
)

// durableOptions starts an embedded NATS server in dir and returns the
// options of a durable bot on it, as the example bot makes them, and a
// function that stops the server.
func durableOptions(t *testing.T, dir string) ([]engine.Option, func()) {
	t.Helper()
	srv, err := embedded.Start(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		t.Fatal(err)
	}
	stop := func() {
		nc.Close()
		srv.Shutdown()
	}
	ctx := testContext(t)
	j, err := cluster.Open(ctx, nc, cluster.Config{})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	sessions, err := cluster.NewSessionStore(ctx, nc, cluster.Config{})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	schedule, err := cluster.NewScheduleStore(ctx, nc, cluster.Config{})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	return []engine.Option{engine.WithJournal(j), engine.WithSessionStore(sessions), engine.WithScheduleStore(schedule),
		engine.WithSchedulePoll(100 * time.Millisecond)}, stop
}

// In durable mode, notes and reminders survive a restart of the bot and
// of its NATS server.
func TestNoteAndRemindDurable(t *testing.T) {
	dir := t.TempDir()
	ann, dm := memory.User("1", "Ann"), memory.Private("1")

	opts, stopServer := durableOptions(t, dir)
	e, mem := runBot(t, opts, note.New(), remind.New())
	say(t, mem, dm, ann, "/note add survives")
	if got := say(t, mem, dm, ann, "/remind 2s tea"); got != remind.Ack("2s", "tea") {
		t.Fatalf("/remind: %q", got)
	}
	if err := e.Shutdown(testContext(t)); err != nil {
		t.Fatal(err)
	}
	stopServer()

	opts, stopServer = durableOptions(t, dir)
	t.Cleanup(stopServer) // after the bot's Run ended: cleanups run last first
	_, mem = runBot(t, opts, note.New(), remind.New())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent, err := mem.WaitSent(ctx, dm.ID, 1)
	if err != nil || sent[0].Message.Text != "⏰ tea" {
		t.Fatalf("after the restart: %+v, %v; want the reminder", sent, err)
	}
	if got := say(t, mem, dm, ann, "/note list"); got != "Your notes:\n1. survives" {
		t.Fatalf("/note list after the restart: %q", got)
	}
	time.Sleep(300 * time.Millisecond) // a second reminder would come by now
	if got := mem.Texts(dm.ID); !slices.Equal(got, []string{"⏰ tea", "Your notes:\n1. survives"}) {
		t.Fatalf("after the restart the chat got %q", got)
	}
}
