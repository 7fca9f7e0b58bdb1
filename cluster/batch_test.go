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
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// RecordEvents records a batch as RecordEvent records each: in order, a
// duplicate told in place (of an event before the batch, and of one
// earlier in it), an event whose file makes it too large for a message
// written through its object in its place, one over the journal's bound
// refused — and its chat's later events not written, so that they never
// come before it — while other chats go on; what it recorded comes back
// from Pending in order within each chat, the files whole, and the
// caller's events keep their files' bytes.
func TestRecordEventsInOrder(t *testing.T) {
	parallel(t, 2*time.Second)
	ctx := ctxFor(t)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	j := open(t, srv.nc, cluster.Config{MaxRecord: 4 << 20})
	if _, _, err := j.RecordEvent(ctx, event("old", "a", "before")); err != nil {
		t.Fatal(err)
	}
	withFile := func(ev platform.Event, size int) platform.Event {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		ev.Attachments = []platform.Attachment{{Kind: platform.AttachDocument, FileName: "f.bin", Data: data}}
		return ev
	}
	large := withFile(event("large", "b", "large"), 2<<20) // over a message: an object
	over := withFile(event("over", "c", "over"), 5<<20)    // over MaxRecord
	small := withFile(event("2", "b", "two"), 100)
	evs := []platform.Event{event("1", "a", "one"), event("old", "a", "again"), large, small,
		over, event("1", "a", "one again"), event("c2", "c", "after the refused one"), event("3", "", "three")}
	res := j.RecordEvents(ctx, evs)
	if len(res) != len(evs) {
		t.Fatalf("%d outcomes for %d events", len(res), len(evs))
	}
	wantDup := []bool{false, true, false, false, false, true, false, false}
	for i, r := range res {
		switch {
		case i == 4:
			if !errors.Is(r.Err, journal.ErrUnrecordable) || !platform.IsPermanent(r.Err) {
				t.Errorf("event over the bound: %v; want a permanent ErrUnrecordable", r.Err)
			}
		case i == 6:
			if r.Err == nil || r.Record != nil {
				t.Errorf("an event after its chat's refused one: %+v; want not written", r)
			}
		case r.Err != nil:
			t.Errorf("event %d: %v", i, r.Err)
		case r.Duplicate != wantDup[i]:
			t.Errorf("event %d: duplicate %v; want %v", i, r.Duplicate, wantDup[i])
		case !r.Duplicate && r.Record == nil:
			t.Errorf("event %d: no record", i)
		}
	}
	for _, i := range []int{2, 3, 4} {
		if want := withFile(evs[i], len(evs[i].Attachments[0].Data)); !slices.Equal(evs[i].Attachments[0].Data, want.Attachments[0].Data) {
			t.Fatalf("the caller's event %d lost its file's bytes", i)
		}
	}
	p, err := j.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// In order within each chat (a chat's events go out one wave each).
	byChat := map[string][]string{}
	files := map[string][]byte{}
	for _, in := range p.Events {
		byChat[in.Event.Chat.ID] = append(byChat[in.Event.Chat.ID], in.Event.ID)
		if len(in.Event.Attachments) > 0 {
			files[in.Event.ID] = in.Event.Attachments[0].Data
		}
	}
	for chat, want := range map[string][]string{"a": {"old", "1"}, "b": {"large", "2"}, "": {"3"}} {
		if got := byChat[chat]; !slices.Equal(got, want) {
			t.Errorf("pending events of chat %q: %v; want %v", chat, got, want)
		}
	}
	for _, i := range []int{2, 3} {
		if got, want := files[evs[i].ID], evs[i].Attachments[0].Data; !slices.Equal(got, want) {
			t.Errorf("event %q came back with a file of %d bytes; want its %d bytes", evs[i].ID, len(got), len(want))
		}
	}
}

// An engine on the journal takes a batch of events with HandleEvents:
// each handled once, each chat's replies in order, and nothing left in the
// journal once all are sent.
func TestHandleEventsRecorded(t *testing.T) {
	parallel(t, 2*time.Second)
	ctx := ctxFor(t)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	e.OnMessage(func(c *engine.Context) error {
		c.ReplyText(c.Text())
		return nil
	})
	// Running (the journal's Recover done) once its first event, emitted
	// through the adapter, is answered.
	ready := memory.Private("ready")
	mem.Emit(platform.Event{ID: "ready", Platform: mem.Name(), Kind: platform.EventMessage, Chat: ready,
		From: memory.User(ready.ID, "U"), Text: "ready"})
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	if _, err := mem.WaitSent(ctx, ready.ID, 1); err != nil {
		t.Fatal(err)
	}
	const n, chats = 120, 4
	var evs []platform.Event
	want := map[string][]string{}
	for i := range n {
		chat := memory.Private(fmt.Sprint("c", i%chats))
		evs = append(evs, platform.Event{ID: fmt.Sprint("e", i), Platform: mem.Name(), Kind: platform.EventMessage,
			Chat: chat, From: memory.User(chat.ID, "U"), Text: fmt.Sprint(i)})
		want[chat.ID] = append(want[chat.ID], fmt.Sprint(i))
	}
	for part := range slices.Chunk(evs, 50) {
		if k, err := e.HandleEvents(part); k != len(part) || err != nil {
			t.Fatalf("HandleEvents = %d, %v; want %d, nil", k, err, len(part))
		}
	}
	for e.Stats().Sends.Delivered < n+1 || e.Stats().Journal != (journal.Stats{}) {
		select {
		case <-ctx.Done():
			t.Fatalf("not every reply was sent and done: %+v", e.Stats())
		case <-time.After(10 * time.Millisecond):
		}
	}
	for chat, texts := range want {
		var got []string
		for _, m := range mem.Sent(chat) {
			got = append(got, m.Message.Text)
		}
		if !slices.Equal(got, texts) {
			t.Errorf("chat %s got %v; want %v", chat, got, texts)
		}
	}
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
