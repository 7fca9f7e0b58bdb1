package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// Marks made at once are written together, fewer messages than marks, and
// each is read back — for the events given, and only for them.
func TestMarksGroupedAndReadBack(t *testing.T) {
	parallel(t, 0)
	ctx, j := openEmbedded(t)
	stream, err := j.js.Stream(ctx, "KV_sent_"+j.cfg.Bot)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := info.State.Msgs
	since := time.Now().Add(-markSkew)
	const events, sends = 20, 10
	var wg sync.WaitGroup
	errs := make(chan error, events*sends)
	for e := range events {
		wg.Go(func() {
			for s := range sends {
				id := fmt.Sprintf("tg:%d/%d", e, s+1)
				errs <- j.markW.mark(id, markData{SendResult: platform.SendResult{MessageID: id}})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if info, err = stream.Info(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := info.State.Msgs - before
	if msgs == 0 || msgs > events*sends {
		t.Fatalf("%d messages for %d marks", msgs, events*sends)
	}
	t.Logf("%d marks in %d messages", events*sends, msgs)

	keys := map[string]bool{}
	for e := range events / 2 { // the even events alone are taken up
		keys[fmt.Sprintf("tg:%d", 2*e)] = true
	}
	if err := j.loadMarks(ctx, since, keys); err != nil {
		t.Fatal(err)
	}
	for e := range events {
		for s := range sends {
			id := fmt.Sprintf("tg:%d/%d", e, s+1)
			m, ok := j.groupMarkOf(id)
			if want := e%2 == 0; ok != want || ok && m.MessageID != id {
				t.Fatalf("mark of %s: %+v, %v; want it read: %v", id, m, ok, want)
			}
		}
	}
	// Groups written before since are not read.
	if err := j.loadMarks(ctx, time.Now().Add(time.Hour), keys); err != nil {
		t.Fatal(err)
	}
	if _, ok := j.groupMarkOf("tg:0/1"); ok {
		t.Fatal("a mark written before the time given was read")
	}
}

// Marks whose results carry a few KB each (a platform's raw answer) are
// written in as many messages as the server's payload needs, none
// refused; one too large alone keeps its result without the raw answer.
func TestMarksGroupedWithinThePayload(t *testing.T) {
	parallel(t, 0)
	_, j := openEmbedded(t)
	raw := platform.RawJSON(`{"text":"` + strings.Repeat("x", 8<<10) + `"}`)
	const n = 200
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n+1)
	for i := range n {
		wg.Go(func() {
			<-start
			errs <- j.markW.mark(fmt.Sprintf("tg:%d/1", i), markData{SendResult: platform.SendResult{MessageID: "m", Raw: raw}})
		})
	}
	close(start)
	huge := platform.RawJSON(`{"text":"` + strings.Repeat("y", int(j.nc.MaxPayload())) + `"}`)
	errs <- j.markW.mark("tg:huge/1", markData{SendResult: platform.SendResult{MessageID: "h", Raw: huge}})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	keys := map[string]bool{"tg:huge": true, "tg:7": true}
	if err := j.loadMarks(context.Background(), time.Now().Add(-markSkew), keys); err != nil {
		t.Fatal(err)
	}
	if m, ok := j.groupMarkOf("tg:huge/1"); !ok || m.MessageID != "h" || m.Raw != "" {
		t.Fatalf("the huge mark: %+v, %v; want its message ID without its raw answer", m, ok)
	}
	if m, ok := j.groupMarkOf("tg:7/1"); !ok || m.Raw != raw {
		t.Fatalf("a mark of 8 KB: %v; want it whole", ok)
	}
}

// A covered send marked while its event is held is known to this process
// at once (a run again after an outage finds it), until the event is
// removed.
func TestCoveredMarkKnownWhileEventHeld(t *testing.T) {
	parallel(t, 0)
	ctx, j := openEmbedded(t)
	ev := platform.Event{ID: "9", Platform: "tg", Kind: platform.EventMessage, Chat: platform.Chat{ID: "1"}, Text: "/go"}
	rec, _, err := j.RecordEvent(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	send := func(n int) journal.Record {
		s := journal.Send{ID: fmt.Sprintf("tg:9/%d", n), Covered: true,
			Request: platform.SendRequest{Platform: "tg", Target: platform.Chat{ID: "1"}, Message: platform.TextMessage("hi")}}
		r, _, err := j.RecordSend(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.(journal.Covering); !ok {
			t.Fatalf("send %d: %T; want a covered send", n, r)
		}
		return r
	}
	first, second := send(1), send(2)
	if err := first.Done(ctx, &platform.SendResult{MessageID: "41"}); err != nil {
		t.Fatal(err)
	}
	repeat := journal.Send{ID: "tg:9/1", Repeat: true,
		Request: platform.SendRequest{Platform: "tg", Target: platform.Chat{ID: "1"}, Message: platform.TextMessage("hi")}}
	if _, a, err := j.RecordSend(ctx, repeat); err != nil || !a.Duplicate || a.Delivered == nil || a.Delivered.MessageID != "41" {
		t.Fatalf("the first send run again: %+v, %v; want a duplicate delivered as 41", a, err)
	}
	if err := rec.Done(ctx, nil); err != nil { // held by the second send
		t.Fatal(err)
	}
	if h := rec.(journal.Holder); !h.Holding() {
		t.Fatal("the event's removal does not wait for its second send")
	}
	if err := second.Done(ctx, &platform.SendResult{MessageID: "42"}); err != nil {
		t.Fatal(err)
	}
	if h := rec.(journal.Holder); h.Holding() {
		t.Fatal("the event's removal still waits after its last send")
	}
	if _, ok := j.groupMarkOf("tg:9/1"); ok {
		t.Fatal("a mark kept in memory after its event was removed")
	}
}

// A covered send's mark kept in memory goes when its event is removed,
// also when nothing else held the removal (a reply waited for, then the
// handler returns).
func TestCoveredMarkForgottenWithItsEvent(t *testing.T) {
	parallel(t, 0)
	ctx, j := openEmbedded(t)
	for i := range 3 {
		ev := platform.Event{ID: fmt.Sprint(i), Platform: "tg", Kind: platform.EventMessage, Chat: platform.Chat{ID: "1"}, Text: "/go"}
		rec, _, err := j.RecordEvent(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		s := journal.Send{ID: fmt.Sprintf("tg:%d/1", i), Covered: true,
			Request: platform.SendRequest{Platform: "tg", Target: platform.Chat{ID: "1"}, Message: platform.TextMessage("hi")}}
		r, _, err := j.RecordSend(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Done(ctx, &platform.SendResult{MessageID: "m"}); err != nil { // delivered while the handler runs: marked
			t.Fatal(err)
		}
		if err := rec.Done(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	j.coverMu.Lock()
	n := len(j.marks)
	j.coverMu.Unlock()
	if n != 0 {
		t.Fatalf("%d marks kept in memory after their events were removed", n)
	}
}

// While a send of a chat recorded on its own is not done, no send of that
// chat is covered: one covered meanwhile could be queued before it, its
// record still being written, and made after it at a restart.
func TestNoCoverWhileASendOfTheChatIsRecorded(t *testing.T) {
	parallel(t, 0)
	ctx, j := openEmbedded(t)
	ev := platform.Event{ID: "1", Platform: "tg", Kind: platform.EventMessage, Chat: platform.Chat{ID: "1"}, Text: "/go"}
	if _, _, err := j.RecordEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	req := platform.SendRequest{Platform: "tg", Target: platform.Chat{ID: "3"}, Message: platform.TextMessage("hi")}
	file := req
	file.Message = platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("x"), FileName: "f"}}}
	recorded, _, err := j.RecordSend(ctx, journal.Send{ID: "tg:1/1", Covered: true, Request: file}) // a file: recorded on its own
	if err != nil {
		t.Fatal(err)
	}
	covered := func(n int) bool {
		r, _, err := j.RecordSend(ctx, journal.Send{ID: fmt.Sprintf("tg:1/%d", n), Covered: true, Request: req})
		if err != nil {
			t.Fatal(err)
		}
		_, ok := r.(journal.Covering)
		if err := r.Done(ctx, nil); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if covered(2) {
		t.Fatal("a send covered while a send of its chat recorded on its own is not done")
	}
	if err := recorded.Done(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if !covered(3) {
		t.Fatal("a send not covered once the one recorded on its own is done")
	}
}
