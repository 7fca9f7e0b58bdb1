package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// ErrJournal is wrapped by the errors of an event the engine refused, and
// of a send it did not make, because the journal could not record it. It
// wraps journal.ErrOutage too while the journal records nothing (it is
// unreachable, or its store full): the platform offers refused events
// again, and a handling cut short runs again once it records; or
// journal.ErrUnrecordable for one record refused for what it is (larger
// than it keeps): permanent, the event dropped, the send failed.
var ErrJournal = errors.New("engine: journal refused")

// journalOpTimeout bounds a record's Save, and the records a handling run
// again after an outage writes anew. A record's Done bounds itself (see
// journalState.done).
const journalOpTimeout = 10 * time.Second

// journalState is the engine's side of its journal.
type journalState struct {
	log *zap.Logger

	// down is set while the journal refuses: an outage is logged once
	// when it begins and once when it ends, not per event or send.
	// outages counts those begun: a call's success ends an outage only if
	// it began before the call did (a removal that ends after the journal
	// began to refuse says nothing of the refusal). Both change under
	// outageMu.
	down     atomic.Bool
	outages  atomic.Uint64
	outageMu sync.Mutex

	// events and sends count the records this process holds and has not
	// done: events not handled yet, sends not final (see Stats).
	events, sends atomic.Int64

	// replayed holds the Futures of sends taken up from the journal by
	// their ids, so that a handler run again after a restart, repeating a
	// send, gets the Future of the one being sent again.
	mu       sync.Mutex
	replayed map[string]*future.Future[platform.SendResult]
}

func newJournalState(log *zap.Logger) *journalState {
	return &journalState{log: log, replayed: make(map[string]*future.Future[platform.SendResult])}
}

// stats returns the counts of records held and not done.
func (js *journalState) stats() journal.Stats {
	return journal.Stats{Events: js.events.Load(), Sends: js.sends.Load()}
}

// failed records that a journal call failed with err and returns err
// wrapped in ErrJournal. A refusal of one record (journal.ErrUnrecordable)
// is returned permanent, and is no outage; any other failure is an
// outage (wrapping journal.ErrOutage, if err does not), whose start is
// logged once.
func (js *journalState) failed(what string, err error) error {
	if errors.Is(err, journal.ErrUnrecordable) {
		return platform.Permanent(fmt.Errorf("%w: %s: %w", ErrJournal, what, err))
	}
	js.outageMu.Lock()
	began := !js.down.Load()
	if began {
		js.down.Store(true)
		js.outages.Add(1)
	}
	js.outageMu.Unlock()
	if began {
		js.log.Error("engine: the journal refuses; events are refused, and handlings wait for it to be back", zap.String("op", what), zap.Error(err))
	}
	if !errors.Is(err, journal.ErrOutage) {
		return fmt.Errorf("%w: %s: %w: %w", ErrJournal, what, journal.ErrOutage, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrJournal, what, err)
}

// begin returns what a journal call about to be made passes to ok.
func (js *journalState) begin() uint64 { return js.outages.Load() }

// ok records that a journal call that began at since (begin) succeeded,
// logging the end of an outage that began before it.
func (js *journalState) ok(since uint64) {
	if !js.down.Load() {
		return
	}
	js.outageMu.Lock()
	end := js.down.Load() && js.outages.Load() == since
	if end {
		js.down.Store(false)
	}
	js.outageMu.Unlock()
	if end {
		js.log.Info("engine: the journal is back")
	}
}

// doneEvent and doneSend mark an event's or a send's record done (see
// done) and count it out; a nil record is none. doneEvent reports
// whether the record is done (none is).
func (js *journalState) doneEvent(rec journal.Record) bool {
	if rec == nil {
		return true
	}
	ok := js.done(rec, nil)
	js.events.Add(-1)
	return ok
}

// doneEventWith is doneEvent for the record of an event and those of
// the events its handling took, removed together (journal.Holder).
func (js *journalState) doneEventWith(rec journal.Holder, taken []journal.Record) bool {
	since := js.begin()
	err := rec.DoneWith(context.Background(), taken)
	js.events.Add(-int64(1 + len(taken)))
	if err != nil {
		js.failed("done", err)
		return false
	}
	js.ok(since)
	return true
}

// failSend ends a covered send that failed for good with err (see
// journal.Covering) and counts it out.
func (js *journalState) failSend(c journal.Covering, err error) {
	since := js.begin()
	if ferr := c.Failed(context.Background(), err); ferr != nil {
		js.failed("done", ferr)
	} else {
		js.ok(since)
	}
	js.sends.Add(-1)
}

func (js *journalState) doneSend(rec journal.Record, delivered *platform.SendResult) {
	if rec != nil {
		js.done(rec, delivered)
		js.sends.Add(-1)
	}
}

// done marks rec done, logging a failure: the record then stays, and its
// event is handled again (or its send made again) after a restart. It
// reports whether rec is done.
//
// Its context never ends: a Record bounds its own requests (see
// journal.Record.Done), and a context with a deadline of its own — a
// timer set and stopped for every event and send — was 2% of a durable
// reply's CPU (BenchmarkBotReplies/apart) for a bound that is never the
// one reached.
func (js *journalState) done(rec journal.Record, delivered *platform.SendResult) bool {
	since := js.begin()
	if err := rec.Done(context.Background(), delivered); err != nil {
		js.failed("done", err)
		return false
	}
	js.ok(since)
	return true
}

// replay returns the Future of the taken-up send id, if there is one.
func (js *journalState) replay(id string) *future.Future[platform.SendResult] {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.replayed[id]
}

// refusal is the engine's own refusal of an event or a send handed to it
// (Member.Deliver, Member.Make): the chat's queue is full, there is no
// adapter. The journal returns it wrapped; the engine tells it from the
// journal's failures, which are outages.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// refusalOf returns the engine's refusal that err wraps, or nil.
func refusalOf(err error) error {
	var r *refusal
	if errors.As(err, &r) {
		return r.err
	}
	var se *stoppingError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

// stoppingError is the refusal of an engine that stops: its error for the
// engine's callers (ErrEngineClosed for an event, ErrDispatcherClosed for
// a send), and journal.ErrStopping to the journal, which keeps the events
// it recorded for the next start.
type stoppingError struct{ err error }

func (s *stoppingError) Error() string        { return s.err.Error() }
func (s *stoppingError) Unwrap() error        { return s.err }
func (s *stoppingError) Is(target error) bool { return target == journal.ErrStopping }

// errStopping refuses an event once the engine stops.
var errStopping error = &stoppingError{ErrEngineClosed}
