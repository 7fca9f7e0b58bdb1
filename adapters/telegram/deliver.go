package telegram

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/platform"
)

// errRunEnded is what [runState.deliver] returns once its Run is ending.
var errRunEnded = errors.New("telegram: Run is ending")

// seenWindow is how many update IDs a [ledger] remembers.
const seenWindow = 1024

// runState is one Run's delivery of updates to handle.
type runState struct {
	name   string // the adapter's, every event's Platform
	handle func(platform.Event) error
	// handleAll, if not nil, takes a batch (Inbound.HandleAll): a poll's
	// updates go to it together (deliverAll); else handle takes each.
	handleAll func([]platform.Event) (int, error)
	taking    func() bool // Inbound.Taking: false once Receiving closed
	username  string
	presses   *pressTracker
	log       *zap.Logger
	limited   *ratelog.Logger
	taken     *ledger
	stats     *counters
	stop      context.Context // Inbound.Stop: bounds the run's confirming call

	mu     sync.Mutex // serialises deliveries; guards closed
	closed bool
}

// deliver delivers u alone (see deliverAll): nil when u was taken, else
// the error with which an event of it was refused, or errRunEnded.
func (rs *runState) deliver(u *update) error {
	_, err := rs.deliverAll([]*update{u})
	return err
}

// dropDuplicate counts and logs u, an update taken whole before.
func (rs *runState) dropDuplicate(u *update) {
	rs.stats.duplicates.Add(1)
	rs.log.Debug("telegram: dropping a duplicate update", zap.Int("update_id", u.UpdateID))
}

// notePress notes u's callback or pre-checkout query in rs.presses as
// arrived, before the engine sees it, and returns its ID ("" for none).
func (rs *runState) notePress(u *update, now time.Time) string {
	if rs.presses == nil {
		return ""
	}
	switch {
	case u.CallbackQuery != nil && u.CallbackQuery.ID != "":
		rs.presses.add(u.CallbackQuery.ID, queryCallback, now)
		return u.CallbackQuery.ID
	case u.PreCheckoutQuery != nil && u.PreCheckoutQuery.ID != "":
		rs.presses.add(u.PreCheckoutQuery.ID, queryPreCheckout, now)
		return u.PreCheckoutQuery.ID
	}
	return ""
}

// deliverAll hands the events of us, consecutive updates, to the engine
// in order, together (handleAll, recorded with one wait; or handle for
// each), unless Run has ended. It returns how many updates were taken from
// the start: all and nil, or n and the error with which the engine refused
// an event of us[n] (or errRunEnded). An update is taken once the engine
// took every event of it, now or before (a duplicate is dropped); the
// events of us[n] taken before the refusal are recorded, and skipped when
// it is delivered again; the updates after it are not taken. An event the
// engine can never take (a permanent refusal) is dropped and the rest go
// on. A callback query is noted in rs.presses as arrived, before the
// engine sees it (a handler may answer it at once), and forgotten again if
// its update is not taken; so is a pre-checkout query.
func (rs *runState) deliverAll(us []*update) (int, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed || !rs.taking() {
		// Run ends, or the engine takes no more (its Receiving closed
		// a moment before Run's context ends): the updates are left for
		// the next Run, here or in another process.
		return 0, errRunEnded
	}
	// Each update's events still to take are evs[first:first+n].
	type part struct {
		u              *update
		whole          bool // taken before: a duplicate
		first, done, n int
		press          string
	}
	parts := make([]part, 0, len(us))
	var evs []platform.Event
	now := time.Now()
	for _, u := range us {
		done, whole := rs.taken.progress(u.UpdateID)
		if whole {
			parts = append(parts, part{u: u, whole: true, first: len(evs)})
			continue
		}
		all := updateToEvents(rs.name, u, rs.username, now.UTC())
		done = min(done, len(all)) // a ledger entry of an ID Telegram used before its weekly reset
		parts = append(parts, part{u: u, first: len(evs), done: done, n: len(all) - done, press: rs.notePress(u, now)})
		evs = append(evs, all[done:]...)
	}
	// off counts the events taken from the start, and those dropped for
	// good on the way; refusal is why the one at off was not taken.
	off := 0
	var refusal error
	for off < len(evs) {
		n, err := rs.takeAll(evs[off:])
		off += min(max(n, 0), len(evs)-off)
		if err == nil || off == len(evs) {
			break
		}
		if platform.IsPermanent(err) {
			// The engine can never take it (the journal refuses it for
			// what it is), and logged it: asking again is futile.
			rs.stats.refused.Add(1)
			rs.log.Debug("telegram: an event the engine can never take is dropped",
				zap.String("event", evs[off].ID), zap.String("kind", string(evs[off].Kind)), zap.Error(err))
			off++
			continue
		}
		refusal = err
		break
	}
	for k, p := range parts {
		switch {
		case p.whole:
			rs.dropDuplicate(p.u)
			continue
		case refusal == nil || off >= p.first+p.n:
			rs.taken.record(p.u.UpdateID, takenWhole)
			rs.stats.taken.Add(1)
			continue
		}
		// Refused within this update: what was taken of it is recorded;
		// it and the updates after it are not taken, their presses
		// forgotten again.
		if took := off - p.first; took > 0 {
			rs.taken.record(p.u.UpdateID, p.done+took)
		}
		for _, q := range parts[k:] {
			if q.press != "" {
				rs.presses.forget(q.press)
			}
		}
		rs.stats.refused.Add(1)
		return k, refusal
	}
	return len(us), nil
}

// takeAll gives evs to the engine: to handleAll, or to handle one by one
// as handleAll would.
func (rs *runState) takeAll(evs []platform.Event) (int, error) {
	if rs.handleAll != nil {
		return rs.handleAll(evs)
	}
	for i, ev := range evs {
		if err := rs.handle(ev); err != nil {
			return i, err
		}
	}
	return len(evs), nil
}

// close ends deliveries: once it returns, handle is not called again.
func (rs *runState) close() {
	rs.mu.Lock()
	rs.closed = true
	rs.mu.Unlock()
}

// takenWhole is the progress of an update all of whose events were taken.
const takenWhole = -1

// ledger remembers, for the last seenWindow updates handed on, how many of
// their events were taken (takenWhole for all), so that an update
// delivered again is dropped, or resumed after the events taken already.
// It outlives a Run, so a redelivery after a restart is caught too. It is
// safe for concurrent use.
type ledger struct {
	mu     sync.Mutex
	taken  map[int]int     // update ID → events taken, or takenWhole
	ring   [seenWindow]int // the same IDs; ring[next] is the oldest once full
	next   int
	filled bool
}

func newLedger() *ledger { return &ledger{taken: make(map[int]int)} }

// progress returns how many events of update id were taken, and whether
// all were.
func (l *ledger) progress(id int) (events int, whole bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.taken[id]
	if !ok {
		return 0, false
	}
	if n == takenWhole {
		return 0, true
	}
	return n, false
}

// record notes that n events of update id (takenWhole: all) were taken,
// forgetting the oldest update when the window is full.
func (l *ledger) record(id, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.taken[id]; !ok {
		if l.filled {
			delete(l.taken, l.ring[l.next])
		}
		l.ring[l.next] = id
		l.next = (l.next + 1) % seenWindow
		l.filled = l.filled || l.next == 0
	}
	l.taken[id] = n
}

// Stats counts what an [Adapter] did with the updates and webhook requests
// it received since [New], across runs, as [Adapter.Stats] returns it. It
// is a plain value; the zero value counts nothing.
type Stats struct {
	// Taken is how many updates were handed on whole: handle took every
	// event of them.
	Taken uint64
	// Duplicates is how many updates were dropped because they had been
	// taken before, among the last 1024: Telegram sent a webhook update
	// again (after a timeout or a lost answer), or getUpdates returned one
	// a confirmation did not reach. Each is logged at debug level.
	Duplicates uint64
	// Refused is how many times handle refused an event of an update (the
	// update is then delivered again: asked for again in Polling mode,
	// answered 503 in Webhook mode).
	Refused uint64
	// Malformed is how many updates were skipped because they did not
	// decode or had no update_id.
	Malformed uint64
	// WebhookForbidden is how many webhook requests were refused with 403
	// for a wrong or missing secret token.
	WebhookForbidden uint64
	// WebhookInvalid is how many webhook requests were refused before
	// delivery for what they were: 405 (not POST), 400 (a body that could
	// not be read in time, or is not JSON) and 413 (over 4 MiB).
	WebhookInvalid uint64
	// WebhookBusy is how many webhook requests with a large body were
	// answered 503 with Retry-After because the bodies being read already
	// held the bytes they may hold at once (see [Adapter.WebhookHandler]).
	WebhookBusy uint64
}

// counters are an Adapter's [Stats], safe for concurrent use.
type counters struct {
	taken, duplicates, refused, malformed atomic.Uint64
	forbidden, invalid, busy              atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Taken: c.taken.Load(), Duplicates: c.duplicates.Load(), Refused: c.refused.Load(), Malformed: c.malformed.Load(),
		WebhookForbidden: c.forbidden.Load(), WebhookInvalid: c.invalid.Load(), WebhookBusy: c.busy.Load(),
	}
}

// Stats returns what the adapter did with the updates and webhook requests
// it received so far: updates taken, dropped as duplicates, refused and
// malformed, and webhook requests refused. It is safe for concurrent use.
func (a *Adapter) Stats() Stats { return a.stats.snapshot() }
