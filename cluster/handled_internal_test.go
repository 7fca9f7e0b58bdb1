package cluster

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// The handled marks of events done together are written together — fewer
// messages than events — and a journal opened after them knows every one,
// in messages of several marks or of one (as journals before batching
// wrote them), across more messages than Open reads at once.
func TestHandledMarksBatched(t *testing.T) {
	parallel(t, 0)
	ctx, j := openEmbedded(t)
	event := func(id string) platform.Event {
		return platform.Event{ID: id, Platform: "memory", Kind: platform.EventMessage, Chat: platform.Chat{ID: "c"}, Text: id}
	}
	const together = 200
	var recs []journal.Record
	for i := range together {
		rec, dup, err := j.RecordEvent(ctx, event(fmt.Sprint("t", i)))
		if err != nil || dup {
			t.Fatalf("event %d: duplicate %v, %v", i, dup, err)
		}
		recs = append(recs, rec)
	}
	var wg sync.WaitGroup
	for _, rec := range recs {
		wg.Go(func() {
			if err := rec.Done(ctx, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// One mark a message, as before batching: more than a chunk of them.
	const alone = handledChunk + 50
	for i := range alone {
		j.markHandled(handledKey(event(fmt.Sprint("a", i))))
	}
	select {
	case <-j.js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("the marks were not written")
	}
	info, err := j.handled.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Done at once, the events' marks share a few messages; those written
	// one a message come after.
	if n := info.Values(); n > together/4+alone {
		t.Errorf("%d messages for %d marks; want those of the %d events done at once in at most %d", n, together+alone, together, together/4)
	}

	again, err := Open(ctx, j.nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t0", fmt.Sprint("t", together-1), "a0", fmt.Sprint("a", alone-1)} {
		if _, dup, err := again.RecordEvent(ctx, event(id)); err != nil || !dup {
			t.Errorf("event %s, handled before: duplicate %v, %v; want a duplicate", id, dup, err)
		}
	}
	if len(again.recent) != together+alone {
		t.Errorf("Open read %d marks; want %d", len(again.recent), together+alone)
	}
	if _, dup, err := again.RecordEvent(ctx, event("new")); err != nil || dup {
		t.Errorf("a new event: duplicate %v, %v", dup, err)
	}
}

// A handled mark the server refuses is logged, not dropped unread: here
// its bucket's stream is gone, so no stream takes it.
func TestHandledMarkRefusedIsLogged(t *testing.T) {
	parallel(t, 0)
	core, logs := observer.New(zap.WarnLevel)
	nc := connectEmbedded(t)
	ctx := doneCtx(t)
	j, err := Open(ctx, nc, Config{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.js.DeleteStream(ctx, "KV_handled_"+j.cfg.Bot); err != nil {
		t.Fatal(err)
	}
	j.markHandled("k")
	for logs.FilterMessageSnippet("handled mark was not written").Len() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("a refused handled mark was not logged")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
