package cluster

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/ratelog"
)

// How the one-process journal removes what is done without a JetStream
// API request per record (a message's deletion is a request the server
// answers, and costs more than the record's write):
//
//   - A record's Done appends a done note to the record's own stream, on
//     its subject <kind>.B.done (no record has three tokens), naming the
//     sequences done; an event's handled mark (see handled.go) goes with
//     the others of its group in one message, written just before. Notes
//     are written in groups: while one is being written, the Dones that
//     come meanwhile wait for the next, which one of them writes for all
//     (a group commit); while the journal is busy, the first of a group
//     also waits groupLinger for others. Done returns once its note
//     is stored: what a crash interrupts after that is not handed over
//     again — Pending skips the records a note names.
//   - The journal knows the records it holds (written, or taken up by
//     Pending, and not done) and those being written; below the lowest of
//     them — the floor — every message of the stream is done, or a note.
//     Once the floor has moved purgeEvery past the last purge, or
//     purgeBytes of records were written since (a quarter of
//     Config.MaxBytes if that is less), or purgeIdle after it, one purge
//     request removes everything below it: records and notes alike.
//   - A record held for long (a conversation waiting for its user's answer)
//     keeps the floor where it is; the records done above it are removed
//     one by one once they have waited aboveAge, and a note once every
//     record it names is removed, so that the stream does not grow while
//     one record waits.
//   - When a note cannot be written (the stream is full: a write refused,
//     where a deletion makes room), the records of the group are deleted
//     one by one instead, as before notes.
//
// Records written before the journal was opened are not the journal's to
// purge until Pending took them up: until then nothing is purged from the
// stream's first message at opening on. A stream found made anew (a
// sequence given again) is never purged again by this process: its
// records done are removed one by one.
const (
	// purgeEvery is how far the floor moves before a purge. A purge costs
	// the store a fixed amount (it writes its index afresh, whatever it
	// removes): at 256, purges were 6% of BenchmarkJournalEvent's CPU.
	purgeEvery = 2048
	// purgeBytes is how many bytes of records written make a purge due
	// however little the floor moved, so that large records do not fill
	// the store before a purge.
	purgeBytes = 8 << 20
	// purgeIdle is how long after the last purge one is made however
	// little the floor moved.
	purgeIdle = time.Second
	// aboveAge is how long a record done above the floor waits for the
	// floor before it is deleted by itself.
	aboveAge = 5 * time.Second
	// noteMax bounds the sequences one note names.
	noteMax = 8192
	// staleMax bounds the records one tidy deletes by themselves.
	staleMax = 256
	// groupLinger is how long the first Done of a group waits for others
	// before its note is written, while the journal is busy (a note
	// written within busyWithin): under load, one note then names the
	// records of many chats, instead of one each, for the cost of a
	// millisecond at most before a Done returns.
	groupLinger = time.Millisecond
	busyWithin  = 2 * time.Millisecond
	// tidyTimeout bounds each of tidy's requests: a tidy stops at its
	// first failure, so a turn lasts at most a note's write (opTimeout)
	// and a few of these.
	tidyTimeout = 2 * time.Second
)

// doneLog removes the records of one stream once done (see above). It is
// safe for concurrent use.
type doneLog struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	subject string // the notes' subject
	limited *ratelog.Logger

	turn chan struct{} // held by the one writing a note (and purging)
	// mark, if not nil, writes the handled marks of a group's records
	// (see handled.go) right before its note, in one message.
	mark     func(keys []string)
	aboveAge time.Duration
	every    uint64           // purgeEvery, or a test's
	bytes    int64            // purgeBytes, or less for a stream of bounded size
	now      func() time.Time // time.Now, or a test's clock
	linger   time.Duration    // groupLinger; 0 in tests that count on none

	mu       sync.Mutex
	epoch    uint64              // counts the stream found made anew
	ident    string              // the stream's identity (streamIdent), for its notes' header; "" until known
	seen     uint64              // the highest sequence the server gave
	cap      uint64              // if not 0, nothing from it on is purged
	opening  bool                // cap is the first message at opening (lifted by adopt)
	held     map[uint64]struct{} // records not done
	heldQ    seqHeap
	flight   map[uint64]int // the lowest sequence a record being written can get → how many
	flightQ  seqHeap
	purged   uint64 // below it, the stream was purged
	purgedAt time.Time
	since    int64     // bytes of records written since the last purge
	noteAt   time.Time // when the last note was written (by the clock of time.Now)
	next     *doneGroup
	above    []doneAbove          // records done above the floor, in the order done
	notes    map[uint64]*noteLeft // a note above the floor → what it names that is not gone
	deleting map[uint64]uint64    // a record done above the floor → its note
}

// doneGroup is the Dones one note takes.
type doneGroup struct {
	epoch uint64
	seqs  []uint64
	marks []string      // the handled marks of its records (see doneLog.mark)
	done  chan struct{} // closed once written (or failed)
	err   error
}

// noteLeft is what a note above the floor names that is not gone: left
// records above the floor when it was written, not yet deleted; those
// below it (floor) go with the purge past it. The note may go once both
// are gone: deleted first, a crash would hand them over again.
type noteLeft struct {
	left  int
	floor uint64
}

// doneAbove is a record done above the floor, named by note.
type doneAbove struct {
	seq, note uint64
	at        time.Time
}

// hdrStream is a done note's header naming the stream it was written for
// (streamIdent): a note that a Done of a stream's record wrote to the
// stream made anew after it names sequences of the old one, and is not
// read.
const hdrStream = "Herald-Stream"

// streamIdent is a stream's identity: its creation time, which a stream
// made anew under the same name does not share.
func streamIdent(info *jetstream.StreamInfo) string {
	return strconv.FormatInt(info.Created.UnixNano(), 10)
}

// learnIdent asks the server for the stream's identity, unknown since it
// was found made anew, and keeps it if the stream is still of epoch. It
// returns "" if the server does not answer: the note goes without it.
func (d *doneLog) learnIdent(epoch uint64) string {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	info, err := d.stream.Info(ctx)
	if err != nil {
		return ""
	}
	ident := streamIdent(info)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.epoch != epoch {
		return ""
	}
	d.ident = ident
	return ident
}

// newDoneLog returns the done log of stream s, whose notes go to subject.
func newDoneLog(js jetstream.JetStream, s jetstream.Stream, subject string, limited *ratelog.Logger) *doneLog {
	d := &doneLog{js: js, stream: s, subject: subject, limited: limited, turn: make(chan struct{}, 1),
		held: map[uint64]struct{}{}, flight: map[uint64]int{}, notes: map[uint64]*noteLeft{}, deleting: map[uint64]uint64{},
		aboveAge: aboveAge, every: purgeEvery, bytes: purgeBytes, now: time.Now, linger: groupLinger}
	d.purgedAt = d.now()
	if info := s.CachedInfo(); info != nil {
		d.ident = streamIdent(info)
		st := info.State
		d.seen, d.purged = st.LastSeq, st.LastSeq+1
		if st.Msgs > 0 {
			d.cap, d.opening, d.purged = st.FirstSeq, true, st.FirstSeq
		}
	} else {
		d.cap, d.opening = 1, true // unknown: nothing purged before Pending
	}
	return d
}

// current returns the stream's epoch.
func (d *doneLog) current() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.epoch
}

// writing is a record being written: the lowest sequence it can get, in
// the epoch its write began.
type writing struct{ low, epoch uint64 }

// begin notes a record about to be written; the caller passes the result
// to written or failed.
func (d *doneLog) begin() writing {
	d.mu.Lock()
	defer d.mu.Unlock()
	low := d.seen + 1
	if d.flight[low] == 0 {
		heap.Push(&d.flightQ, low)
	}
	d.flight[low]++
	return writing{low, d.epoch}
}

// failed ends begin's write of a record that failed. A record that may
// have been written all the same (its answer lost) keeps its bound: it is
// left for the next start to hand over, as it would have been before
// notes, and nothing after it is purged by this process — the records done
// after it are deleted one by one.
func (d *doneLog) failed(w writing, maybe bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if maybe {
		d.limited.Warn("cluster: a record's write failed without an answer; the journal no longer purges past it, and removes records one by one",
			zap.String("stream", d.subject))
		return
	}
	d.land(w.low)
}

// written ends begin's write: the record, of size bytes, is at seq (a
// duplicate, already held or done, if dup). It returns the record's
// epoch, for done.
func (d *doneLog) written(w writing, seq uint64, dup bool, size int) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.land(w.low)
	if dup {
		d.seen = max(d.seen, seq)
	} else {
		d.since += int64(size)
		d.sawLocked(seq, w)
		d.held[seq] = struct{}{}
		heap.Push(&d.heldQ, seq)
	}
	return d.epoch
}

// land removes the bound low of a write ended. d.mu is held.
func (d *doneLog) land(low uint64) {
	if n := d.flight[low]; n > 1 {
		d.flight[low] = n - 1
	} else {
		delete(d.flight, low) // the heap drops it lazily
	}
}

// sawLocked notes seq, the sequence the server gave a message written as
// w. A sequence below w.low, of a write begun in the current epoch, says
// the stream was made anew: what this process held went with the old one,
// and nothing is purged from now on. (A write begun in an epoch before is
// of the new stream already, or the old one's last.) The new stream's
// first sequences are below any write's bound until it has had as many
// messages as the old one, so the first answer from it tells; a write
// answered from it above its bound before that — an old stream of fewer
// messages than the writes in flight — keeps the old epoch, and its record
// is handed over again after a restart rather than a wrong one removed.
// d.mu is held.
func (d *doneLog) sawLocked(seq uint64, w writing) {
	if seq >= w.low || w.epoch != d.epoch {
		d.seen = max(d.seen, seq)
		return
	}
	d.epoch++
	d.seen, d.cap, d.opening, d.ident = seq, 1, false, ""
	clear(d.held)
	d.heldQ = d.heldQ[:0]
	clear(d.notes)
	clear(d.deleting)
	d.above = nil
	d.limited.Warn("cluster: a journal stream was made anew; the records it held are gone", zap.String("stream", d.subject))
}

// adopt takes up the records Pending hands over (at seqs, in a stream
// whose last message is last): they are held until done, and the
// stream's records before opening are this process's to purge from now
// on. done are the records notes name, and notes those notes: the ones
// above the floor are deleted by themselves.
func (d *doneLog) adopt(seqs []uint64, last uint64, done map[uint64]uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen = max(d.seen, last)
	for _, s := range seqs {
		if _, ok := d.held[s]; !ok {
			d.held[s] = struct{}{}
			heap.Push(&d.heldQ, s)
		}
	}
	if d.opening {
		d.cap, d.opening = 0, false
	}
	floor := d.floorLocked()
	for _, note := range done {
		if note >= floor && d.notes[note] == nil {
			d.notes[note] = &noteLeft{floor: d.seen + 1} // what it names below the floor is not purged yet
		}
	}
	seqs = seqs[:0:0]
	for s := range done {
		if s >= floor {
			seqs = append(seqs, s)
		}
	}
	slices.Sort(seqs)
	later := d.above
	d.above = nil
	old := d.now().Add(-d.aboveAge)
	for _, s := range seqs {
		d.trackLocked(s, done[s], old)
	}
	d.above = append(d.above, later...)
}

// trackLocked notes record s, named by note, done above the floor at at.
// d.mu is held.
func (d *doneLog) trackLocked(s, note uint64, at time.Time) {
	if _, ok := d.deleting[s]; ok {
		return
	}
	d.above = append(d.above, doneAbove{seq: s, note: note, at: at})
	d.deleting[s] = note
	n := d.notes[note]
	if n == nil {
		n = &noteLeft{}
		d.notes[note] = n
	}
	n.left++
}

// floorLocked returns the lowest sequence that may still be needed: below
// it every message is done or a note. d.mu is held.
func (d *doneLog) floorLocked() uint64 {
	// The heaps drop what is gone only from their top: behind a record
	// held for long they would grow with every record written.
	if len(d.heldQ) > 2*len(d.held)+1024 {
		d.heldQ = rebuild(d.heldQ[:0], maps.Keys(d.held))
	}
	if len(d.flightQ) > 2*len(d.flight)+1024 {
		d.flightQ = rebuild(d.flightQ[:0], maps.Keys(d.flight))
	}
	floor := d.seen + 1
	if d.cap != 0 {
		floor = min(floor, d.cap)
	}
	for len(d.heldQ) > 0 {
		s := d.heldQ[0]
		if _, ok := d.held[s]; ok {
			floor = min(floor, s)
			break
		}
		heap.Pop(&d.heldQ)
	}
	for len(d.flightQ) > 0 {
		s := d.flightQ[0]
		if d.flight[s] > 0 {
			floor = min(floor, s)
			break
		}
		heap.Pop(&d.flightQ)
	}
	return floor
}

// done notes the record at seq of epoch done, and returns once the note is
// stored (or the record deleted): see above. A record of an epoch gone
// went with its stream.
func (d *doneLog) done(ctx context.Context, epoch, seq uint64, mark string) error {
	d.mu.Lock()
	if epoch != d.epoch {
		d.mu.Unlock()
		if mark != "" && d.mark != nil {
			d.mark([]string{mark})
		}
		return nil
	}
	g := d.next
	lead := g == nil || g.epoch != epoch
	if lead {
		g = &doneGroup{epoch: epoch, done: make(chan struct{})}
		d.next = g
	}
	g.seqs = append(g.seqs, seq)
	if mark != "" {
		g.marks = append(g.marks, mark)
	}
	d.mu.Unlock()
	if lead {
		// The group before is written meanwhile, and others join g. The
		// leader writes g whatever its own context: the others wait on
		// it, and a turn is bounded (see write and tidy).
		if d.busy() {
			time.Sleep(d.linger) // others join g meanwhile
		}
		d.turn <- struct{}{}
		d.mu.Lock()
		if d.next == g {
			d.next = nil
		}
		d.mu.Unlock()
		d.write(g)
		d.tidy(context.Background(), false)
		<-d.turn
		return g.err
	}
	end := ctx.Done()
	if end == nil {
		// The engine's context, which never ends: the leader's turn is
		// bounded.
		<-g.done
		return g.err
	}
	select {
	case <-g.done:
		return g.err
	case <-end:
		// The note is still being written: the record is not known done.
		// The caller keeps the work for the store's return (outage).
		return outage("done", ctx.Err())
	}
}

// busy reports whether a note was written within busyWithin, so that a
// new group waits d.linger for more Dones.
func (d *doneLog) busy() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.linger > 0 && time.Since(d.noteAt) < busyWithin
}

// waitingGroup returns how many records wait for the next note.
func (d *doneLog) waitingGroup() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == nil {
		return 0
	}
	return len(d.next.seqs)
}

// write writes g's notes, or deletes its records where a note is refused,
// and closes g.done. The caller holds the turn.
func (d *doneLog) write(g *doneGroup) {
	defer close(g.done)
	if len(g.marks) > 0 && d.mark != nil {
		d.mark(g.marks)
	}
	slices.Sort(g.seqs)
	for seqs := g.seqs; len(seqs) > 0; {
		part := seqs[:min(len(seqs), noteMax)]
		seqs = seqs[len(part):]
		d.mu.Lock()
		renewed, w, ident := d.epoch != g.epoch, writing{d.seen + 1, d.epoch}, d.ident
		d.mu.Unlock()
		if renewed {
			return // the stream was made anew: its records went with it
		}
		if ident == "" {
			ident = d.learnIdent(w.epoch)
		}
		note := &nats.Msg{Subject: d.subject, Data: encodeSeqs(part), Header: nats.Header{}}
		if ident != "" {
			note.Header.Set(hdrStream, ident)
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		ack, err := d.js.PublishMsg(ctx, note)
		cancel()
		if err != nil && !refused(err) {
			g.err = outage("done", fmt.Errorf("a done note: %w", err))
			return
		}
		if err != nil {
			// A note refused (the stream full): delete the records, which
			// makes room.
			if derr := d.deleteEach(part); derr != nil {
				g.err = outage("done", fmt.Errorf("a done note: %w; deleting the record: %w", err, derr))
				return
			}
			d.mu.Lock()
			for _, s := range part {
				delete(d.held, s)
			}
			d.mu.Unlock()
			continue
		}
		d.mu.Lock()
		d.sawLocked(ack.Sequence, w)
		if ack.Sequence < w.low {
			// The note went to a stream made anew, where its sequences
			// name other records.
			d.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			if err := d.stream.DeleteMsg(ctx, ack.Sequence); err != nil && !gone(err) {
				d.limited.Warn("cluster: a done note of a stream made anew was not deleted", zap.String("stream", d.subject), zap.Error(err))
			}
			cancel()
			return
		}
		if d.epoch != g.epoch {
			d.mu.Unlock()
			return // the old stream's last note: its records went with it
		}
		d.noteAt = time.Now()
		now := d.now()
		floor := d.floorAfterLocked(part)
		d.notes[ack.Sequence] = &noteLeft{floor: floor}
		for _, s := range part {
			if s >= floor {
				d.trackLocked(s, ack.Sequence, now)
			}
		}
		d.mu.Unlock()
	}
}

// floorAfterLocked removes seqs from the records held and returns the
// floor. d.mu is held.
func (d *doneLog) floorAfterLocked(seqs []uint64) uint64 {
	for _, s := range seqs {
		delete(d.held, s)
	}
	return d.floorLocked()
}

// deleteEach deletes the records at seqs one by one.
func (d *doneLog) deleteEach(seqs []uint64) error {
	for _, s := range seqs {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := d.stream.DeleteMsg(ctx, s)
		cancel()
		if err != nil && !gone(err) {
			return err
		}
	}
	return nil
}

// compact removes at once everything done that the stream holds, as tidy
// does with force: the store makes room with it when it refuses a write
// for want of it (see probe).
func (d *doneLog) compact(ctx context.Context) error {
	select {
	case d.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-d.turn }()
	d.tidy(ctx, true)
	return ctx.Err()
}

// settleNotes removes what a one-process journal of the bot (Open) noted
// done and left in the streams when it stopped without compacting (a
// crash): the records its done notes name, then the notes. A shared
// journal (OpenShared) calls it before its members consume: it reads no
// notes, and its consumers would hand those records over again. Members
// that start together each settle; a record or note another removed
// first is skipped.
func (j *Journal) settleNotes(ctx context.Context) error {
	for _, d := range []*doneLog{j.inDone, j.outDone} {
		noted, err := j.notes(ctx, d)
		if err != nil {
			return fmt.Errorf("cluster: read the done notes: %w", err)
		}
		if len(noted) == 0 {
			continue
		}
		recs, notes := make([]uint64, 0, len(noted)), map[uint64]bool{}
		for rec, note := range noted {
			recs = append(recs, rec)
			notes[note] = true
		}
		slices.Sort(recs)
		if err := d.deleteEach(recs); err != nil {
			return fmt.Errorf("cluster: remove the records noted done: %w", err)
		}
		if err := d.deleteEach(slices.Sorted(maps.Keys(notes))); err != nil {
			return fmt.Errorf("cluster: remove the done notes: %w", err)
		}
		j.limited.Info("cluster: removed the records a one-process journal noted done", zap.String("stream", d.subject),
			zap.Int("records", len(recs)), zap.Int("notes", len(notes)))
	}
	return nil
}

// tidy purges below the floor when it moved far enough (or long enough
// ago), and deletes the records done above it that waited aboveAge, and
// the notes all of whose records are deleted; with force, it purges and
// deletes whatever it can. The caller holds the turn. A failure is logged
// (rate-limited) and left for the next time: what stays is done, and
// noted so.
func (d *doneLog) tidy(ctx context.Context, force bool) {
	d.mu.Lock()
	epoch := d.epoch
	floor := d.floorLocked()
	now := d.now()
	purge := floor > d.purged && (force || floor-d.purged >= d.every || d.since >= d.bytes || now.Sub(d.purgedAt) >= purgeIdle)
	var stale []doneAbove
	var freed []uint64 // notes all of whose records are gone
	for len(d.above) > 0 {
		a := d.above[0]
		if a.seq < floor {
			delete(d.deleting, a.seq) // purged with the floor
			d.above = d.above[1:]
			continue
		}
		if !force && (now.Sub(a.at) < d.aboveAge || len(stale) == staleMax) {
			break
		}
		stale = append(stale, a)
		d.above = d.above[1:]
	}
	d.mu.Unlock()

	// A stream found made anew meanwhile is not this floor's: nothing is
	// removed from it (the window left is one request's).
	current := func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.epoch == epoch
	}
	if purge && current() {
		ctx, cancel := context.WithTimeout(ctx, tidyTimeout)
		err := d.stream.Purge(ctx, jetstream.WithPurgeSequence(floor))
		cancel()
		d.mu.Lock()
		if err == nil {
			d.purged, d.since = floor, 0
			for note, n := range d.notes {
				switch {
				case note < floor:
					delete(d.notes, note)
				case n.left == 0 && n.floor <= floor:
					delete(d.notes, note)
					freed = append(freed, note)
				}
			}
		}
		d.purgedAt = now
		d.mu.Unlock()
		if err != nil {
			d.limited.Warn("cluster: the journal's records done were not purged; they are tried again later", zap.String("stream", d.subject), zap.Error(err))
			d.mu.Lock()
			if d.epoch == epoch {
				d.above = append(stale, d.above...) // the next time
			}
			d.mu.Unlock()
			return
		}
	}
	for i, a := range stale {
		if !current() {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, tidyTimeout)
		err := d.stream.DeleteMsg(ctx, a.seq)
		cancel()
		if err != nil && !gone(err) {
			d.mu.Lock()
			if d.epoch == epoch {
				d.above = append(stale[i:], d.above...) // the next time
			}
			d.mu.Unlock()
			d.limited.Warn("cluster: a journal record done was not deleted; it is tried again later", zap.String("stream", d.subject), zap.Error(err))
			break
		}
		d.mu.Lock()
		delete(d.deleting, a.seq)
		if n := d.notes[a.note]; n != nil {
			n.left--
			if n.left <= 0 && n.floor <= d.purged {
				delete(d.notes, a.note)
				freed = append(freed, a.note)
			}
		}
		d.mu.Unlock()
	}
	for _, note := range freed {
		if !current() {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, tidyTimeout)
		err := d.stream.DeleteMsg(ctx, note)
		cancel()
		if err != nil && !gone(err) {
			// This one and the rest name only records gone: they go with
			// the next purge past them.
			d.limited.Warn("cluster: a journal's done note was not deleted; it goes with the next purge past it", zap.String("stream", d.subject), zap.Error(err))
			return
		}
	}
}

// encodeSeqs encodes sorted sequences as a note: each one's distance from
// the one before, as a uvarint.
func encodeSeqs(seqs []uint64) []byte {
	b := make([]byte, 0, len(seqs)*3)
	last := uint64(0)
	for _, s := range seqs {
		b = binary.AppendUvarint(b, s-last)
		last = s
	}
	return b
}

// errBadNote is decodeSeqs' error for a note it cannot read.
var errBadNote = errors.New("cluster: a done note cannot be read")

// decodeSeqs decodes a note made by encodeSeqs, calling f for each
// sequence.
func decodeSeqs(b []byte, f func(uint64)) error {
	last := uint64(0)
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > ^uint64(0)-last {
			return errBadNote
		}
		last += v
		f(last)
		b = b[n:]
	}
	return nil
}

// rebuild returns h filled with seqs, a heap again.
func rebuild(h seqHeap, seqs iter.Seq[uint64]) seqHeap {
	for s := range seqs {
		h = append(h, s)
	}
	heap.Init(&h)
	return h
}

// seqHeap is a min-heap of sequences.
type seqHeap []uint64

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h seqHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *seqHeap) Push(x any)        { *h = append(*h, x.(uint64)) }
func (h *seqHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
