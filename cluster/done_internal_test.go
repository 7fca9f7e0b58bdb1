package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// restartable is an embedded server whose store outlives it.
type restartable struct {
	t   testing.TB
	dir string
	srv *embedded.Server
	nc  *nats.Conn
}

func newRestartable(t testing.TB) *restartable {
	r := &restartable{t: t, dir: t.TempDir()}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *restartable) start() {
	r.t.Helper()
	srv, err := embedded.Start(embedded.Config{Dir: r.dir})
	if err != nil {
		r.t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		r.t.Fatal(err)
	}
	r.srv, r.nc = srv, nc
}

func (r *restartable) stop() {
	if r.srv != nil {
		r.nc.Close()
		r.srv.Shutdown()
		r.srv = nil
	}
}

// open opens a journal on r's server.
func (r *restartable) open(ctx context.Context) *Journal {
	r.t.Helper()
	j, err := Open(ctx, r.nc, Config{})
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

func doneCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func textTo(chat, text string) platform.SendRequest {
	return platform.SendRequest{Platform: "memory", Target: platform.Chat{ID: chat}, Message: platform.TextMessage(text)}
}

// msgs returns how many messages s holds.
func msgs(ctx context.Context, t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// pendingTexts returns the texts of the sends and events Pending hands
// over.
func pendingTexts(ctx context.Context, t *testing.T, j *Journal) (sends, events []string, p journal.Pending) {
	t.Helper()
	p, err := j.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Sends {
		sends = append(sends, s.Request.Message.Text)
	}
	for _, e := range p.Events {
		events = append(events, e.Event.Text)
	}
	return sends, events, p
}

// TestDoneNotes: encodeSeqs and decodeSeqs round-trip sorted sequences,
// and a truncated note is refused.
func TestDoneNotes(t *testing.T) {
	parallel(t, 0)
	for _, seqs := range [][]uint64{nil, {1}, {1, 2, 3}, {5, 300, 70000, 1 << 40, 1<<64 - 1}} {
		var got []uint64
		if err := decodeSeqs(encodeSeqs(seqs), func(s uint64) { got = append(got, s) }); err != nil || !slices.Equal(got, seqs) {
			t.Errorf("%v came back as %v, %v", seqs, got, err)
		}
	}
	if err := decodeSeqs([]byte{0x80}, func(uint64) {}); err == nil {
		t.Error("a truncated note was read")
	}
}

func FuzzDecodeSeqs(f *testing.F) {
	f.Add(encodeSeqs([]uint64{1, 2, 1000}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var seqs []uint64
		if decodeSeqs(b, func(s uint64) { seqs = append(seqs, s) }) != nil {
			return
		}
		if !slices.IsSorted(seqs) {
			t.Fatalf("decoded %v: not in order", seqs)
		}
		var again []uint64
		if err := decodeSeqs(encodeSeqs(seqs), func(s uint64) { again = append(again, s) }); err != nil || !slices.Equal(again, seqs) {
			t.Fatalf("%v came back as %v, %v", seqs, again, err)
		}
	})
}

// Records done are removed without a request each: notes name them, and
// once the floor passes them one purge removes records and notes alike —
// once it moved far enough, or once enough bytes were written. A record
// held keeps everything after it until it is done.
func TestDonePurgesBelowFloor(t *testing.T) {
	parallel(t, 0)
	for _, tc := range []struct {
		name  string
		every uint64
		bytes int64
	}{
		{"records", 256, purgeBytes}, // 600 records done: due by their count
		{"bytes", 1 << 62, 16 << 10}, // 600 records of 40 bytes and more: due by their size
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := doneCtx(t)
			r := newRestartable(t)
			j := r.open(ctx)
			j.outDone.aboveAge = time.Hour // nothing deleted by itself
			j.outDone.every, j.outDone.bytes = tc.every, tc.bytes
			frozen := time.Now()
			j.outDone.now = func() time.Time { return frozen } // never a purge for the time since the last
			testPurgesBelowFloor(ctx, t, j)
		})
	}
}

// A stream of bounded size (Config.MaxBytes) has a purge due once a
// quarter of its room was written, however little that is of purgeBytes.
func TestDonePurgeBytesBounded(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	for i, tc := range []struct{ max, want int64 }{{0, purgeBytes}, {1 << 20, 256 << 10}, {64 << 20, purgeBytes}} {
		j, err := Open(ctx, r.nc, Config{Bot: fmt.Sprint("b", i), MaxBytes: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		if j.inDone.bytes != tc.want || j.outDone.bytes != tc.want {
			t.Errorf("MaxBytes %d: a purge due after %d and %d bytes; want %d", tc.max, j.inDone.bytes, j.outDone.bytes, tc.want)
		}
	}
}

func testPurgesBelowFloor(ctx context.Context, t *testing.T, j *Journal) {
	first := recordSend(ctx, t, j, "c0", "held")
	const n = 600
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			rec, _, err := j.RecordSend(ctx, journal.Send{Request: textTo(fmt.Sprint("c", i%20), fmt.Sprint(i))})
			if err == nil {
				err = rec.Done(ctx, nil)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := msgs(ctx, t, j.out); got <= n {
		t.Fatalf("OUT holds %d messages while its first record is held; want the %d records and their notes", got, n+1)
	}
	notes, err := j.notes(ctx, j.outDone)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != n {
		t.Fatalf("notes name %d records; want %d", len(notes), n)
	}
	markDone(ctx, t, first)
	if got := msgs(ctx, t, j.out); got != 0 {
		t.Fatalf("OUT holds %d messages once all is done; want 0", got)
	}
}

// What is noted done and not yet purged when the process ends is not
// handed over after a restart; what is not done is, in order; and the
// next journal removes what the last one left.
func TestDoneAcrossRestart(t *testing.T) {
	parallel(t, 4*time.Second)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	var want, wantEvents []string
	for i := range 10 {
		send := recordSend(ctx, t, j, "c", fmt.Sprint("s", i))
		ev := platform.Event{ID: fmt.Sprint(i), Platform: "memory", Kind: platform.EventMessage,
			Chat: platform.Chat{ID: fmt.Sprint("c", i%3)}, Text: fmt.Sprint("e", i)}
		event, _, err := j.RecordEvent(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			want, wantEvents = append(want, fmt.Sprint("s", i)), append(wantEvents, fmt.Sprint("e", i))
			continue
		}
		markDone(ctx, t, send)
		markDone(ctx, t, event)
	}
	r.stop()
	r.start()
	j = r.open(ctx)
	sends, events, p := pendingTexts(ctx, t, j)
	if !slices.Equal(sends, want) || !slices.Equal(events, wantEvents) {
		t.Fatalf("after a restart: sends %q, events %q; want %q and %q", sends, events, want, wantEvents)
	}
	for _, s := range p.Sends {
		markDone(ctx, t, s.Record)
	}
	for _, e := range p.Events {
		markDone(ctx, t, e.Record)
	}
	for _, d := range []*doneLog{j.outDone, j.inDone} {
		if err := d.compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if out, in := msgs(ctx, t, j.out), msgs(ctx, t, j.in); out != 0 || in != 0 {
		t.Fatalf("OUT holds %d and IN %d messages once all is done and compacted; want none", out, in)
	}
	r.stop()
	r.start()
	j = r.open(ctx)
	if sends, events, _ := pendingTexts(ctx, t, j); len(sends)+len(events) != 0 {
		t.Fatalf("after all was done: sends %q, events %q", sends, events)
	}
}

// A record held for long does not keep the records done after it: once
// they waited aboveAge they are deleted one by one, and their notes with
// them.
func TestDoneAboveStuckFloor(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	clock := fakeClock(j.outDone)
	held := recordSend(ctx, t, j, "c", "held")
	for i := range 50 {
		rec := recordSend(ctx, t, j, "c", fmt.Sprint(i))
		markDone(ctx, t, rec)
	}
	if got := msgs(ctx, t, j.out); got != 101 {
		t.Fatalf("OUT holds %d messages; want the held record, 50 done and their 50 notes", got)
	}
	clock.advance(aboveAge)
	last := recordSend(ctx, t, j, "c", "last")
	markDone(ctx, t, last)
	if got := msgs(ctx, t, j.out); got != 3 {
		t.Fatalf("OUT holds %d messages; want the held record, the last done and its note", got)
	}
	r.stop()
	r.start()
	j = r.open(ctx)
	if sends, _, _ := pendingTexts(ctx, t, j); !slices.Equal(sends, []string{"held"}) {
		t.Fatalf("after a restart: %q; want the held record alone", sends)
	}
	_ = held
}

// Records written and done from many goroutines at once, purges running
// meanwhile, leave exactly the records not done: a purge never takes a
// record held or being written.
func TestDoneConcurrentPurges(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	const writers, each, window = 8, 150, 3
	var mu sync.Mutex
	var want []string
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			var recs []journal.Record
			var texts []string
			for i := range each {
				text := fmt.Sprintf("w%d-%d", w, i)
				rec, _, err := j.RecordSend(ctx, journal.Send{Request: textTo(fmt.Sprint("c", w), text)})
				if err != nil {
					errs <- err
					return
				}
				recs, texts = append(recs, rec), append(texts, text)
				if len(recs) > window { // the oldest done: the floor moves while others write
					if err := recs[0].Done(ctx, nil); err != nil {
						errs <- err
						return
					}
					recs, texts = recs[1:], texts[1:]
				}
			}
			mu.Lock()
			want = append(want, texts...)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r.stop()
	r.start()
	j = r.open(ctx)
	sends, _, _ := pendingTexts(ctx, t, j)
	slices.Sort(sends)
	slices.Sort(want)
	if !slices.Equal(sends, want) {
		t.Fatalf("after a restart %d sends %q; want the %d not done %q", len(sends), sends, len(want), want)
	}
}

// A stream made anew (the server lost it) gives sequences again: the
// records of the old one are gone, their Done touches nothing, and the new
// stream is never purged by a floor of the old.
func TestDoneStreamMadeAnew(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	var old []journal.Record
	for i := range 5 {
		rec := recordSend(ctx, t, j, "c", fmt.Sprint("old", i))
		old = append(old, rec)
	}
	remakeOut(ctx, t, j)
	var fresh []journal.Record
	for i := range 3 {
		rec := recordSend(ctx, t, j, "c", fmt.Sprint("new", i))
		fresh = append(fresh, rec)
	}
	for _, rec := range old {
		markDone(ctx, t, rec)
	}
	markDone(ctx, t, fresh[2])
	sends, _, _ := pendingTexts(ctx, t, j)
	if !slices.Equal(sends, []string{"new0", "new1"}) {
		t.Fatalf("the new stream hands over %q; want the two new records not done", sends)
	}
}

// A note naming records on both sides of the floor goes only once both
// are gone: the one above deleted by itself, the one below purged. Deleted
// before the purge, a crash would hand the one below over again.
func TestDoneNoteOutlivesItsRecords(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	d := j.outDone
	clock := fakeClock(d)
	d.aboveAge = 0
	var recs []journal.Record
	for _, text := range []string{"below", "held", "above"} {
		rec := recordSend(ctx, t, j, "c", text)
		recs = append(recs, rec)
	}
	// One note for the first and the third, the second held: the floor is
	// at the second.
	g := &doneGroup{epoch: d.current(), seqs: []uint64{recs[0].(*record).seq, recs[2].(*record).seq}, done: make(chan struct{})}
	d.turn <- struct{}{}
	d.mu.Lock()
	d.purgedAt = clock.now() // no purge yet
	d.mu.Unlock()
	d.write(g)
	d.tidy(ctx, false) // the third deleted by itself; the note stays for the first
	<-d.turn
	if g.err != nil {
		t.Fatal(g.err)
	}
	if got := msgs(ctx, t, j.out); got != 3 {
		t.Fatalf("OUT holds %d messages; want the first, the held one and the note", got)
	}
	r.stop()
	r.start()
	j = r.open(ctx)
	sends, _, p := pendingTexts(ctx, t, j)
	if !slices.Equal(sends, []string{"held"}) {
		t.Fatalf("after a restart: %q; want the held record alone", sends)
	}
	d = j.outDone
	markDone(ctx, t, p.Sends[0].Record)
	if err := d.compact(ctx); err != nil {
		t.Fatal(err)
	}
	if got := msgs(ctx, t, j.out); got != 0 {
		t.Fatalf("OUT holds %d messages once all is done and compacted; want none", got)
	}
}

// Behind a record held for long, and a write whose answer was lost (its
// bound pinned), the heaps of records held and written stay bounded by
// what is live, not by what was written since.
func TestDoneHeapsBounded(t *testing.T) {
	parallel(t, 0)
	d := &doneLog{held: map[uint64]struct{}{}, flight: map[uint64]int{}}
	d.written(d.begin(), 1, false, 0) // held for good
	d.failed(d.begin(), true)         // pinned for good
	for seq := uint64(2); seq < 20000; seq++ {
		d.written(d.begin(), seq, false, 0)
		d.mu.Lock()
		if floor := d.floorAfterLocked([]uint64{seq}); floor != 1 {
			d.mu.Unlock()
			t.Fatalf("floor %d; want 1, the record held", floor)
		}
		d.mu.Unlock()
	}
	if len(d.heldQ) > 2*len(d.held)+1025 || len(d.flightQ) > 2*len(d.flight)+1025 {
		t.Fatalf("heaps of %d and %d for %d held and %d being written", len(d.heldQ), len(d.flightQ), len(d.held), len(d.flight))
	}
}

// Writes in flight when the stream is found made anew count it once: the
// records they wrote belong to the new stream, their Done notes them, and
// none is handed over again after a restart. (The old stream held more
// messages than the new one gets meanwhile — else a new sequence cannot be
// told from an old one; see sawLocked.)
func TestDoneStreamMadeAnewUnderConcurrentWrites(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	for i := range 40 {
		if _, _, err := j.RecordSend(ctx, journal.Send{Request: textTo("c", fmt.Sprint("old", i))}); err != nil {
			t.Fatal(err)
		}
	}
	remakeOut(ctx, t, j)
	const n = 16
	recs := make([]journal.Record, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			rec, _, err := j.RecordSend(ctx, journal.Send{Request: textTo(fmt.Sprint("c", i), fmt.Sprint("new", i))})
			if err != nil {
				t.Error(err)
				return
			}
			recs[i] = rec
		})
	}
	close(start)
	wg.Wait()
	if e := j.outDone.current(); e != 1 {
		t.Errorf("epoch %d after the stream was made anew once; want 1", e)
	}
	for _, rec := range recs {
		if rec == nil {
			t.FailNow()
		}
		markDone(ctx, t, rec)
	}
	r.stop()
	r.start()
	j = r.open(ctx)
	if sends, _, _ := pendingTexts(ctx, t, j); len(sends) != 0 {
		t.Fatalf("every record was done, yet after a restart %d are handed over again: %q", len(sends), sends)
	}
}

// A Done whose context ends while the note is still to be written fails as
// an outage, its work kept for the store's return; the group is written
// all the same, by its leader, whatever the leader's context.
func TestDoneContextEndsBeforeItsNote(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	var recs []journal.Record
	for i := range 2 {
		rec := recordSend(ctx, t, j, "c", fmt.Sprint("s", i))
		recs = append(recs, rec)
	}
	d := j.outDone
	d.turn <- struct{}{} // the group before, being written
	short, cancel := context.WithCancel(ctx)
	leader, follower := make(chan error, 1), make(chan error, 1)
	go func() { leader <- recs[0].Done(short, nil) }()
	for d.waitingGroup() == 0 {
		time.Sleep(time.Millisecond)
	}
	go func() { follower <- recs[1].Done(short, nil) }()
	for d.waitingGroup() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-follower; !errors.Is(err, journal.ErrOutage) {
		t.Fatalf("a Done whose context ended before its note: %v; want an outage", err)
	}
	<-d.turn
	if err := <-leader; err != nil {
		t.Fatalf("the leader, its group written: %v", err)
	}
	r.stop()
	r.start()
	j = r.open(ctx)
	if sends, _, _ := pendingTexts(ctx, t, j); len(sends) != 0 {
		t.Fatalf("after a restart %q; want both noted done", sends)
	}
}

// A clean stop leaves the streams holding only what is not done: the
// records done and their notes are removed before Join returns, so that
// the next start, or a shared journal taking the streams over, finds
// nothing done.
func TestDoneCleanStopLeavesNothingDone(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(j))
	if err != nil {
		t.Fatal(err)
	}
	e.OnCommand("ping", func(c *engine.Context) error {
		c.ReplyText("pong")
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	for i := range 50 {
		mem.Say(memory.Private(fmt.Sprint(i)), memory.User(fmt.Sprint(i), "U"), "/ping")
	}
	for i := range 50 {
		if _, err := mem.WaitSent(ctx, fmt.Sprint(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out, in := msgs(ctx, t, j.out), msgs(ctx, t, j.in); out != 0 || in != 0 {
		t.Fatalf("after a clean stop OUT holds %d messages and IN %d; want none", out, in)
	}
}

// recordSend records a send of text to chat in j.
func recordSend(ctx context.Context, t *testing.T, j *Journal, chat, text string) journal.Record {
	t.Helper()
	rec, _, err := j.RecordSend(ctx, journal.Send{Request: textTo(chat, text)})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// markDone marks rec done.
func markDone(ctx context.Context, t *testing.T, rec journal.Record) {
	t.Helper()
	if err := rec.Done(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// remakeOut deletes j's OUT and makes it anew, empty, as a server that lost
// it and had it made again.
func remakeOut(ctx context.Context, t *testing.T, j *Journal) {
	t.Helper()
	cfg := j.out.CachedInfo().Config
	if err := j.js.DeleteStream(ctx, cfg.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := j.js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// A shared journal opened on the streams a one-process journal left after
// a crash (records done, noted, not yet purged) removes what the notes
// name before its members consume: its consumers would hand those records
// over again. The records not done stay, and the notes go.
func TestSharedSettlesDoneNotes(t *testing.T) {
	parallel(t, 2*time.Second)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	var open []string
	for i := range 10 {
		send := recordSend(ctx, t, j, "c", fmt.Sprint("s", i))
		event, _, err := j.RecordEvent(ctx, platform.Event{ID: fmt.Sprint(i), Platform: "memory", Kind: platform.EventMessage,
			Chat: platform.Chat{ID: "c"}, Text: fmt.Sprint("e", i)})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 { // the first not done holds the floor: nothing is purged
			open = append(open, fmt.Sprint("s", i), fmt.Sprint("e", i))
			continue
		}
		markDone(ctx, t, send)
		markDone(ctx, t, event)
	}
	// A crash: no compaction. 5 records and at least one note each.
	if out, in := msgs(ctx, t, j.out), msgs(ctx, t, j.in); out < 6 || in < 6 {
		t.Fatalf("OUT holds %d and IN %d messages; want the records and their notes", out, in)
	}
	r.stop()
	r.start()
	s, err := OpenShared(ctx, r.nc, SharedConfig{Node: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	notes := 0
	for _, st := range []jetstream.Stream{s.out, s.in} {
		if err := s.each(ctx, st, func(m *jetstream.RawStreamMsg) error {
			if m.Subject == s.outDone.subject || m.Subject == s.inDone.subject {
				notes++
				return nil
			}
			data, _, err := s.recordData(ctx, m.Header, m.Data)
			if err != nil {
				return err
			}
			if st == s.out {
				var d sendData
				if err := decodeRecord(data, &d); err != nil {
					return err
				}
				left = append(left, d.Request.Message.Text)
			} else {
				var ev platform.Event
				if err := decodeRecord(data, &ev); err != nil {
					return err
				}
				left = append(left, ev.Text)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(left)
	slices.Sort(open)
	if !slices.Equal(left, open) || notes != 0 {
		t.Fatalf("the streams hold %q and %d notes; want only the records not done, %q", left, notes, open)
	}
}

// stallingStream is a stream whose server stops answering deletions after
// the first ok of them: each later DeleteMsg waits for its context's end,
// as a request to a server that no longer answers does.
type stallingStream struct {
	jetstream.Stream
	ok      int64
	calls   atomic.Int64
	stalled atomic.Int64
}

func (s *stallingStream) DeleteMsg(ctx context.Context, seq uint64) error {
	if s.calls.Add(1) <= s.ok {
		return s.Stream.DeleteMsg(ctx, seq)
	}
	s.stalled.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// TestDoneTidyStopsAtFirstFailure: a tidy stops at its first failure, so
// that a turn lasts at most a note's write (opTimeout) and a few requests
// of tidyTimeout: the notes freed by the deletions before one that failed
// are left for a later purge, not each waited for (up to staleMax of
// them, 8.5 minutes, while every Done waited for the turn).
func TestDoneTidyStopsAtFirstFailure(t *testing.T) {
	parallel(t, 2*time.Second)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	d := j.outDone
	clock := fakeClock(d)
	recordSend(ctx, t, j, "c", "held") // the floor stays here
	const n = 6
	for i := range n { // one note each: Dones one after the other
		markDone(ctx, t, recordSend(ctx, t, j, "c", fmt.Sprint(i)))
	}
	clock.advance(aboveAge)
	last := recordSend(ctx, t, j, "c", "last")
	// The server answers the n deletions of the records aged, then stops
	// answering.
	s := &stallingStream{Stream: d.stream, ok: n}
	d.stream = s
	start := time.Now()
	markDone(ctx, t, last)
	took := time.Since(start)
	t.Logf("Done took %v; deletions sent after the server stopped answering: %d", took.Round(time.Millisecond), s.stalled.Load())
	if s.stalled.Load() > 1 || took > opTimeout {
		t.Fatalf("the turn went on after its first failure: %d requests waited tidyTimeout each, the Done took %v (for staleMax notes freed, %v)",
			s.stalled.Load(), took.Round(time.Millisecond), staleMax*tidyTimeout)
	}
}

// crashingStream stops the server (the process dies, its store stays) at
// the first deletion asked of it, before the deletion is made.
type crashingStream struct {
	jetstream.Stream
	r       *restartable
	crashed bool
}

func (s *crashingStream) DeleteMsg(ctx context.Context, seq uint64) error {
	if !s.crashed {
		s.crashed = true
		s.r.stop()
	}
	return fmt.Errorf("the process died before deleting %d", seq)
}

// TestDoneNoteOfStreamMadeAnewLeftBehind: a Done of a record of a stream
// made anew writes its note to the new stream, finds it there (its
// sequence below those seen) and deletes it with one request. A crash
// before that request (or its failure) leaves in the new stream a note
// naming sequences of the old one; the next start must not take them as
// done (it adopted them for deletion, and the new records written there
// were deleted while held, or skipped by the Pending after): a note
// carries its stream's identity (hdrStream), and one of another stream is
// not read.
func TestDoneNoteOfStreamMadeAnewLeftBehind(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	var old []journal.Record
	for i := range 5 {
		old = append(old, recordSend(ctx, t, j, "c", fmt.Sprint("old", i)))
	}
	remakeOut(ctx, t, j) // the server lost OUT, and it was made again
	j.outDone.stream = &crashingStream{Stream: j.outDone.stream, r: r}
	_ = old[2].Done(ctx, nil) // its note lands at 1 in the new stream, naming 3; the process dies before deleting it

	r.start()
	j = r.open(ctx)
	if sends, _, _ := pendingTexts(ctx, t, j); len(sends) != 0 {
		t.Fatalf("the new stream hands over %q; want nothing", sends)
	}
	a := recordSend(ctx, t, j, "c", "a") // 2
	b := recordSend(ctx, t, j, "c", "b") // 3: the sequence the note left behind names
	recordSend(ctx, t, j, "c", "c")      // 4
	if seq := b.(*record).seq; seq != 3 {
		t.Fatalf("b is at %d; the test wants it at 3", seq)
	}
	markDone(ctx, t, a)
	if _, err := j.out.GetMsg(ctx, 3); err != nil {
		t.Logf("b, held and not done, is gone from OUT already: %v", err)
	}
	r.stop()
	r.start()
	j = r.open(ctx)
	if sends, _, _ := pendingTexts(ctx, t, j); !slices.Equal(sends, []string{"b", "c"}) {
		t.Fatalf("after a restart: %q; want the two records not done, b and c", sends)
	}
}

// testClock is a doneLog's clock that a test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

// fakeClock gives d a clock of its own, at the present, that moves only
// by advance.
func fakeClock(d *doneLog) *testClock {
	c := &testClock{t: time.Now()}
	d.now = c.now
	return c
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(by time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(by)
}

// While the journal is busy (a note written just before), the first Done
// of a group waits for others, which join it: one note names them all. An
// idle journal writes at once.
func TestDoneGroupLingersWhileBusy(t *testing.T) {
	parallel(t, time.Second)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	d := j.outDone
	d.linger = time.Second // long, so that the others surely join
	const n = 20
	recs := make([]journal.Record, n+1)
	for i := range recs {
		recs[i] = recordSend(ctx, t, j, fmt.Sprint("c", i), "x")
	}
	if d.busy() {
		t.Fatal("busy before any note")
	}
	before := time.Now()
	markDone(ctx, t, recs[0]) // idle: written at once, and busy from here
	d.mu.Lock()
	noted := !d.noteAt.Before(before)
	// Busy for busyWithin after the note: for an hour here, so that the
	// others join it even when a loaded machine pauses this test longer.
	d.noteAt = time.Now().Add(time.Hour)
	d.mu.Unlock()
	if !noted {
		t.Fatal("the first Done wrote no note, or did not say when")
	}
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		go func() { errs <- recs[i].Done(ctx, nil) }()
		// It joins the group its first Done lingers for.
		deadline := time.Now().Add(10 * time.Second)
		for d.waitingGroup() != i {
			if time.Now().After(deadline) {
				t.Fatalf("Done %d did not join the lingering group: %d wait for a note", i, d.waitingGroup())
			}
			time.Sleep(time.Millisecond)
		}
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if w := d.waitingGroup(); w != 0 {
		t.Fatalf("%d still wait for a note", w)
	}
	sends, _, _ := pendingTexts(ctx, t, r.open(ctx))
	if len(sends) != 0 {
		t.Fatalf("%d sends still pending after every Done", len(sends))
	}
	d.mu.Lock()
	d.noteAt = time.Now().Add(-busyWithin)
	d.mu.Unlock()
	if d.busy() {
		t.Fatal("busy with no note written for busyWithin")
	}
}

// A record's Done bounds its own requests: the engine calls it with a
// context that never ends, and with the server gone (the client waiting
// to reconnect, its writes unanswered) each Done — the one that writes
// its group's note, the ones that wait for it, and one that marks its send
// delivered first — returns an outage in the journal's own time.
func TestDoneBoundedWithoutDeadline(t *testing.T) {
	parallel(t, 0)
	ctx := doneCtx(t)
	r := newRestartable(t)
	j := r.open(ctx)
	var recs []journal.Record
	for i := range 3 {
		rec, _, err := j.RecordSend(ctx, journal.Send{ID: fmt.Sprint("bounded/", i), Request: textTo("c", fmt.Sprint("s", i))})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	r.srv.Shutdown() // the connection stays, unanswered
	errs := make(chan error, len(recs))
	for i, rec := range recs {
		var delivered *platform.SendResult
		if i == 0 {
			delivered = &platform.SendResult{MessageID: "m0"}
		}
		go func() { errs <- rec.Done(context.Background(), delivered) }()
	}
	bound := time.After(publishTimeout + opTimeout + 10*time.Second)
	for range recs {
		select {
		case err := <-errs:
			if !errors.Is(err, journal.ErrOutage) {
				t.Errorf("Done with the server gone: %v; want an outage", err)
			}
		case <-bound:
			t.Fatal("a Done with a context that never ends still waits for a server that is gone")
		}
	}
}
