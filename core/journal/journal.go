// Package journal is the contract between Herald's engine and the journal
// it runs on, as database/sql/driver is between database/sql and its
// drivers: bot authors pass a Journal to engine.WithJournal and need
// nothing else here.
//
// Whatever the deployment, the engine runs one loop on a [Journal]: an
// event is appended to it (HandleEvent) and handed back to the member
// that handles its chat ([Member.Deliver]); a send is appended to it
// (Reply, Send) and handed to the member that makes its platform account's
// sends, the gateway ([Member.Make]), whose outcome comes back to the
// send's Done; [Journal.Join] runs the member's part — it takes up what
// the journal holds, leads the adapters the member leads, and leaves.
//
//   - [NewLocal] is the journal of one process: it hands every event and
//     send back at once to its own member. Over a nil [Log] it keeps
//     nothing — the engine's default, in memory; over a Log (package
//     cluster's, on NATS JetStream) every event is kept until its handling
//     ended and every send until its outcome is final, and Join takes up
//     what a crash left.
//   - Package cluster's Shared is the journal of several processes: events
//     go to the member that owns their chat's partition, sends to the
//     gateway that holds their account's lease.
//
// Package journaltest is the suite every Journal passes.
package journal

import (
	"context"
	"errors"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Errors of journals.
var (
	// ErrNotAttached is returned by a Journal used before Attach, and
	// ErrAttached by a second Attach: a journal serves one engine.
	ErrNotAttached = errors.New("journal: not attached to an engine")
	ErrAttached    = errors.New("journal: attached to an engine already")
	// ErrStopping is wrapped by the error of a Member that refuses an
	// event or a send because its engine stops: a journal that keeps
	// records keeps it for the next start (or the next owner), and takes
	// it as appended.
	ErrStopping = errors.New("journal: the engine stops")
	// ErrUnheard resolves the outcome of a send made by another process
	// (a gateway) that this process will no longer hear: it left.
	ErrUnheard = errors.New("journal: the send's outcome is made elsewhere and no longer heard here")

	// ErrOutage is wrapped by the error of a journal that cannot record
	// anything now: its store is unreachable, full, or not serving (a NATS
	// server restarting, its disk out of space). Nothing was recorded, and
	// the same call, unchanged, succeeds once the journal is back (see
	// [Waiter]). It is an outage of the journal, never a fault of the
	// event or the send: the engine refuses events meanwhile (the platform
	// keeps them), and a handling whose sends were refused so is not done
	// — it is run again once the journal records again, its sends made
	// before recognised by their IDs.
	ErrOutage = errors.New("journal: the journal cannot record now")

	// ErrUnrecordable is wrapped by the error of a journal that refuses one
	// record for what it is — larger than the journal keeps, or not
	// encodable — while it records others. Recording it again fails again:
	// the error is also platform.Permanent, an error of that event or send
	// alone, never an outage of the journal.
	ErrUnrecordable = errors.New("journal: the record cannot be recorded")
)

// Waiter is implemented by a [Journal] (and a [Log]) that can tell when it
// records again after an outage (an error wrapping [ErrOutage]).
type Waiter interface {
	// WaitRecording returns nil once the journal records again: at once
	// when it knows of no outage, else once the journal saw its store take
	// a write again (it tries one itself, on a heartbeat, while the outage
	// lasts). It returns ctx's error, unwrapped, if ctx ends first. A call
	// after WaitRecording returned may still fail with ErrOutage: the
	// store failed again.
	WaitRecording(ctx context.Context) error
}

// WaitRecording waits until j records again after an outage (see
// [Waiter]); for a journal that is no Waiter it returns ctx's error, nil
// while ctx has not ended: it cannot tell, and the caller paces its tries.
func WaitRecording(ctx context.Context, j Journal) error {
	if w, ok := j.(Waiter); ok {
		return w.WaitRecording(ctx)
	}
	return ctx.Err()
}

// Journal is what an engine runs on: where it appends the events it takes
// and the sends its handlers make, and what hands them back to the member
// that handles or makes them. Its methods are safe for concurrent use.
//
// Errors a journal returns for its own failures wrap their cause and one
// of two sentinels, so that the engine can tell them apart (it wraps both
// in engine.ErrJournal):
//
//   - [ErrOutage]: the journal cannot record anything now (its store
//     unreachable or full). Nothing was recorded; the same call succeeds
//     once the journal is back, which a [Waiter] tells.
//   - [ErrUnrecordable]: this one record cannot be recorded (larger than
//     the journal keeps); others are. The error is permanent, the
//     event's or the send's alone, and no outage.
//
// A journal's error that wraps neither is taken as an outage. An error of
// the Member's (a chat's full queue, an engine that stops) is returned as
// the member gave it, wrapped, and is no failure of the journal's.
type Journal interface {
	// Attach binds the journal to its engine, m, before any other call;
	// the engine calls it once, from engine.New. A second call returns
	// ErrAttached.
	Attach(m Member) error

	// AppendEvent records ev before the engine takes it, and hands it to
	// the member that handles its chat: this engine's Deliver at once, or
	// (a journal shared by several processes) the owner of its chat's
	// partition, later. duplicate reports that an event with ev's
	// platform and ID was recorded before (the platform delivered it
	// again): it is not handled again. When Deliver refuses the event, its
	// record is removed and Deliver's error returned, wrapped.
	AppendEvent(ctx context.Context, ev platform.Event) (duplicate bool, err error)

	// AppendSend records s and hands it to the member that makes its
	// account's sends: this engine's Make at once, or the gateway's
	// later; s.Done gets its final outcome, wherever it is made. A send
	// whose ID was recorded before and is not done, or was marked
	// delivered (see Record.Done), is a duplicate: it is not recorded nor
	// made again, and s.Done is not called. When Make refuses the send,
	// its record is removed and Make's error returned, wrapped.
	AppendSend(ctx context.Context, s Send) (Appended, error)

	// Recover takes up what the journal holds and this member should: it
	// hands over the sends not done, then the events not handled, each in
	// order (Member.Make, Member.Deliver). It returns where the engine
	// keeps its dead letters besides its store's memory, and the letters
	// kept there, which the engine restores; a nil backend keeps them in
	// memory only. The engine calls it once, from Run, before Join.
	Recover(ctx context.Context) (backend sender.DeadLetterBackend, kept []sender.DeadLetter, err error)

	// Join runs the member's part until ctx ends or the journal fails for
	// good: the connections of the adapters the member leads
	// (Member.Lead), their listeners (Member.Listen), and the events and
	// sends others append for it. When ctx ends it stops taking work,
	// waits for the member to finish what it took (Member.Drain), lets
	// the others take over what the member held, and returns nil.
	Join(ctx context.Context) error

	// Effect returns the value recorded under id by RecordEffect (a
	// handler's Once result), if the journal still has it.
	Effect(ctx context.Context, id string) (value []byte, ok bool, err error)
	// RecordEffect records value under id, for as long as the journal
	// recognizes duplicates, so that a handler run again after a crash or
	// by another process gets it back (see engine.Once). A journal that
	// keeps nothing records nothing.
	RecordEffect(ctx context.Context, id string, value []byte) error

	// Interact makes in on the named adapter's account through the member
	// that leads it: this engine's Interact when it leads the account, or
	// another process's. It returns what a download fetched, and the
	// adapter's error as the adapter gave it (its kind and the platform
	// sentinels it matched); with no member leading the account, an error
	// that is not permanent.
	Interact(ctx context.Context, adapter string, in Interaction) ([]byte, error)
}

// Relayer is implemented by a [Journal] whose AppendSend hands a send to
// another process to make (the gateway of its account, package cluster's
// Shared) instead of to this process's dispatcher: such a send never
// waits for room in this process's queue, nor is refused for lack of it.
type Relayer interface {
	// RelaysSends reports whether the journal hands sends to another
	// process.
	RelaysSends() bool
}

// EventBatcher is implemented by a [Journal] that appends several events
// at less cost than one by one: [Local] over a Log that records them with
// one wait (an [EventBatchLog], package cluster's Journal). The engine
// uses it for an adapter's batch (platform.Inbound.HandleAll).
type EventBatcher interface {
	// AppendEvents appends evs in order, as AppendEvent appends each, and
	// returns, for the events it took from the start, whether each was a
	// duplicate: all of evs, or, with an error, those before the event
	// the error is about, evs[len(duplicates)]. The events after that one
	// are not taken either: those the journal recorded all the same are
	// kept for the platform's next delivery, as an event its member
	// refused is.
	AppendEvents(ctx context.Context, evs []platform.Event) (duplicates []bool, err error)
}

// AppendEach appends evs to j one by one with AppendEvent, as an
// [EventBatcher] appends a batch: it stops at the first error, returning
// whether each event before it was a duplicate. A journal that cannot
// record a batch together implements AppendEvents with it; the engine
// uses it for a journal that is no EventBatcher.
func AppendEach(ctx context.Context, j Journal, evs []platform.Event) ([]bool, error) {
	dups := make([]bool, 0, len(evs))
	for _, ev := range evs {
		dup, err := j.AppendEvent(ctx, ev)
		if err != nil {
			return dups, err
		}
		dups = append(dups, dup)
	}
	return dups, nil
}

// Member is the engine as its [Journal] sees it. Its methods are safe for
// concurrent use.
type Member interface {
	// Adapters returns the names of the engine's adapters: the platform
	// accounts it can lead.
	Adapters() []string

	// Deliver queues in for its handlers and returns once it is queued.
	// It refuses in — with an error wrapping engine.ErrQueueFull — when
	// its chat already has as many events waiting as the engine allows,
	// unless in.Held says the journal bounds what it hands over; and, with
	// an error wrapping ErrStopping, once the engine stops. in.Record is
	// done once its handling ended.
	Deliver(in Incoming) error

	// Make queues out to be sent through the engine's dispatcher and
	// sender chain, and returns once it is queued, refusing it as Deliver
	// refuses an event; out.Done gets its final outcome, and out.Record is
	// done by then (but for a send a forced shutdown cut off, which stays
	// for the next start, or the next gateway).
	Make(out Outgoing) error

	// Lead runs the named adapter's connection to its platform: this
	// member leads the account. The adapter receives events until ctx
	// ends, and keeps its connection for the sends still being made until
	// conn ends too (an adapter whose sends do not need it stops at once).
	// Lead returns once both ended and the adapter stopped: nil after a
	// clean stop, and the adapter's error if it failed for good, which the
	// member reports itself (its engine stops).
	Lead(ctx, conn context.Context, adapter string) error

	// Listen takes events in at the named adapter's own listener (a
	// webhook), in a process that does not lead the account, until ctx
	// ends; it returns nil at once for an adapter without one.
	Listen(ctx context.Context, adapter string) error

	// Drain waits until the events and sends the member took are done, or
	// ctx ends, and returns ctx's error then.
	Drain(ctx context.Context) error

	// Interact makes in on this process's adapter of the account it
	// leads, for Journal.Interact.
	Interact(ctx context.Context, adapter string, in Interaction) ([]byte, error)
}

// Stats counts what one process holds in its journal and has not done
// yet: Events recorded and not handled, Sends recorded and not final. Both
// are zero once every reply was sent and every event handled: the moment
// a crash can repeat nothing. A journal that keeps nothing (the default)
// counts nothing. The engine reports them (engine.Stats' Journal).
type Stats struct {
	Events, Sends int64
}

// Incoming is an event a [Journal] hands to its [Member].
type Incoming struct {
	Event platform.Event
	// Record is the event's record, done once its handling ended; nil for
	// a journal that keeps nothing.
	Record Record
	// Redelivered says the event may have been handled before — by
	// another process, or by this one before a restart: its handlers run
	// again and may repeat what they did then.
	Redelivered bool
	// Held says the journal bounds what it hands over (a consumer with at
	// most so many events unacknowledged) and keeps the event if it is
	// refused: the member queues it even past its chat's queue bound.
	Held bool
}

// Outgoing is a send a [Journal] hands to its [Member] to make.
type Outgoing struct {
	// ID names the send across runs of the handler that made it (see
	// Send.ID), or is empty.
	ID      string
	Request platform.SendRequest
	// Record is the send's record, or nil.
	Record Record
	// Progress is what the record's last Save kept, or the zero value.
	Progress platform.Progress
	// Fence, if not nil, is asked before each run of the send: an error (a
	// gateway's lease ran out) ends the send with it at once, without
	// making it and without Done, for another to make.
	Fence func() error
	// Redelivered says the send is taken up from the journal (after a
	// restart, or by a new gateway): it may have been made before, and a
	// handler run again may repeat it.
	Redelivered bool
	// Held is Incoming's.
	Held bool
	// Done, if not nil, is called once with the send's final outcome.
	Done func(platform.SendResult, error)
	// Settled is Send's, for a send made in the process that appended it;
	// nil otherwise.
	Settled func() bool
}

// Send is a send for [Journal.AppendSend].
type Send struct {
	// ID, when not empty, names the send across runs of the handler that
	// makes it: the platform, the event's ID and the send's place in the
	// handling; or, for a send outside handlers, the bot's own id
	// (engine.SendID) or a dead letter's replay.
	ID      string
	Request platform.SendRequest
	// Repeat is set for a send that may have been delivered before, and
	// marked so: a handler's run again on an event handed over again
	// (Incoming.Redelivered), or a send whose id is not its event's (a
	// named send, a replay) made again maybe after the server forgot the
	// id — a server started again knows only the ids of the messages it
	// still holds. The journal looks up its mark before recording it.
	Repeat bool
	// Done is called once with the send's final outcome, wherever it is
	// made; not for a duplicate, nor when AppendSend fails.
	Done func(platform.SendResult, error)
	// Settled, if not nil, reports whether the handling of the event whose
	// handler made the send ended for good: a run again can no longer
	// repeat the send, so a delivered send needs no mark (Record.Done).
	// With nil, every delivered send with an ID is marked.
	Settled func() bool
	// Sum identifies what the send sends (its chat and message, hashed;
	// zero for unknown) and What is its text, cut short. A journal that
	// keeps records keeps both with a send that has an ID, and with its
	// delivered mark, and returns them for a duplicate (Appended), so
	// that a handler run again whose send at a place differs from the one
	// made there before is found out.
	Sum  uint64
	What string
	// Covered says the send is made by a handler of this process while
	// its event's handling runs (its ID begins with the event's platform
	// and ID, then a "/"): the journal may keep it under the event's
	// record instead of a record of its own (a Local over a log whose
	// RecordSend covers it). The event's record then stays until the
	// handling ended and the send's outcome is final (its Record is a
	// [Holder], the send's a [Covering]), so that a crash before then runs
	// the handler again, which makes the send again under the same ID;
	// the send's Record marks its outcome (delivered, or failed for good)
	// unless the event's removal follows at once. A send with Repeat set
	// is never covered: it may
	// have been made before the crash, which only a record of its own
	// tells.
	Covered bool
}

// Covering is implemented by the Record of a covered send (Send.Covered)
// that the journal keeps under its event's record instead of a record of
// its own. Its Done wants the send's result whenever the send was
// delivered, whether or not the handling ended: the record itself tells
// whether a mark is needed (the event's record is not removed right
// after) or not (this was the last send the event's removal waited for).
// Failed, called instead of Done for a send that failed for good, marks
// it so with err, so that a run again does not make it either but gets
// err back (Appended.Failed). Unmade ends a send its member refused
// (never made): a run again makes it.
type Covering interface {
	Record
	Covered() bool
	Failed(ctx context.Context, err error) error
	Unmade(ctx context.Context) error
}

// Holder is implemented by an event's Record whose removal may wait for
// the covered sends of its handling (Send.Covered) to be final: Done then
// returns at once, and the removal is made by the last of those sends'
// Done. DoneWith is Done for the record and those of the events its
// handling took (a conversation's answers), removed together with it, so
// that a crash before the covered sends are final runs the handling again
// with every event it took.
//
// Holding reports whether the record's removal was asked for and still
// waits: until it is made, the handling may run again after a crash, so a
// send of it that is not covered and is delivered meanwhile is marked
// (Send.Settled reports false).
type Holder interface {
	Record
	DoneWith(ctx context.Context, taken []Record) error
	Holding() bool
}

// Appended is what [Journal.AppendSend] did.
type Appended struct {
	// Duplicate is set when the send was recorded before.
	Duplicate bool
	// Delivered is the result of a duplicate marked delivered, or nil.
	Delivered *platform.SendResult
	// Failed is the error of a duplicate marked failed for good (a covered
	// send, see Covering), or nil: its Future gets it again.
	Failed error
	// Sum and What are those of the send recorded before, for a duplicate
	// whose record or mark the journal still has; zero otherwise.
	Sum  uint64
	What string
}

// Parker is implemented by the Record of an event that its journal may
// hand to another member while this one has it (package cluster's shared
// journal moves a partition so when a member joins or leaves). Before it
// hands events over, such a journal waits for the handlings of those it
// delivered to end — but for a handling that waits for its user (a
// conversation between two of its events): that one ends only with an
// event the member no longer takes once the chat moves, and the next
// member runs it again. The engine calls Parked(true) when the event's
// handling starts waiting so, and Parked(false) when it runs again, in
// that order, for its own event and for those its waits took. It calls
// both under locks of its own: they must not block, nor call the engine.
type Parker interface {
	Parked(waiting bool)
	// HandedOver reports whether the journal handed the event to another
	// member while its handling waited: the engine then drops the
	// handling instead of running it again when its wait ends (its
	// deadline), leaving the record as it is.
	HandedOver() bool
}

// Record is one event or send a [Journal] holds.
type Record interface {
	// Done removes the record: the event's handling ended, or the send's
	// outcome is final. A non-nil delivered marks a send with an ID
	// delivered, with its result, for as long as the journal recognizes
	// duplicates: the engine asks for it when the send's event is still
	// being handled (a crash then runs its handler again, which repeats
	// the send). Events get nil. An error wrapping ErrOutage says the
	// journal could not remove the record now: a journal that is a
	// [Waiter] keeps what is left to do and does it once it is back, with
	// nothing more asked of the caller; the record may be handed over
	// again if the process ends before then. The engine calls it with a
	// context that never ends: Done bounds each of its requests itself,
	// and returns in bounded time whatever ctx.
	Done(ctx context.Context, delivered *platform.SendResult) error
	// Save records how far a send got (the parts of a long text delivered,
	// a wait it is in), so that a send taken up again after a restart goes
	// on from there. Events ignore it.
	Save(ctx context.Context, p *platform.Progress) error
}
