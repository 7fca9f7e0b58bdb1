package cluster

import (
	"context"
	"errors"
	"strings"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// A handler's send made while its event is being handled (a covered send,
// journal.Send.Covered) needs no record of its own in the one-process
// journal: the event's record covers it. Until the handling ended and
// every such send's outcome is final, the event's record stays (its Done
// is held: journal.Holder), so a crash runs the handler again, which makes
// the send again under the same ID — as it would find a record of the
// send. What a send record would add, the journal keeps otherwise:
//
//   - a covered send delivered while the event's record stays after it is
//     marked delivered in sent_B, so that the handler run again after a
//     crash does not make it a second time — the marks of many chats' sends
//     in one message (see marks.go);
//     the last one the event's removal waits for needs no mark — the
//     event's removal, made before that send's Done returns and so before
//     its chat's next send starts, says the handling is done for good;
//   - a covered send that must keep its progress (the parts of a long text
//     delivered, a wait it is in) gets a record of its own at its first
//     Save, as any send has, and is taken up from it after a restart.
//
// So a reply costs no write of its own but, while its handler still runs
// or other sends of the event are still to be made, its mark: an event
// answered with one reply is one record written and one done note shared
// with others, instead of two records written one by one and their notes
// (BenchmarkJournalEvent).
//
// A send with Repeat set (its event taken up again) is never covered: it
// may have been made before the crash, which only a record, or its mark,
// tells. Nor is one made once the event's removal was asked for (a
// goroutine its handler started, sending after the handler returned): it
// is recorded on its own. Nor is a send that carries a file's bytes: it is
// journaled whole, as before (bounded by Config.MaxRecord, taken up after
// a crash as it was), rather than made again by a handler that may no
// longer have them.

// coverKey returns the key under which the journal holds the records of
// events whose handlings' sends it covers: the send IDs of a handling
// begin with it (see journal.Send.ID), followed by a "/".
func coverKey(ev platform.Event) string { return ev.Platform + ":" + ev.ID }

// holdable makes rec, the record of ev, one that covers its handling's
// sends, if the journal covers sends and ev has an ID.
func (j *Journal) holdable(rec *record, ev *platform.Event) {
	if j.covers == nil || ev.ID == "" {
		return
	}
	rec.coverKey = coverKey(*ev)
	j.coverMu.Lock()
	j.covers[rec.coverKey] = rec
	j.coverMu.Unlock()
}

// cover returns the record of s kept under its event's record, or nil
// when the journal holds no such record (none, or its removal asked for).
func (j *Journal) cover(s journal.Send) *coveredSend {
	if j.covers == nil || carriesBytes(&s.Request.Message) {
		return nil
	}
	slash := strings.LastIndexByte(s.ID, '/')
	if slash < 0 {
		return nil
	}
	j.coverMu.Lock()
	defer j.coverMu.Unlock()
	ev := j.covers[s.ID[:slash]]
	if ev == nil || ev.asked {
		return nil
	}
	ev.held++
	return &coveredSend{j: j, ev: ev, s: s}
}

// holdDone reports whether r's removal waits for covered sends, keeping
// taken to be removed with it then; when it does not, r no longer covers
// sends.
func (r *record) holdDone(taken []journal.Record) bool {
	j := r.j
	j.coverMu.Lock()
	defer j.coverMu.Unlock()
	if r.held > 0 {
		r.asked, r.taken = true, taken
		return true
	}
	if j.covers[r.coverKey] == r {
		delete(j.covers, r.coverKey)
	}
	return false
}

// DoneWith removes r with the records of the events its handling took,
// once the covered sends it waits for are final (see journal.Holder).
func (r *record) DoneWith(ctx context.Context, taken []journal.Record) error {
	if r.coverKey != "" && r.holdDone(taken) {
		return nil
	}
	return doneAll(ctx, r, taken)
}

// doneAll removes taken, then r: a crash in between runs the handling
// again from r, without the answers taken (as before an event could be
// held); r last, so that the handling is never done without them.
func doneAll(ctx context.Context, r *record, taken []journal.Record) error {
	var errs []error
	for _, t := range taken {
		errs = append(errs, t.Done(ctx, nil))
	}
	errs = append(errs, r.done(ctx, nil))
	return errors.Join(errs...)
}

// coveredSend is the Record of a covered send (journal.Covering).
type coveredSend struct {
	j  *Journal
	ev *record      // the event's record, which covers it
	s  journal.Send // for a record of its own (Save)
	// own is its record of its own, made at its first Save, or nil.
	own journal.Record
}

var (
	_ journal.Covering = (*coveredSend)(nil)
	_ journal.Holder   = (*record)(nil)
)

// Covered reports true: Done wants the result of a delivered send.
func (c *coveredSend) Covered() bool { return true }

// Done ends the send: the event's removal once it waited for this send
// alone and was asked for, else its mark, if delivered (see above). The
// Dones of one send are called one after another, never at once.
func (c *coveredSend) Done(ctx context.Context, delivered *platform.SendResult) error {
	var errs []error
	if c.own != nil {
		errs = append(errs, c.own.Done(ctx, delivered))
		delivered = nil // marked by its record
	}
	j, ev := c.j, c.ev
	j.coverMu.Lock()
	ev.held--
	last := ev.held == 0 && ev.asked
	var taken []journal.Record
	if last {
		taken = ev.taken
		ev.asked, ev.taken = false, nil
		if j.covers[ev.coverKey] == ev {
			delete(j.covers, ev.coverKey)
		}
	}
	j.coverMu.Unlock()
	switch {
	case last:
		errs = append(errs, doneAll(ctx, ev, taken))
	case delivered != nil:
		id, m := c.s.ID, markData{SendResult: *delivered, Sum: c.s.Sum, What: c.s.What}
		errs = append(errs, j.finish(ctx, func(context.Context) error { return j.markW.mark(id, m) }))
	}
	return errors.Join(errs...)
}

// Save records the send's progress: on its record of its own, made at the
// first Save, so that a restart takes it up from there.
func (c *coveredSend) Save(ctx context.Context, p *platform.Progress) error {
	if c.own == nil {
		s := c.s
		s.Covered = false
		rec, a, err := c.j.RecordSend(ctx, s)
		if err != nil {
			return err
		}
		if a.Duplicate || rec == nil {
			return nil // recorded before under its ID: that record keeps it
		}
		c.own = rec
	}
	return c.own.Save(ctx, p)
}

// carriesBytes reports whether m has an attachment with its bytes.
func carriesBytes(m *platform.OutboundMessage) bool {
	for i := range m.Attachments {
		if len(m.Attachments[i].Data) > 0 {
			return true
		}
	}
	return false
}
