package plugins_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/note"
)

// runBot runs an engine with plugins on a fresh memory adapter until the
// test ends.
func runBot(t *testing.T, opts []engine.Option, plugins ...engine.Plugin) (*engine.Engine, *memory.Adapter) {
	t.Helper()
	mem := memory.New()
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(mem)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(plugins...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return e, mem
}

// say sends text from user in chat and waits for the n-th reply there.
func say(t *testing.T, mem *memory.Adapter, chat platform.Chat, user platform.User, text string) string {
	t.Helper()
	n := len(mem.Sent(chat.ID)) + 1
	mem.Say(chat, user, text)
	sent, err := mem.WaitSent(testContext(t), chat.ID, n)
	if err != nil {
		t.Fatalf("%s: no reply: %v", text, err)
	}
	return sent[n-1].Message.Text
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// /note keeps each user's notes, shared by the chats they write in.
func TestNote(t *testing.T) {
	_, mem := runBot(t, nil, note.New())
	ann, bob := memory.User("1", "Ann"), memory.User("2", "Bob")
	dm, group := memory.Private("1"), memory.Group("g")
	for _, step := range []struct {
		chat platform.Chat
		user platform.User
		in   string
		want string
	}{
		{dm, ann, "/note", note.Usage},
		{dm, ann, "/note list", note.Empty},
		{dm, ann, "/note add", note.Usage},
		{dm, ann, "/note add buy  milk", "Noted: you have 1 note."},
		{group, ann, "/note ADD call Bob", "Noted: you have 2 notes."},
		{group, bob, "/note list", note.Empty},
		{group, ann, "/note list", "Your notes:\n1. buy  milk\n2. call Bob"},
		{dm, ann, "/note add " + strings.Repeat("x", note.MaxLen+1), note.TooLong},
		{dm, ann, "/note frobnicate", note.Usage},
		{dm, ann, "/note clear", note.Cleared},
		{dm, ann, "/note list", note.Empty},
	} {
		if got := say(t, mem, step.chat, step.user, step.in); got != step.want {
			t.Errorf("%s says %q: got %q; want %q", step.user.Name, step.in, got, step.want)
		}
	}
}

// A user keeps at most note.MaxNotes notes.
func TestNoteFull(t *testing.T) {
	_, mem := runBot(t, nil, note.New())
	ann, dm := memory.User("1", "Ann"), memory.Private("1")
	for i := range note.MaxNotes {
		mem.Say(dm, ann, fmt.Sprint("/note add n", i))
	}
	if _, err := mem.WaitSent(testContext(t), dm.ID, note.MaxNotes); err != nil {
		t.Fatal(err)
	}
	if got := say(t, mem, dm, ann, "/note add one more"); got != note.Full {
		t.Fatalf("note %d: %q; want %q", note.MaxNotes+1, got, note.Full)
	}
	list := say(t, mem, dm, ann, "/note list")
	if lines := strings.Split(list, "\n"); len(lines) != note.MaxNotes+1 || !slices.Contains(lines, "50. n49") {
		t.Fatalf("list has %d lines", len(lines))
	}
}

// Notes live in the session store: a new engine on the same store (a
// restart, with a store that lasts) has them.
func TestNoteKeptInTheSessionStore(t *testing.T) {
	store := state.NewMemoryStore()
	ann, dm := memory.User("1", "Ann"), memory.Private("1")
	e, mem := runBot(t, []engine.Option{engine.WithSessionStore(store)}, note.New())
	say(t, mem, dm, ann, "/note add kept")
	if err := e.Shutdown(testContext(t)); err != nil {
		t.Fatal(err)
	}
	_, mem = runBot(t, []engine.Option{engine.WithSessionStore(store)}, note.New())
	if got := say(t, mem, dm, ann, "/note list"); got != "Your notes:\n1. kept" {
		t.Fatalf("after a restart: %q", got)
	}
}
