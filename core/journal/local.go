package journal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Log is where the journal of one process ([NewLocal]) keeps its records:
// package cluster's Journal on NATS JetStream, say. Its methods are called
// concurrently. Its errors wrap [ErrOutage] or [ErrUnrecordable] as a
// [Journal]'s do, and a Log that can tell when an outage ended is a
// [Waiter].
type Log interface {
	// RecordEvent records ev. duplicate reports that an event with ev's
	// platform and ID was recorded before: nothing is recorded then.
	RecordEvent(ctx context.Context, ev platform.Event) (rec Record, duplicate bool, err error)
	// RecordSend records s (its Done aside). A send whose ID was recorded
	// before and is not done is a duplicate, not recorded again; so is one
	// marked delivered (see Record.Done), whose result it then returns —
	// it looks for marks only for a send with Repeat set. A covered send
	// (Send.Covered) may be kept under its event's record instead, its
	// Record then a [Covering].
	RecordSend(ctx context.Context, s Send) (Record, Appended, error)
	// Pending returns what is recorded and not done: the sends, then the
	// events, each in the order they were recorded, and the dead letters.
	Pending(ctx context.Context) (Pending, error)
	// Keep and Forget keep the dead letters.
	sender.DeadLetterBackend
}

// EventBatchLog is implemented by a [Log] that records several events
// with one wait, for [Local.AppendEvents].
type EventBatchLog interface {
	// RecordEvents records evs in order, as RecordEvent records each,
	// and returns each one's outcome, len(evs) of them: an event refused
	// does not stop the others, which may be recorded after it.
	RecordEvents(ctx context.Context, evs []platform.Event) []RecordedEvent
}

// RecordedEvent is the outcome of one event of [EventBatchLog]'s
// RecordEvents: RecordEvent's results.
type RecordedEvent struct {
	Record    Record
	Duplicate bool
	Err       error
}

// EffectLog is implemented by a [Log] that keeps the results of
// handlers' effects (see Journal.RecordEffect); a Local over another Log
// keeps none.
type EffectLog interface {
	Effect(ctx context.Context, id string) (value []byte, ok bool, err error)
	RecordEffect(ctx context.Context, id string, value []byte) error
}

// Pending is what a [Log] holds at start: its records not done, as the
// journal hands them over (their Redelivered and Held are set by it).
type Pending struct {
	Sends       []Outgoing
	Events      []Incoming
	DeadLetters []sender.DeadLetter
}

// Local is the [Journal] of one process: every event and send is handed
// back at once to its own member, which leads every adapter. Over a nil
// [Log] it keeps nothing: the engine's default, whose events and sends
// live in the process's memory only. Over a Log it records each event
// before the member takes it and each send before its Future is handed
// out, removes them when done, and at Recover hands over what a crash
// left, the sends first.
//
// Create it with [NewLocal]; it is safe for concurrent use.
type Local struct {
	log Log
	m   atomic.Pointer[Member]

	// refused holds the records of events the member refused (a full
	// queue): the log knows their IDs, so when the platform delivers one
	// again it is a duplicate there, and is offered to the member again
	// from here. At most maxRefused are kept, the oldest dropped first.
	rmu     sync.Mutex
	refused map[string]Record
	order   []string
}

// maxRefused bounds the refused events a Local keeps for their platform's
// next delivery.
const maxRefused = 4096

var (
	_ Journal      = (*Local)(nil)
	_ Waiter       = (*Local)(nil)
	_ EventBatcher = (*Local)(nil)
)

// NewLocal returns the journal of one process over log; a nil log keeps
// nothing.
func NewLocal(log Log) *Local { return &Local{log: log} }

// Attach binds the journal to its engine (see Journal).
func (l *Local) Attach(m Member) error {
	if m == nil {
		return errors.New("journal: Attach: nil member")
	}
	if !l.m.CompareAndSwap(nil, &m) {
		return ErrAttached
	}
	return nil
}

func (l *Local) member() (Member, error) {
	if p := l.m.Load(); p != nil {
		return *p, nil
	}
	return nil, ErrNotAttached
}

// AppendEvent records ev in the log, if there is one, and delivers it
// (see Journal). An event the member refuses because it stops stays
// recorded, for the next start, and counts as appended.
func (l *Local) AppendEvent(ctx context.Context, ev platform.Event) (bool, error) {
	m, err := l.member()
	if err != nil {
		return false, err
	}
	if l.log == nil {
		return false, m.Deliver(Incoming{Event: ev})
	}
	rec, dup, err := l.log.RecordEvent(ctx, ev)
	if err != nil {
		return false, err
	}
	return l.deliverRecorded(ctx, m, ev, rec, dup)
}

// AppendEvents appends evs in order (see EventBatcher): over a log that is
// an [EventBatchLog], recorded with one wait, then delivered in order;
// else one by one, as AppendEvent appends each.
func (l *Local) AppendEvents(ctx context.Context, evs []platform.Event) ([]bool, error) {
	m, err := l.member()
	if err != nil {
		return nil, err
	}
	bl, ok := l.log.(EventBatchLog)
	if !ok {
		return AppendEach(ctx, l, evs)
	}
	dups := make([]bool, 0, len(evs))
	res := bl.RecordEvents(ctx, evs)
	if len(res) != len(evs) {
		return dups, fmt.Errorf("journal: the log gave %d outcomes for %d events", len(res), len(evs))
	}
	for i, r := range res {
		dup, err := r.Duplicate, r.Err
		if err == nil {
			dup, err = l.deliverRecorded(ctx, m, evs[i], r.Record, r.Duplicate)
		}
		if err != nil {
			return dups, errors.Join(err, l.keepLater(ctx, evs[i+1:], res[i+1:]))
		}
		dups = append(dups, dup)
	}
	return dups, nil
}

// keepLater keeps the records of events recorded after one that was not
// taken (res their outcomes): they are not taken either, and the platform
// delivers them again — as it does an event the member refused.
func (l *Local) keepLater(ctx context.Context, evs []platform.Event, res []RecordedEvent) error {
	var errs []error
	for i, r := range res {
		switch {
		case r.Err != nil || r.Record == nil:
			// Not recorded, or recorded before (a duplicate: its record
			// is kept already, or was handled).
		case evs[i].ID == "":
			// Nothing to know it by when it comes again.
			if err := r.Record.Done(ctx, nil); err != nil {
				errs = append(errs, fmt.Errorf("journal: removing a record not taken: %w", err))
			}
		default:
			errs = append(errs, l.keepRefused(ctx, evs[i], r.Record))
		}
	}
	return errors.Join(errs...)
}

// deliverRecorded hands ev, recorded as rec (or before, if dup), to m, as
// AppendEvent does once the log recorded it.
func (l *Local) deliverRecorded(ctx context.Context, m Member, ev platform.Event, rec Record, dup bool) (bool, error) {
	if dup {
		if rec = l.takeRefused(ev); rec == nil {
			return true, nil
		}
	}
	if err := m.Deliver(Incoming{Event: ev, Record: rec}); err != nil {
		if errors.Is(err, ErrStopping) {
			return false, nil // recorded: the next start handles it
		}
		if ev.ID == "" {
			return false, refused(ctx, rec, err) // nothing to know it by
		}
		// Kept: the platform delivers it again (or the next start
		// handles it), and the log knows it already.
		return false, errors.Join(err, l.keepRefused(ctx, ev, rec))
	}
	return false, nil
}

func refusedKey(ev platform.Event) string { return ev.Platform + ":" + ev.ID }

// keepRefused keeps the record of the refused event ev, dropping the
// oldest kept beyond maxRefused; it returns the failure to remove one.
func (l *Local) keepRefused(ctx context.Context, ev platform.Event, rec Record) error {
	l.rmu.Lock()
	if l.refused == nil {
		l.refused = make(map[string]Record)
	}
	key := refusedKey(ev)
	if _, ok := l.refused[key]; !ok {
		l.order = append(l.order, key)
	}
	l.refused[key] = rec
	var drop Record
	for len(l.order) > maxRefused {
		old := l.order[0]
		l.order = l.order[1:]
		if r, ok := l.refused[old]; ok {
			delete(l.refused, old)
			drop = r
			break
		}
	}
	l.rmu.Unlock()
	if drop != nil {
		if err := drop.Done(ctx, nil); err != nil {
			return fmt.Errorf("journal: removing an old refused record: %w", err)
		}
	}
	return nil
}

// takeRefused returns, and forgets, the record of ev if it was refused.
func (l *Local) takeRefused(ev platform.Event) Record {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	key := refusedKey(ev)
	rec, ok := l.refused[key]
	if !ok {
		return nil
	}
	delete(l.refused, key)
	if i := slices.Index(l.order, key); i >= 0 {
		l.order = slices.Delete(l.order, i, i+1)
	}
	return rec
}

// AppendSend records s in the log, if there is one, and hands it to the
// member to make (see Journal).
func (l *Local) AppendSend(ctx context.Context, s Send) (Appended, error) {
	m, err := l.member()
	if err != nil {
		return Appended{}, err
	}
	out := Outgoing{ID: s.ID, Request: s.Request, Done: s.Done, Settled: s.Settled}
	if l.log == nil {
		return Appended{}, m.Make(out)
	}
	rec, a, err := l.log.RecordSend(ctx, s)
	if err != nil || a.Duplicate {
		return a, err
	}
	out.Record = rec
	if err := m.Make(out); err != nil {
		return Appended{}, refused(ctx, rec, err)
	}
	return Appended{}, nil
}

// refused removes the record of what the member refused, and returns the
// refusal, joined by the removal's failure if it failed (the record then
// stays, and is handed over at the next start).
func refused(ctx context.Context, rec Record, err error) error {
	end := func() error { return rec.Done(ctx, nil) }
	if c, ok := rec.(Covering); ok {
		end = func() error { return c.Unmade(ctx) } // never made: not a failure to mark
	}
	if derr := end(); derr != nil {
		return errors.Join(err, fmt.Errorf("journal: removing the refused record: %w", derr))
	}
	return err
}

// Recover hands over what the log held at start — the sends, then the
// events, each in order — and returns the log as the dead letters'
// backend, with those it keeps; nothing without a log (see Journal).
func (l *Local) Recover(ctx context.Context) (sender.DeadLetterBackend, []sender.DeadLetter, error) {
	m, err := l.member()
	if err != nil || l.log == nil {
		return nil, nil, err
	}
	rec, err := l.log.Pending(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: recover: %w", err)
	}
	for _, s := range rec.Sends {
		s.Redelivered, s.Held = true, true
		if err := m.Make(s); err != nil {
			return nil, nil, fmt.Errorf("journal: take up a send: %w", err)
		}
	}
	for _, in := range rec.Events {
		in.Redelivered, in.Held = true, true
		if err := m.Deliver(in); err != nil {
			return nil, nil, fmt.Errorf("journal: take up an event: %w", err)
		}
	}
	return l.log, rec.DeadLetters, nil
}

// Join leads every adapter of the member until ctx ends; it then stops
// them receiving, waits for the member to finish what it took, and closes
// their connections (see Journal).
func (l *Local) Join(ctx context.Context) error {
	m, err := l.member()
	if err != nil {
		return err
	}
	conn, closeConns := context.WithCancel(context.WithoutCancel(ctx))
	defer closeConns()
	var leads sync.WaitGroup
	for _, name := range m.Adapters() {
		// An adapter that fails for good is the member's to report: Lead
		// returns its error to it, and it stops (see Member.Lead).
		leads.Go(func() { _ = m.Lead(ctx, conn, name) })
	}
	<-ctx.Done()
	// The connections stay while what was taken is done: the member's
	// own bound (its shutdown timeout) ends the wait.
	_ = m.Drain(context.WithoutCancel(ctx))
	closeConns()
	leads.Wait()
	return nil
}

// WaitRecording waits until the log records again after an outage, if
// the log is a [Waiter]; a Local without a log never has one, and returns
// nil at once. Over a log that is no Waiter it returns ctx's error, nil
// while ctx has not ended (see the function WaitRecording).
func (l *Local) WaitRecording(ctx context.Context) error {
	if w, ok := l.log.(Waiter); ok {
		return w.WaitRecording(ctx)
	}
	return ctx.Err()
}

// Effect returns what the log recorded under id, if it keeps effects (see
// Journal).
func (l *Local) Effect(ctx context.Context, id string) ([]byte, bool, error) {
	if el, ok := l.log.(EffectLog); ok {
		return el.Effect(ctx, id)
	}
	return nil, false, nil
}

// RecordEffect records value under id in the log, if it keeps effects (see
// Journal).
func (l *Local) RecordEffect(ctx context.Context, id string, value []byte) error {
	if el, ok := l.log.(EffectLog); ok {
		return el.RecordEffect(ctx, id, value)
	}
	return nil
}

// Interact makes in on the member's own adapter (see Journal).
func (l *Local) Interact(ctx context.Context, adapter string, in Interaction) ([]byte, error) {
	m, err := l.member()
	if err != nil {
		return nil, err
	}
	return m.Interact(ctx, adapter, in)
}
