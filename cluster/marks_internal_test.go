package cluster

import (
	"fmt"
	"sync"
	"testing"
	"time"

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
