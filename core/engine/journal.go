package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// ErrJournal is wrapped by the errors of an event the engine refused, and
// of a send it did not make, because the journal could not record it (it
// is unreachable, or its store is full).
var ErrJournal = errors.New("engine: journal refused")

// Journal keeps, outside the process, every event the engine takes until
// its handling ended and every send until its outcome is final, with the
// sends that failed for good: after a crash the engine sends again what was
// not sent and handles again what was not handled, and nothing is lost
// (see [WithJournal]). Package cluster implements it on NATS JetStream.
//
// Its methods are called concurrently. The errors it returns wrap the
// cause; the engine wraps them in ErrJournal.
type Journal interface {
	// AppendEvent records ev before the engine takes it. duplicate
	// reports that an event with ev's platform and ID was recorded before
	// (the platform delivered it again): the engine then does not handle
	// it again.
	AppendEvent(ctx context.Context, ev platform.Event) (rec JournalRecord, duplicate bool, err error)
	// AppendSend records a send. A send whose ID was recorded before, and
	// is not done, is a duplicate, not recorded again; so is one marked
	// delivered (see JournalRecord.Done), whose result the journal then
	// returns — it looks for marks only for a send with Repeat set.
	AppendSend(ctx context.Context, s JournalSend) (JournalAppend, error)
	// Recover returns what is recorded and not done: the sends, then the
	// events, each in the order they were recorded, and the dead letters.
	Recover(ctx context.Context) (Recovered, error)
	// Keep and Forget keep the dead letters (see sender.DeadLetterBackend).
	sender.DeadLetterBackend
}

// JournalSend is a send for [Journal.AppendSend].
type JournalSend struct {
	// ID, when not empty, names the send across runs of the handler that
	// makes it: the platform, the event's ID and the send's number.
	ID      string
	Request platform.SendRequest
	// Repeat is set for a send of a handler run again on an event taken up
	// after a restart: it may have been delivered before, and marked so.
	Repeat bool
}

// JournalAppend is what [Journal.AppendSend] did.
type JournalAppend struct {
	// Record is the send's record; nil for a duplicate.
	Record JournalRecord
	// Duplicate is set when the send was recorded before.
	Duplicate bool
	// Delivered is the result of a duplicate marked delivered, or nil.
	Delivered *platform.SendResult
	// Key, with a Cluster, names the send to ClusterMember.Result: the
	// gateway makes it, and this process hears its outcome.
	Key string
}

// JournalRecord is one event or send a [Journal] holds.
type JournalRecord interface {
	// Done removes the record: the event's handling ended, or the send's
	// outcome is final. A non-nil delivered marks a send with an ID
	// delivered, with its result, for as long as the journal recognizes
	// duplicates: the engine asks for it when the send's event is still
	// being handled (a crash then runs its handler again, which repeats
	// the send). Events get nil.
	Done(ctx context.Context, delivered *platform.SendResult) error
	// Save records how far a send got (the parts of a long text delivered,
	// a wait it is in), so that a send taken up again after a restart goes
	// on from there. Events ignore it.
	Save(ctx context.Context, p *platform.Progress) error
}

// Recovered is what a [Journal] holds at start: its records not done.
type Recovered struct {
	Sends       []RecoveredSend
	Events      []RecoveredEvent
	DeadLetters []sender.DeadLetter
}

// RecoveredSend is a send recorded and not done.
type RecoveredSend struct {
	// ID is the send's id given to AppendSend.
	ID      string
	Request platform.SendRequest
	// Progress is what the last Save recorded, or the zero value.
	Progress platform.Progress
	Record   JournalRecord
	// Fence, if not nil, is asked before each run of the send: an error
	// (a gateway's lease ran out) ends the send with it at once, without
	// making it and without Done, for another to make.
	Fence func() error
}

// RecoveredEvent is an event recorded whose handling did not end.
type RecoveredEvent struct {
	Event  platform.Event
	Record JournalRecord
}

// journalOpTimeout bounds one call to the journal.
const journalOpTimeout = 10 * time.Second

// journalState is the engine's side of its journal.
type journalState struct {
	j   Journal
	log *zap.Logger

	// down is set while the journal refuses: an outage is logged once
	// when it begins and once when it ends, not per event or send.
	down atomic.Bool

	// events and sends count the records this process holds and has not
	// done: events not handled yet, sends not final (see JournalStats).
	events, sends atomic.Int64

	// replayed holds the Futures of recovered sends by their ids, so that
	// a handler run again after a restart, repeating a send, gets the
	// Future of the one being sent again.
	mu       sync.Mutex
	replayed map[string]*future.Future[platform.SendResult]
}

// failed records that a journal call failed with err, logging the start of
// an outage, and returns err wrapped in ErrJournal.
func (js *journalState) failed(what string, err error) error {
	if js.down.CompareAndSwap(false, true) {
		js.log.Error("engine: the journal refuses; events are refused and sends fail until it is back", zap.String("op", what), zap.Error(err))
	}
	return fmt.Errorf("%w: %s: %w", ErrJournal, what, err)
}

// ok records that a journal call succeeded, logging the end of an outage.
func (js *journalState) ok() {
	if js.down.CompareAndSwap(true, false) {
		js.log.Info("engine: the journal is back")
	}
}

// JournalStats counts what this process holds in its journal and has not
// done yet: Events recorded and not handled, Sends recorded and not final.
// Both are zero once every reply was sent and every event handled: the
// moment a crash can repeat nothing.
type JournalStats struct {
	Events, Sends int64
}

// doneEvent and doneSend mark an event's or a send's record done (see
// done) and count it out.
func (js *journalState) doneEvent(rec JournalRecord) {
	if rec != nil {
		js.done(rec, nil)
		js.events.Add(-1)
	}
}

func (js *journalState) doneSend(rec JournalRecord, delivered *platform.SendResult) {
	if rec != nil {
		js.done(rec, delivered)
		js.sends.Add(-1)
	}
}

// done marks rec done, logging a failure: the record then stays, and its
// event is handled again (or its send made again) after a restart.
func (js *journalState) done(rec JournalRecord, delivered *platform.SendResult) {
	ctx, cancel := context.WithTimeout(context.Background(), journalOpTimeout)
	defer cancel()
	if err := rec.Done(ctx, delivered); err != nil {
		js.failed("done", err)
		return
	}
	js.ok()
}

// replay returns the Future of the recovered send id, if there is one.
func (js *journalState) replay(id string) *future.Future[platform.SendResult] {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.replayed[id]
}

// recoverJournal takes up what the journal holds: the dead letters into
// the store, the sends into the OutboundDispatcher, then the events into
// the inbound queue, each in order. It runs before the adapters start.
func (e *Engine) recoverJournal(ctx context.Context) error {
	js := e.journal
	rec, err := js.j.Recover(ctx)
	if err != nil {
		return fmt.Errorf("engine: journal: recover: %w", err)
	}
	e.deadLetters.Restore(rec.DeadLetters)
	js.sends.Add(int64(len(rec.Sends)))
	js.events.Add(int64(len(rec.Events)))
	for _, rs := range rec.Sends {
		s := e.senders[rs.Request.Platform]
		if s == nil {
			e.log.Warn("engine: a journaled send is for no adapter; keeping it", zap.String("platform", rs.Request.Platform))
			continue
		}
		t := e.newSendTask(s, rs.Request)
		t.id, t.rec = rs.ID, rs.Record
		t.progress.Journaled = true
		if !rs.Progress.Started.IsZero() {
			t.progress.Started, t.progress.Attempts, t.progress.Platform = rs.Progress.Started, rs.Progress.Attempts, rs.Progress.Platform
			if wait := time.Until(rs.Progress.NotBefore); wait > 0 {
				t.notBefore = rs.Progress.NotBefore
			}
		}
		if rs.ID != "" {
			js.mu.Lock()
			js.replayed[rs.ID] = t.f
			js.mu.Unlock()
		}
		if err := e.out.Submit(chatKey(rs.Request.Platform, rs.Request.Target.ID), t.run); err != nil {
			e.log.Warn("engine: a journaled send could not be queued; it is kept for the next start", zap.Error(err))
		}
	}
	expected := map[string]bool{}
	for _, re := range rec.Events {
		if err := e.enqueue(re.Event, re.Record, true); err != nil {
			e.log.Warn("engine: a journaled event could not be queued; it is kept for the next start",
				zap.String("platform", re.Event.Platform), zap.String("event", re.Event.ID), zap.Error(err))
			continue
		}
		// Its handler may be a conversation the crash cut off: the answer
		// may be queued behind it already (recovered, or sent while the bot
		// was down).
		if key := inboundKey(re.Event); !expected[key] {
			expected[key] = true
			e.expectConversation(key)
		}
	}
	if n := len(rec.Sends) + len(rec.Events); n > 0 || len(rec.DeadLetters) > 0 {
		e.log.Info("engine: taken up from the journal", zap.Int("sends", len(rec.Sends)),
			zap.Int("events", len(rec.Events)), zap.Int("dead_letters", len(rec.DeadLetters)))
	}
	return nil
}
