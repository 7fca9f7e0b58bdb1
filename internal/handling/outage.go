package handling

import (
	"context"
	"errors"

	"github.com/heraldbot/herald/core/journal"
)

// A journal's outage in a run (an effect's record refused with an error
// wrapping journal.ErrOutage) ends what the run can do: the effects its
// handlers ask for after it fail at once with the outage's error, and the
// handling is not done. The engine runs it again once the journal records
// again (Start.Again): the effects made before the outage are replayed
// from its log, and those the outage refused are made then — a send
// under the id it had, which the journal recognises if it recorded it
// after all.

// IsOutage reports whether err is a journal's outage: it wraps
// journal.ErrOutage.
func IsOutage(err error) bool { return errors.Is(err, journal.ErrOutage) }

// outage records that the journal refused the effect at pos with err, an
// outage: the log is good up to pos (not included), and the effects asked
// for from now on fail with err. pos -1 (an effect of no place: the error
// hook's, the middleware's) marks no place.
func (r *Run) outage(pos int, err error) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	r.outageLocked(pos, err)
}

func (r *Run) outageLocked(pos int, err error) {
	if r.down == nil {
		r.down, r.downAt = err, maxEffects
	}
	if pos >= 0 && pos < r.downAt {
		r.downAt = pos
	}
}

// Outage returns the error of the journal's outage that ended what r can
// do, or nil.
func (r *Run) Outage() error {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return r.down
}

// unrecorded is an effect's record the journal refused during an outage,
// made again before the handling runs again.
type unrecorded struct {
	id   string
	data []byte
}

// keepUnrecorded keeps the record data of the effect id (a Once's or a
// state access's) that the journal refused with an outage, and records
// the outage after pos: the effect was made and is in the log, which a
// run again replays, and its record is made before that run.
func (r *Run) keepUnrecorded(pos int, id string, data []byte, err error) {
	h := r.h
	h.mu.Lock()
	defer h.mu.Unlock()
	x := h.extraLocked()
	x.unrecorded = append(x.unrecorded, unrecorded{id, data})
	r.outageLocked(pos+1, err)
}

// AfterOutage readies h, whose run r the journal's outage ended, for a
// run again: its log is cut at the outage's place, and the parts of it
// past there (a goroutine's effects) are made again, under the same ids.
func (h *Handling) AfterOutage(r *Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.downAt < len(h.log) {
		clear(h.log[r.downAt:])
		h.log = h.log[:r.downAt]
	}
	if h.x != nil && h.x.question != nil && h.x.question.at >= r.downAt {
		h.x.question = nil // the question is asked again
	}
}

// Rerecord makes the records of h's effects that an outage refused
// (keepUnrecorded), before h runs again. It returns the journal's error
// if it refuses again; the records not made are kept.
func (h *Handling) Rerecord(ctx context.Context, env Env) error {
	h.mu.Lock()
	var todo []unrecorded
	if h.x != nil {
		todo, h.x.unrecorded = h.x.unrecorded, nil
	}
	h.mu.Unlock()
	for i, u := range todo {
		// A record refused for what it is (journal.ErrUnrecordable) is
		// given up: the effect stands, unrecorded, as one the journal
		// refused outside an outage.
		if err := env.RecordEffect(ctx, u.id, u.data); IsOutage(err) {
			h.mu.Lock()
			x := h.extraLocked()
			x.unrecorded = append(todo[i:len(todo):len(todo)], x.unrecorded...)
			h.mu.Unlock()
			return err
		}
	}
	return nil
}
