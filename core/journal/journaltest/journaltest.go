// Package journaltest is the suite every [journal.Journal] passes: the
// engine's default journal (journal.NewLocal(nil)) and package cluster's
// journals run it in their tests, as adapters run adaptertest and stores
// statetest. A journal of your own runs it too:
//
//	func TestJournal(t *testing.T) {
//		journaltest.Run(t, func(t *testing.T) journal.Journal { return open(t) }, journaltest.Features{Durable: true})
//	}
//
// The suite plays the engine: a Member that records what the journal
// hands it, makes every send at once, and leads one adapter, "t".
package journaltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// Adapter is the name of the one adapter the suite's member has.
const Adapter = "t"

// Features says what a journal does beyond the contract's floor.
type Features struct {
	// Durable journals keep what they record: they know an event or a
	// send by its ID (a duplicate), and hand over at Recover what a
	// journal on the same store left undone. Reopen, if not nil, returns
	// a new journal on the store of the last one open returned (the
	// process restarted); the suite then checks what Recover hands over.
	Durable bool
	Reopen  func(t *testing.T) journal.Journal
	// Deferred journals hand events and sends over once Join runs (from
	// consumers of their own), not at once from AppendEvent and
	// AppendSend; refusals of the member are then not the caller's.
	Deferred bool

	// Outage, if not nil, makes the store of the journal open returned
	// last refuse every write (its disk full, say) and returns the
	// function that gives the store back. The suite then checks that
	// appends fail with errors wrapping journal.ErrOutage and hand nothing
	// over; that a journal.Waiter waits while the store refuses and
	// returns once it is back; and that the journal records again by
	// itself, the event and the send refused counting as never recorded.
	Outage func(t *testing.T) (restore func())

	// Unrecordable, if not nil, returns a send the journal refuses for
	// what it is (larger than it keeps): the suite checks that the
	// refusal wraps journal.ErrUnrecordable, is permanent and is no
	// outage, and that the journal records the next send at once.
	Unrecordable func() platform.SendRequest

	// Large, if not 0, is the size in bytes of a file the suite sends
	// through the journal, and of one an event carries (more than one
	// message of the journal's store holds, say): each must come back
	// whole, and, for a durable journal with Reopen, also from Recover
	// after a restart.
	Large int
}

// patience bounds every wait of the suite.
const patience = 30 * time.Second

// Run runs the suite on journals from open, one per subtest.
func Run(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	t.Run("Attach", func(t *testing.T) { testAttach(t, open) })
	t.Run("EventsInOrder", func(t *testing.T) { testEvents(t, open, f) })
	t.Run("EventBatches", func(t *testing.T) { testBatches(t, open, f) })
	t.Run("SendsAndOutcomes", func(t *testing.T) { testSends(t, open, f) })
	t.Run("Interact", func(t *testing.T) { testInteract(t, open, f) })
	t.Run("JoinLeaves", func(t *testing.T) { testJoinLeaves(t, open, f) })
	if !f.Deferred {
		t.Run("Refusals", func(t *testing.T) { testRefusals(t, open) })
	}
	if f.Durable {
		t.Run("Duplicates", func(t *testing.T) { testDuplicates(t, open, f) })
	}
	if f.Durable && f.Reopen != nil {
		t.Run("RecoverAfterRestart", func(t *testing.T) { testRecover(t, open, f) })
	}
	if f.Outage != nil {
		t.Run("Outage", func(t *testing.T) { testOutage(t, open, f) })
	}
	if f.Unrecordable != nil {
		t.Run("Unrecordable", func(t *testing.T) { testUnrecordable(t, open, f) })
	}
	if f.Large > 0 {
		t.Run("LargeRecords", func(t *testing.T) { testLarge(t, open, f) })
	}
}

// Member is the suite's engine: it records the events and sends handed to
// it, handles each event and makes each send at once (their records done,
// a send's Done given a result naming it), and leads one adapter that
// runs until its contexts end. Refuse, while set, refuses every event and
// send, as a full queue would. It is safe for concurrent use.
type Member struct {
	mu       sync.Mutex
	events   []journal.Incoming
	sends    []journal.Outgoing
	refuse   error
	leading  int
	drained  int
	changed  chan struct{}
	seq      int
	interact []journal.Interaction
}

// NewMember returns a Member.
func NewMember() *Member { return &Member{changed: make(chan struct{})} }

func (m *Member) note() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Adapters implements journal.Member.
func (m *Member) Adapters() []string { return []string{Adapter} }

// Deliver implements journal.Member.
func (m *Member) Deliver(in journal.Incoming) error {
	m.mu.Lock()
	if err := m.refuse; err != nil && !in.Held {
		m.mu.Unlock()
		return err
	}
	m.events = append(m.events, in)
	m.note()
	m.mu.Unlock()
	if in.Record != nil {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		_ = in.Record.Done(ctx, nil)
	}
	return nil
}

// Make implements journal.Member.
func (m *Member) Make(out journal.Outgoing) error {
	m.mu.Lock()
	if err := m.refuse; err != nil && !out.Held {
		m.mu.Unlock()
		return err
	}
	if out.Fence != nil {
		if err := out.Fence(); err != nil {
			m.mu.Unlock()
			return nil // another gateway makes it
		}
	}
	m.seq++
	res := platform.SendResult{MessageID: strconv.Itoa(m.seq), ChatID: out.Request.Target.ID}
	m.sends = append(m.sends, out)
	m.note()
	m.mu.Unlock()
	if out.Record != nil {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		var mark *platform.SendResult
		if out.ID != "" && (out.Settled == nil || !out.Settled()) {
			mark = &res
		}
		_ = out.Record.Done(ctx, mark)
	}
	if out.Done != nil {
		out.Done(res, nil)
	}
	return nil
}

// Lead implements journal.Member: the adapter runs until both contexts
// end.
func (m *Member) Lead(ctx, conn context.Context, adapter string) error {
	m.mu.Lock()
	m.leading++
	m.note()
	m.mu.Unlock()
	<-ctx.Done()
	<-conn.Done()
	m.mu.Lock()
	m.leading--
	m.note()
	m.mu.Unlock()
	return nil
}

// Listen implements journal.Member: the adapter has no listener.
func (m *Member) Listen(context.Context, string) error { return nil }

// Drain implements journal.Member: everything is done at once.
func (m *Member) Drain(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drained++
	m.note()
	return nil
}

// Interact implements journal.Member: it answers with the interaction's
// op.
func (m *Member) Interact(_ context.Context, adapter string, in journal.Interaction) ([]byte, error) {
	if adapter != Adapter {
		return nil, platform.Permanent(fmt.Errorf("journaltest: no adapter %q: %w", adapter, platform.ErrUnsupported))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.interact = append(m.interact, in)
	return []byte(in.Op), nil
}

// waitFor waits until cond, called with m's lock held, holds.
func (m *Member) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timer := time.NewTimer(patience) // a timeout: the suite's patience
	defer timer.Stop()
	for {
		m.mu.Lock()
		ok, changed := cond(), m.changed
		m.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("journaltest: waited %v for %s", patience, what)
		}
	}
}

// running is a journal attached to a Member, joined until the test ends.
type running struct {
	j    journal.Journal
	m    *Member
	stop func()
}

// start attaches j to a new Member, recovers and, with join, joins it
// until the test ends.
func start(t *testing.T, j journal.Journal, join bool) *running {
	t.Helper()
	m := NewMember()
	if err := j.Attach(m); err != nil {
		t.Fatalf("Attach: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if _, _, err := j.Recover(ctx); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	r := &running{j: j, m: m, stop: func() {}}
	if join {
		jctx, leave := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- j.Join(jctx) }()
		var once sync.Once
		r.stop = func() {
			once.Do(func() {
				leave()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("Join: %v", err)
					}
				case <-time.After(patience): // a timeout: Join must return
					t.Errorf("Join did not return %v after its context ended", patience)
				}
			})
		}
		t.Cleanup(r.stop)
		m.waitFor(t, "the journal to lead the adapter", func() bool { return m.leading > 0 })
	}
	return r
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	return ctx
}

func event(id, chat, text string) platform.Event {
	return platform.Event{ID: id, Platform: Adapter, Kind: platform.EventMessage,
		Chat: platform.Chat{ID: chat, Type: platform.ChatPrivate}, From: platform.User{ID: "u"}, Text: text}
}

func sendTo(chat, text string) platform.SendRequest {
	return platform.SendRequest{Platform: Adapter, Target: platform.Chat{ID: chat}, Message: platform.TextMessage(text)}
}

func testAttach(t *testing.T, open func(t *testing.T) journal.Journal) {
	j := open(t)
	ctx := ctxOf(t)
	if _, err := j.AppendEvent(ctx, event("1", "a", "x")); !errors.Is(err, journal.ErrNotAttached) {
		t.Errorf("AppendEvent before Attach: %v; want ErrNotAttached", err)
	}
	if err := j.Attach(NewMember()); err != nil {
		t.Fatal(err)
	}
	if err := j.Attach(NewMember()); !errors.Is(err, journal.ErrAttached) {
		t.Errorf("a second Attach: %v; want ErrAttached", err)
	}
}

// Events of one chat are handed over in the order they were appended.
func testEvents(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	ctx := ctxOf(t)
	const n = 30
	for i := range n {
		chat := []string{"a", "b.c", "sp ace"}[i%3]
		if dup, err := r.j.AppendEvent(ctx, event(fmt.Sprint("e", i), chat, strconv.Itoa(i))); err != nil || dup {
			t.Fatalf("AppendEvent %d: duplicate %v, %v", i, dup, err)
		}
	}
	r.m.waitFor(t, "every event", func() bool { return len(r.m.events) == n })
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	last := map[string]int{}
	for _, in := range r.m.events {
		i, _ := strconv.Atoi(in.Event.Text)
		if prev, ok := last[in.Event.Chat.ID]; ok && i < prev {
			t.Fatalf("chat %q got event %d after %d", in.Event.Chat.ID, i, prev)
		}
		last[in.Event.Chat.ID] = i
		if f.Durable && in.Record == nil {
			t.Fatalf("a durable journal handed event %d over without its record", i)
		}
	}
}

// A journal.EventBatcher appends a batch in order, as AppendEvent appends
// each: every event handed over once, in order per chat, its duplicates
// told in place; and, the member refusing, nothing of the batch taken —
// the batch appended again is then handed over whole, each event once.
func testBatches(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	b, ok := r.j.(journal.EventBatcher)
	if !ok {
		t.Skip("not a journal.EventBatcher")
	}
	ctx := ctxOf(t)
	const n = 30
	evs := make([]platform.Event, n)
	for i := range evs {
		evs[i] = event(fmt.Sprint("b", i), []string{"a", "b.c", "sp ace"}[i%3], strconv.Itoa(i))
	}
	dups, err := b.AppendEvents(ctx, evs)
	if err != nil || len(dups) != n || slices.Contains(dups, true) {
		t.Fatalf("AppendEvents: duplicates %v, %v; want %d events taken, none a duplicate", dups, err, n)
	}
	r.m.waitFor(t, "every event", func() bool { return len(r.m.events) == n })
	if f.Durable {
		// Two appended before, in a batch with two new ones.
		again := []platform.Event{evs[0], event("b-new1", "a", "n1"), evs[1], event("b-new2", "a", "n2")}
		dups, err := b.AppendEvents(ctx, again)
		if err != nil || !slices.Equal(dups, []bool{true, false, true, false}) {
			t.Fatalf("a batch of old and new events: duplicates %v, %v; want [true false true false]", dups, err)
		}
		r.m.waitFor(t, "the new events", func() bool { return len(r.m.events) == n+2 })
		// An event is known by the same record either way: appended
		// alone, it is a duplicate in a batch; appended in a batch, alone
		// (a bot moving from a webhook to polling sees both).
		alone := event("b-alone", "b.c", "alone")
		if dup, err := r.j.AppendEvent(ctx, alone); err != nil || dup {
			t.Fatalf("AppendEvent of a new event = %v, %v; want taken, not a duplicate", dup, err)
		}
		if dups, err := b.AppendEvents(ctx, []platform.Event{alone}); err != nil || !slices.Equal(dups, []bool{true}) {
			t.Fatalf("a batch of an event appended alone: duplicates %v, %v; want [true]", dups, err)
		}
		if dup, err := r.j.AppendEvent(ctx, again[1]); err != nil || !dup {
			t.Fatalf("AppendEvent of an event appended in a batch = %v, %v; want a duplicate", dup, err)
		}
		r.m.waitFor(t, "the event appended alone", func() bool { return len(r.m.events) == n+3 })
	}
	r.m.mu.Lock()
	last := map[string]int{}
	for _, in := range r.m.events[:n] {
		i, _ := strconv.Atoi(in.Event.Text)
		if prev, ok := last[in.Event.Chat.ID]; ok && i < prev {
			r.m.mu.Unlock()
			t.Fatalf("chat %q got event %d after %d", in.Event.Chat.ID, i, prev)
		}
		last[in.Event.Chat.ID] = i
	}
	before := len(r.m.events)
	r.m.mu.Unlock()
	if f.Deferred {
		return
	}

	full := errors.New("journaltest: queue full")
	r.m.mu.Lock()
	r.m.refuse = full
	r.m.mu.Unlock()
	refused := []platform.Event{event("br1", "a", "x1"), event("br2", "b", "x2"), event("br3", "a", "x3")}
	if dups, err := b.AppendEvents(ctx, refused); !errors.Is(err, full) || len(dups) != 0 {
		t.Fatalf("AppendEvents refused by the member: duplicates %v, %v; want none taken and the refusal", dups, err)
	}
	r.m.mu.Lock()
	r.m.refuse = nil
	r.m.mu.Unlock()
	// The platform delivers the batch again: every event is handled now,
	// once.
	if dups, err := b.AppendEvents(ctx, refused); err != nil || len(dups) != len(refused) || slices.Contains(dups, true) {
		t.Fatalf("a refused batch appended again: duplicates %v, %v; want all taken, none a duplicate", dups, err)
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	var got []string
	for _, in := range r.m.events[before:] {
		got = append(got, in.Event.ID)
	}
	if !slices.Equal(got, []string{"br1", "br2", "br3"}) {
		t.Fatalf("the batch refused, then delivered again, was handed over as %v; want [br1 br2 br3], each once", got)
	}
}

// Sends are handed over in order per chat, and each one's outcome reaches
// its Done.
func testSends(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	ctx := ctxOf(t)
	const n = 20
	var mu sync.Mutex
	results := map[int]platform.SendResult{}
	all := make(chan struct{})
	for i := range n {
		s := journal.Send{ID: fmt.Sprint("t:ev/", i), Request: sendTo("c"+strconv.Itoa(i%2), strconv.Itoa(i)),
			Done: func(res platform.SendResult, err error) {
				if err != nil {
					t.Errorf("send %d: %v", i, err)
				}
				mu.Lock()
				defer mu.Unlock()
				results[i] = res
				if len(results) == n {
					close(all)
				}
			}}
		if a, err := r.j.AppendSend(ctx, s); err != nil || a.Duplicate {
			t.Fatalf("AppendSend %d: %+v, %v", i, a, err)
		}
	}
	r.m.waitFor(t, "every send", func() bool { return len(r.m.sends) == n })
	select {
	case <-all:
	case <-ctx.Done():
		mu.Lock()
		t.Fatalf("%d of %d outcomes reached their Done", len(results), n)
	}
	mu.Lock()
	defer mu.Unlock()
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	last := map[string]int{}
	for _, out := range r.m.sends {
		i, _ := strconv.Atoi(out.Request.Message.Text)
		if prev, ok := last[out.Request.Target.ID]; ok && i < prev {
			t.Fatalf("chat %q: send %d made after %d", out.Request.Target.ID, i, prev)
		}
		last[out.Request.Target.ID] = i
		if out.ID != fmt.Sprint("t:ev/", i) {
			t.Fatalf("send %d handed over with id %q", i, out.ID)
		}
		if f.Durable && out.Record == nil {
			t.Fatalf("a durable journal handed send %d over without its record", i)
		}
	}
	for i, res := range results {
		if res.ChatID != "c"+strconv.Itoa(i%2) || res.MessageID == "" {
			t.Fatalf("send %d's outcome %+v", i, res)
		}
	}
}

// An interaction reaches the member that leads the account.
func testInteract(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	ctx := ctxOf(t)
	var data []byte
	var err error
	deadline := time.Now().Add(patience)
	for {
		data, err = r.j.Interact(ctx, Adapter, journal.Interaction{Op: journal.OpChatAction, Chat: platform.Chat{ID: "a"}, Action: platform.ActionTyping})
		if err == nil || platform.IsPermanent(err) || time.Now().After(deadline) {
			break
		}
		// No gateway yet: the error is retryable, and the suite tries again
		// (a timeout between tries, bounded by patience).
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || string(data) != string(journal.OpChatAction) {
		t.Fatalf("Interact = %q, %v; want the member's answer", data, err)
	}
}

// Join returns once its context ended, after the member drained, and
// with the adapter's connection closed.
func testJoinLeaves(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	r.stop()
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if r.m.drained == 0 {
		t.Error("Join left without draining its member")
	}
	if r.m.leading != 0 {
		t.Error("Join returned with the adapter still running")
	}
}

// A journal that hands over at once returns the member's refusal; an event
// refused and delivered again by its platform is handed over then.
func testRefusals(t *testing.T, open func(t *testing.T) journal.Journal) {
	r := start(t, open(t), false)
	ctx := ctxOf(t)
	full := errors.New("journaltest: queue full")
	r.m.mu.Lock()
	r.m.refuse = full
	r.m.mu.Unlock()
	if _, err := r.j.AppendEvent(ctx, event("r1", "a", "x")); !errors.Is(err, full) {
		t.Fatalf("AppendEvent refused by the member: %v; want the refusal", err)
	}
	if _, err := r.j.AppendSend(ctx, journal.Send{ID: "t:r1/1", Request: sendTo("a", "x")}); !errors.Is(err, full) {
		t.Fatalf("AppendSend refused by the member: %v; want the refusal", err)
	}
	r.m.mu.Lock()
	r.m.refuse = nil
	r.m.mu.Unlock()
	// The platform delivers the refused event again: it is handled now.
	if dup, err := r.j.AppendEvent(ctx, event("r1", "a", "x")); err != nil || dup {
		t.Fatalf("an event refused before, appended again: duplicate %v, %v", dup, err)
	}
	r.m.mu.Lock()
	n := len(r.m.events)
	r.m.mu.Unlock()
	if n != 1 {
		t.Fatalf("the event refused, then delivered again, was handed over %d times; want once", n)
	}
}

// An event or a send appended again with its ID is a duplicate; a send
// marked delivered and repeated by a handler run again is one too, with
// its result and what it sent (its Sum and What), even if it now asks for
// another send.
func testDuplicates(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	ctx := ctxOf(t)
	if dup, err := r.j.AppendEvent(ctx, event("d1", "a", "x")); err != nil || dup {
		t.Fatalf("AppendEvent: duplicate %v, %v", dup, err)
	}
	if dup, err := r.j.AppendEvent(ctx, event("d1", "a", "again")); err != nil || !dup {
		t.Fatalf("the same event again: duplicate %v, %v; want a duplicate", dup, err)
	}
	done := make(chan platform.SendResult, 1)
	s := journal.Send{ID: "t:d1/1", Request: sendTo("a", "one"), Done: func(res platform.SendResult, _ error) { done <- res },
		Sum: 0x5e11d, What: "one"}
	if _, err := r.j.AppendSend(ctx, s); err != nil {
		t.Fatal(err)
	}
	var res platform.SendResult
	select {
	case res = <-done:
	case <-ctx.Done():
		t.Fatal("the send's outcome never came")
	}
	s.Repeat, s.Done = true, func(platform.SendResult, error) { t.Error("a duplicate's Done was called") }
	a, err := r.j.AppendSend(ctx, s)
	if err != nil || !a.Duplicate {
		t.Fatalf("a delivered send repeated: %+v, %v; want a duplicate", a, err)
	}
	if a.Delivered != nil && a.Delivered.MessageID != res.MessageID {
		t.Fatalf("the duplicate's result %+v; want %+v", *a.Delivered, res)
	}
	if a.Sum != s.Sum || a.What != s.What {
		t.Fatalf("the duplicate says it sent %x %q; want %x %q", a.Sum, a.What, s.Sum, s.What)
	}
	// Run again otherwise, the handler asks for another send at the same
	// place: the journal still says what was sent there.
	other := s
	other.Request, other.Sum, other.What = sendTo("a", "two"), 0xd1ff, "two"
	for _, repeat := range []bool{true, false} {
		other.Repeat = repeat
		a, err := r.j.AppendSend(ctx, other)
		if err != nil || !a.Duplicate || a.Sum != s.Sum || a.What != s.What {
			t.Fatalf("another send at a delivered one's place (Repeat %v): %+v, %v; want a duplicate of %x %q",
				repeat, a, err, s.Sum, s.What)
		}
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if n := len(r.m.sends); n != 1 {
		t.Fatalf("%d sends made; want the one", n)
	}
}

// What a journal left undone comes back at Recover on the same store, in
// order, marked as handed over again.
func testRecover(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	// A process that takes events and sends and is killed before it
	// finishes any.
	j := open(t)
	if err := j.Attach(&holdingMember{Member: NewMember()}); err != nil {
		t.Fatal(err)
	}
	ctx := ctxOf(t)
	if _, _, err := j.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := j.AppendEvent(ctx, event(fmt.Sprint("k", i), "a", strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if _, err := j.AppendSend(ctx, journal.Send{ID: fmt.Sprint("t:k/", i), Request: sendTo("a", strconv.Itoa(i)),
			Sum: uint64(i + 1), What: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The restart.
	r := start(t, f.Reopen(t), false)
	// A handler run again that asks, at a send's place, for another one
	// learns what was asked there before, though it is not made yet.
	a, err := r.j.AppendSend(ctx, journal.Send{ID: "t:k/1", Request: sendTo("a", "other"), Repeat: true, Sum: 99, What: "other"})
	if err != nil || !a.Duplicate || a.Sum != 2 || a.What != "1" {
		t.Fatalf("another send at a pending one's place: %+v, %v; want a duplicate of 2 %q", a, err, "1")
	}
	r.m.waitFor(t, "what the crash left", func() bool { return len(r.m.events) >= 3 && len(r.m.sends) >= 3 })
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	var evs, sends []string
	for _, in := range r.m.events {
		if !in.Redelivered {
			t.Fatalf("event %s taken up without Redelivered", in.Event.ID)
		}
		evs = append(evs, in.Event.Text)
	}
	for _, out := range r.m.sends {
		if !out.Redelivered {
			t.Fatalf("send %s taken up without Redelivered", out.ID)
		}
		sends = append(sends, out.Request.Message.Text)
	}
	if want := []string{"0", "1", "2"}; !slices.Equal(evs, want) || !slices.Equal(sends, want) {
		t.Fatalf("taken up events %q and sends %q; want %q each, in order", evs, sends, want)
	}
}

// holdingMember takes events and sends and never finishes them, as a
// process killed in the middle.
type holdingMember struct{ *Member }

func (h *holdingMember) Deliver(journal.Incoming) error { return nil }
func (h *holdingMember) Make(journal.Outgoing) error    { return nil }

// waitGiven is how long the suite lets a journal.Waiter wait while the
// store still refuses: it must not return nil within it.
const waitGiven = 300 * time.Millisecond

// While the store refuses, appends fail with ErrOutage and nothing is
// handed over; once it is back, the journal records again by itself, and
// what it refused was never recorded (no duplicate).
func testOutage(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	ctx := ctxOf(t)
	restore := f.Outage(t)
	restored := false
	defer func() {
		if !restored {
			restore()
		}
	}()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, journal.ErrOutage) || errors.Is(err, journal.ErrUnrecordable) {
			t.Fatalf("%s while the store refuses: %v; want an error wrapping journal.ErrOutage (and not ErrUnrecordable)", what, err)
		}
	}
	_, err := r.j.AppendEvent(ctx, event("o1", "a", "during"))
	check("AppendEvent", err)
	_, err = r.j.AppendSend(ctx, journal.Send{ID: "t:o1/1", Request: sendTo("a", "during"),
		Done: func(platform.SendResult, error) { t.Error("the Done of a send refused in an outage was called") }})
	check("AppendSend", err)
	w, waiter := r.j.(journal.Waiter)
	if waiter {
		short, cancel := context.WithTimeout(ctx, waitGiven)
		err := w.WaitRecording(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitRecording while the store refuses: %v; want it to wait (the context's deadline)", err)
		}
	}
	restore()
	restored = true
	if waiter {
		if err := w.WaitRecording(ctx); err != nil {
			t.Fatalf("WaitRecording after the store came back: %v", err)
		}
	}
	// A journal that is no Waiter is tried again until it records.
	for {
		_, err = r.j.AppendEvent(ctx, event("o1", "a", "after"))
		if err == nil || waiter || !errors.Is(err, journal.ErrOutage) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the journal never recorded again: %v", err)
		case <-time.After(50 * time.Millisecond): // a pause between tries, bounded by patience
		}
	}
	if err != nil {
		t.Fatalf("AppendEvent once the store is back: %v", err)
	}
	done := make(chan error, 1)
	a, err := r.j.AppendSend(ctx, journal.Send{ID: "t:o1/1", Request: sendTo("a", "after"), Done: func(_ platform.SendResult, err error) { done <- err }})
	if err != nil || a.Duplicate {
		t.Fatalf("the send refused in the outage, appended again: %+v, %v; want it recorded now", a, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the send after the outage: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the send after the outage was never made")
	}
	r.m.waitFor(t, "the event appended after the outage", func() bool { return len(r.m.events) == 1 })
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if got := r.m.events[0].Event.Text; got != "after" {
		t.Fatalf("handed over %q; want only the event appended after the outage", got)
	}
	if n := len(r.m.sends); n != 1 || r.m.sends[0].Request.Message.Text != "after" {
		t.Fatalf("%d sends made; want only the one appended after the outage", n)
	}
}

// A record the journal refuses for what it is fails alone, permanently,
// and is no outage.
func testUnrecordable(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	ctx := ctxOf(t)
	_, err := r.j.AppendSend(ctx, journal.Send{ID: "t:u1/1", Request: f.Unrecordable(),
		Done: func(platform.SendResult, error) { t.Error("the Done of a refused send was called") }})
	if !errors.Is(err, journal.ErrUnrecordable) || errors.Is(err, journal.ErrOutage) || !platform.IsPermanent(err) {
		t.Fatalf("an unrecordable send: %v; want a permanent error wrapping journal.ErrUnrecordable, not ErrOutage", err)
	}
	if w, ok := r.j.(journal.Waiter); ok {
		short, cancel := context.WithTimeout(ctx, waitGiven)
		err := w.WaitRecording(short)
		cancel()
		if err != nil {
			t.Fatalf("WaitRecording after a refused record: %v; want nil at once (no outage)", err)
		}
	}
	done := make(chan error, 1)
	if _, err := r.j.AppendSend(ctx, journal.Send{ID: "t:u1/2", Request: sendTo("a", "next"), Done: func(_ platform.SendResult, err error) { done <- err }}); err != nil {
		t.Fatalf("the send after a refused one: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the send after a refused one was never made")
	}
}

// largeData returns n bytes of a pattern that a shifted or truncated copy
// does not match.
func largeData(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i/251) ^ seed
	}
	return b
}

func largeSend(chat string, data []byte) platform.SendRequest {
	return platform.SendRequest{Platform: Adapter, Target: platform.Chat{ID: chat}, Message: platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachDocument, FileName: "large.bin", Data: data}}}}
}

func largeEvent(id, chat string, data []byte) platform.Event {
	ev := event(id, chat, "")
	ev.Attachments = []platform.Attachment{{Kind: platform.AttachDocument, FileName: "large.bin", Data: data}}
	return ev
}

// sameData reports whether the first attachment of as holds want.
func sameData(as []platform.Attachment, want []byte) bool {
	return len(as) == 1 && slices.Equal(as[0].Data, want)
}

// A send and an event larger than a message of the store come back whole,
// and from Recover after a restart.
func testLarge(t *testing.T, open func(t *testing.T) journal.Journal, f Features) {
	r := start(t, open(t), true)
	ctx := ctxOf(t)
	file, upload := largeData(f.Large, 1), largeData(f.Large, 2)
	done := make(chan error, 1)
	if _, err := r.j.AppendSend(ctx, journal.Send{ID: "t:l1/1", Request: largeSend("a", file), Done: func(_ platform.SendResult, err error) { done <- err }}); err != nil {
		t.Fatalf("AppendSend of %d bytes: %v", f.Large, err)
	}
	if _, err := r.j.AppendEvent(ctx, largeEvent("l1", "a", upload)); err != nil {
		t.Fatalf("AppendEvent of %d bytes: %v", f.Large, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the large send was never made")
	}
	r.m.waitFor(t, "the large event", func() bool { return len(r.m.events) == 1 })
	r.m.mu.Lock()
	okSend, okEvent := sameData(r.m.sends[0].Request.Message.Attachments, file), sameData(r.m.events[0].Event.Attachments, upload)
	r.m.mu.Unlock()
	if !okSend || !okEvent {
		t.Fatalf("handed over whole: the send %v, the event %v; want both", okSend, okEvent)
	}
	if !f.Durable || f.Reopen == nil {
		return
	}
	// Recorded and not done, then the process restarts.
	j := open(t)
	if err := j.Attach(&holdingMember{Member: NewMember()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := j.AppendSend(ctx, journal.Send{ID: "t:l2/1", Request: largeSend("b", file)}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.AppendEvent(ctx, largeEvent("l2", "b", upload)); err != nil {
		t.Fatal(err)
	}
	again := start(t, f.Reopen(t), false)
	again.m.waitFor(t, "what the crash left", func() bool { return len(again.m.events) >= 1 && len(again.m.sends) >= 1 })
	again.m.mu.Lock()
	defer again.m.mu.Unlock()
	if !sameData(again.m.sends[0].Request.Message.Attachments, file) || !sameData(again.m.events[0].Event.Attachments, upload) {
		t.Fatal("the large send and event taken up after the restart are not whole")
	}
}
