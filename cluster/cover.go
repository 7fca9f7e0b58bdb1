package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

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
//   - a covered send whose outcome is final while the event's record stays
//     after it — delivered, or failed for good (a dead letter) — is marked
//     in sent_B, so that the handler run again after a crash does not make
//     it a second time but gets its result, or its error, back — the marks of many chats' sends in one message (see
//     marks.go), and kept in memory while the event is held, for a run
//     again in this process (after an outage); one its member refused
//     (never made) is not;
//     the last one the event's removal waits for needs no mark — the
//     event's removal, made before that send's Done returns and so before
//     its chat's next send starts, says the handling is done for good;
//   - a covered send that must keep its progress (the parts of a long text
//     delivered, a wait it is in) gets a record of its own at its first
//     Save, as any send has, and is taken up from it after a restart;
//   - a send of the same chat recorded on its own (a file's bytes,
//     Engine.Send, a send made after its handler returned) first gives the
//     covered sends of its chat not yet final records of their own, in
//     their order: a restart makes OUT's sends before the handlers run
//     again, so it would otherwise make it before them; and until it is
//     done no send of its chat is covered (one covered while its record is
//     being written would be queued before it);
//   - while the event's removal waits, its handling may run again: a send
//     of it recorded on its own and delivered meanwhile is marked too
//     (Holding, journal.Send.Settled).
//
// So a reply costs no write of its own but, while its handler still runs
// or other sends of the event are still to be made, its mark: an event
// answered with one reply is one record written and one done note shared
// with others, instead of two records written one by one and their notes
// (BenchmarkJournalEvent).
//
// The engine does not ask to cover the sends of the run of the handler
// middleware an event offered to a waiting conversation passes through
// (its error hook's included): the conversation that takes the event
// removes its record with its own.
//
// A send with Repeat set (its event taken up again) is never covered: it
// may have been made before the crash, which only a record, or its mark,
// tells. Nor is one made once the event's removal was asked for (a
// goroutine its handler started, sending after the handler returned): it
// is recorded on its own. Nor is a send to a chat where covered sends of
// another chat's events wait (a log chat many chats' handlers write to):
// after a restart those handlers run again at once, in no set order, so it
// is recorded on its own and gives them records first. Nor is a send that
// carries a file's bytes: it is journaled whole, as before (bounded by
// Config.MaxRecord, taken up after a crash as it was), rather than made
// again by a handler that may no longer have them.

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
	rec.inChat = ev.Platform + "\x00" + chatOf(*ev)
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
	chat := chatOfSend(&s.Request)
	if j.recording[chat] > 0 {
		// A send of this chat recorded on its own is not done: one
		// covered now could be queued before it (its record still being
		// written) or made after it at a restart. Recorded too.
		return nil
	}
	if list := j.coveredChats[chat]; len(list) > 0 && list[0].ev.inChat != ev.inChat {
		// Covered sends of another chat's events wait in this one: after
		// a restart the two chats' handlers run again at once, and could
		// make them in another order. Recorded on its own instead (they
		// get their records first).
		return nil
	}
	ev.held++
	c := &coveredSend{j: j, ev: ev, s: s, chat: chat}
	j.coveredChats[chat] = append(j.coveredChats[chat], c)
	return c
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

// Holding reports whether r's removal was asked for and waits for
// covered sends (see journal.Holder).
func (r *record) Holding() bool {
	if r.coverKey == "" {
		return false
	}
	r.j.coverMu.Lock()
	defer r.j.coverMu.Unlock()
	return r.asked && !r.removed
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
// held); r last, so that the handling is never done without them. Once r
// is removed, so are the marks of its covered sends kept in memory.
func doneAll(ctx context.Context, r *record, taken []journal.Record) error {
	var err error
	if len(taken) == 0 {
		err = r.done(ctx, nil) // the common case, without a list of errors
	} else {
		errs := make([]error, 0, len(taken)+1)
		for _, t := range taken {
			errs = append(errs, t.Done(ctx, nil))
		}
		err = errors.Join(append(errs, r.done(ctx, nil))...)
	}
	if r.coverKey != "" {
		j := r.j
		j.coverMu.Lock()
		if err == nil {
			r.removed = true
		}
		for _, id := range r.marked {
			delete(j.marks, id)
		}
		r.marked = nil
		j.coverMu.Unlock()
	}
	return err
}

// coveredSend is the Record of a covered send (journal.Covering).
type coveredSend struct {
	j    *Journal
	ev   *record      // the event's record, which covers it
	s    journal.Send // for a record of its own (Save, or a later send of its chat)
	chat string       // its chat's key in the journal's coveredChats

	mu sync.Mutex
	// own is its record of its own, made at its first Save or before a
	// send of its chat recorded on its own, or nil; ended says its
	// outcome is final (or it was refused): no record is made for it
	// any more.
	own   journal.Record
	ended bool
}

var (
	_ journal.Covering = (*coveredSend)(nil)
	_ journal.Holder   = (*record)(nil)
)

// chatOfSend returns the key of a send's chat among the journal's
// coveredChats.
func chatOfSend(req *platform.SendRequest) string { return req.Platform + "\x00" + req.Target.ID }

// Covered reports true: Done wants the result of a delivered send.
func (c *coveredSend) Covered() bool { return true }

// end marks c ended and returns its own record, if it has one.
func (c *coveredSend) end() journal.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	return c.own
}

// release takes c out of what its event's record and its chat wait for,
// and reports whether it was the last send the event's removal, asked
// for, waited for: the caller then removes the event with taken.
func (c *coveredSend) release() (last bool, taken []journal.Record) {
	j, ev := c.j, c.ev
	j.coverMu.Lock()
	defer j.coverMu.Unlock()
	if list := j.coveredChats[c.chat]; len(list) > 0 {
		if i := slices.Index(list, c); i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) == 0 {
			delete(j.coveredChats, c.chat)
		} else {
			j.coveredChats[c.chat] = list
		}
	}
	ev.held--
	if ev.held > 0 || !ev.asked {
		return false, nil
	}
	taken = ev.taken
	ev.taken = nil // asked stays set: Holding until removed, no more sends covered
	if j.covers[ev.coverKey] == ev {
		delete(j.covers, ev.coverKey)
	}
	return true, taken
}

// Done ends the send, delivered: the event's removal once it waited for
// this send alone and was asked for; else the send's mark, with its
// result, so that a run again after a crash does not make it again (see
// above). The Dones of one send are called one after another, never at
// once.
func (c *coveredSend) Done(ctx context.Context, delivered *platform.SendResult) error {
	return c.finish(ctx, delivered, nil)
}

// Failed ends the send, failed for good with err (a dead letter): as
// Done, its mark keeping err, so that a run again after a crash does not
// make it again but gets err back (see journal.Covering).
func (c *coveredSend) Failed(ctx context.Context, err error) error {
	return c.finish(ctx, nil, err)
}

// finish is Done and Failed.
func (c *coveredSend) finish(ctx context.Context, delivered *platform.SendResult, failure error) error {
	own := c.end()
	last, taken := c.release()
	var errs []error
	if own != nil {
		d := delivered
		if last {
			d = nil // the event's removal follows: no mark needed
		}
		errs = append(errs, own.Done(ctx, d)) // its mark, if delivered
	}
	j := c.j
	switch {
	case last:
		errs = append(errs, doneAll(ctx, c.ev, taken))
	case delivered != nil && own == nil, failure != nil:
		id, m := c.s.ID, markData{Sum: c.s.Sum, What: c.s.What}
		if delivered != nil {
			m.SendResult = *delivered
		}
		if failure != nil {
			w := encodeError(failure)
			m.Err = &w
		}
		errs = append(errs, j.finish(ctx, func(context.Context) error { return j.markW.mark(id, m) }))
		// Known here too, while the event is held: a run again in this
		// process (after an outage) finds it without a request.
		j.coverMu.Lock()
		if !c.ev.removed {
			if j.marks == nil {
				j.marks = make(map[string]markData)
			}
			j.marks[id] = m
			c.ev.marked = append(c.ev.marked, id)
		}
		j.coverMu.Unlock()
	}
	return errors.Join(errs...)
}

// Unmade ends a send its member refused, never made (see
// journal.Covering): nothing to mark, and a run again makes it.
func (c *coveredSend) Unmade(ctx context.Context) error {
	own := c.end()
	last, taken := c.release()
	var errs []error
	if own != nil {
		errs = append(errs, own.Done(ctx, nil))
	}
	if last {
		errs = append(errs, doneAll(ctx, c.ev, taken))
	}
	return errors.Join(errs...)
}

// Save records the send's progress: on its record of its own, made at the
// first Save, so that a restart takes it up from there.
func (c *coveredSend) Save(ctx context.Context, p *platform.Progress) error {
	own, err := c.ensureOwn(ctx)
	if err != nil || own == nil {
		return err
	}
	return own.Save(ctx, p)
}

// ensureOwn gives c a record of its own in OUT, unless it has one or has
// ended, and returns it (nil when it ended without one). A record whose
// write is answered as a duplicate (an earlier write of it whose answer
// was lost) is not known here: c then stays without one, and that record
// is taken up at the next start (the send made again at most once more,
// as a record whose removal's answer was lost).
func (c *coveredSend) ensureOwn(ctx context.Context) (journal.Record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own != nil || c.ended {
		return c.own, nil
	}
	s := c.s
	s.Covered = false
	rec, a, err := c.j.recordSend(ctx, s)
	if err != nil {
		return nil, err
	}
	if !a.Duplicate {
		c.own = rec
	}
	return c.own, nil
}

// beginRecording counts a send of req's chat being recorded on its own,
// until recorded is called with the key it returns: meanwhile no send of
// that chat is covered. It returns "" for a journal that covers none.
func (j *Journal) beginRecording(req *platform.SendRequest) string {
	if j.covers == nil {
		return ""
	}
	chat := chatOfSend(req)
	j.coverMu.Lock()
	j.recording[chat]++
	j.coverMu.Unlock()
	return chat
}

// recorded ends beginRecording's count for chat.
func (j *Journal) recorded(chat string) {
	if chat == "" {
		return
	}
	j.coverMu.Lock()
	defer j.coverMu.Unlock()
	if n := j.recording[chat]; n > 1 {
		j.recording[chat] = n - 1
	} else {
		delete(j.recording, chat)
	}
}

// recordCoveredBefore gives each covered send of req's chat not yet final
// a record of its own, in their order, before a send of that chat is
// recorded on its own: at a restart OUT's sends are made before the
// events' handlers run again, so a send recorded after a covered one of
// its chat that has none would be made before it.
func (j *Journal) recordCoveredBefore(ctx context.Context, req *platform.SendRequest) error {
	if j.covers == nil {
		return nil
	}
	j.coverMu.Lock()
	list := slices.Clone(j.coveredChats[chatOfSend(req)])
	j.coverMu.Unlock()
	for _, c := range list {
		if _, err := c.ensureOwn(ctx); err != nil {
			return fmt.Errorf("cluster: record the sends of its chat before it: %w", err)
		}
	}
	return nil
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
