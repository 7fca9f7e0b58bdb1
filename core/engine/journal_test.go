package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// memJournal is a journal.Log in memory, shared by the engines of a
// test as a NATS server outlives the processes that use it: records are
// kept until done, ids ever appended are duplicates, and refuse makes
// every call fail.
type memJournal struct {
	mu      sync.Mutex
	seq     int
	events  []*memRecord
	sends   []*memRecord
	dead    map[string]sender.DeadLetter
	deadSeq []string
	ids     map[string]bool
	marks   map[string]platform.SendResult // sends marked delivered, by id
	effects map[string][]byte              // Once results, by id
	sums    map[string]journal.Send        // what each send with an id sent: its Sum and What
	refuse  error
}

func (j *memJournal) Effect(_ context.Context, id string) ([]byte, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.refuse != nil {
		return nil, false, j.refuse
	}
	v, ok := j.effects[id]
	return v, ok, nil
}

func (j *memJournal) RecordEffect(_ context.Context, id string, value []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.refuse != nil {
		return j.refuse
	}
	j.effects[id] = value
	return nil
}

type memRecord struct {
	j        *memJournal
	seq      int
	id       string
	ev       platform.Event
	req      platform.SendRequest
	progress platform.Progress
	done     bool
}

func newMemJournal() *memJournal {
	return &memJournal{dead: map[string]sender.DeadLetter{}, ids: map[string]bool{}, marks: map[string]platform.SendResult{},
		effects: map[string][]byte{}, sums: map[string]journal.Send{}}
}

func (j *memJournal) setRefuse(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.refuse = err
}

func (j *memJournal) RecordEvent(_ context.Context, ev platform.Event) (journal.Record, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.refuse != nil {
		return nil, false, j.refuse
	}
	id := "ev:" + ev.Platform + ":" + ev.ID
	if ev.ID != "" && j.ids[id] {
		return nil, true, nil
	}
	j.ids[id] = true
	j.seq++
	r := &memRecord{j: j, seq: j.seq, ev: ev}
	j.events = append(j.events, r)
	return r, false, nil
}

func (j *memJournal) RecordSend(_ context.Context, s journal.Send) (journal.Record, journal.Appended, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.refuse != nil {
		return nil, journal.Appended{}, j.refuse
	}
	was := j.sums[s.ID]
	if s.ID != "" && j.ids["send:"+s.ID] {
		return nil, journal.Appended{Duplicate: true, Sum: was.Sum, What: was.What}, nil
	}
	if res, ok := j.marks[s.ID]; ok && s.Repeat {
		return nil, journal.Appended{Duplicate: true, Delivered: &res, Sum: was.Sum, What: was.What}, nil
	}
	if s.ID != "" {
		j.ids["send:"+s.ID] = true
		j.sums[s.ID] = journal.Send{Sum: s.Sum, What: s.What}
	}
	j.seq++
	r := &memRecord{j: j, seq: j.seq, id: s.ID, req: s.Request}
	j.sends = append(j.sends, r)
	return r, journal.Appended{}, nil
}

// forgetIDs forgets the ids of what is done, as a server restart makes
// JetStream's duplicate detection forget the messages it removed.
func (j *memJournal) forgetIDs() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range j.sends {
		if r.done {
			delete(j.ids, "send:"+r.id)
		}
	}
}

func (j *memJournal) Pending(context.Context) (journal.Pending, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var rec journal.Pending
	for _, r := range j.sends {
		if !r.done {
			rec.Sends = append(rec.Sends, journal.Outgoing{ID: r.id, Request: r.req, Progress: r.progress, Record: r})
		}
	}
	for _, r := range j.events {
		if !r.done {
			rec.Events = append(rec.Events, journal.Incoming{Event: r.ev, Record: r})
		}
	}
	for _, id := range j.deadSeq {
		if dl, ok := j.dead[id]; ok {
			rec.DeadLetters = append(rec.DeadLetters, dl)
		}
	}
	return rec, nil
}

func (j *memJournal) Keep(dl sender.DeadLetter) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.refuse != nil {
		return "", j.refuse
	}
	j.seq++
	dl.ID = fmt.Sprint("dl-", j.seq)
	j.dead[dl.ID] = dl
	j.deadSeq = append(j.deadSeq, dl.ID)
	return dl.ID, nil
}

func (j *memJournal) Forget(ids ...string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, id := range ids {
		delete(j.dead, id)
	}
	return nil
}

func (r *memRecord) Done(_ context.Context, delivered *platform.SendResult) error {
	r.j.mu.Lock()
	defer r.j.mu.Unlock()
	if r.j.refuse != nil {
		return r.j.refuse
	}
	r.done = true
	if delivered != nil {
		r.j.marks[r.id] = *delivered
	}
	return nil
}

func (r *memRecord) Save(_ context.Context, p *platform.Progress) error {
	r.j.mu.Lock()
	defer r.j.mu.Unlock()
	r.progress = *p
	return nil
}

// pending returns the events and sends not done.
func (j *memJournal) pending() (events, sends int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range j.events {
		if !r.done {
			events++
		}
	}
	for _, r := range j.sends {
		if !r.done {
			sends++
		}
	}
	return events, sends
}

// crash stops e as a killed process would look to its journal: what it
// had not finished stays undone (a forced shutdown cancels it all).
func crash(e *engine.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_ = e.Shutdown(ctx)
}

// journaled returns an engine on mem and j with greet-like and count-like
// handlers, and the channel Run's error arrives on.
func journaled(t *testing.T, mem *memory.Adapter, j *memJournal, opts ...engine.Option) (*engine.Engine, <-chan error) {
	t.Helper()
	return journaledWith(t, mem, j, nil, opts...)
}

// journaledWith is journaled with the handlers setup registers too,
// before Run starts: Run begins by handling what the journal holds, so a
// handler registered after it may come too late for those events.
func journaledWith(t *testing.T, mem *memory.Adapter, j *memJournal, setup func(*engine.Engine), opts ...engine.Option) (*engine.Engine, <-chan error) {
	t.Helper()
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.OnCommand("count", func(c *engine.Context) error {
		for i := range 3 {
			c.ReplyText(fmt.Sprint(i + 1))
		}
		return nil
	})
	e.OnCommand("greet", func(c *engine.Context) error {
		answer, err := c.Prompt(c.Context(), platform.TextMessage("Your name?"))
		if err != nil {
			return err
		}
		c.ReplyText("Hello, " + answer.Text + "!")
		return nil
	})
	if setup != nil {
		setup(e)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	return e, done
}

func sayID(mem *memory.Adapter, id, text string) {
	mem.Emit(platform.Event{ID: id, Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: text})
}

// Events are recorded before they are taken and done when handled; sends
// are recorded before Reply returns and done when delivered.
func TestJournalRecordsAndDones(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		e, done := journaled(t, mem, j)
		sayID(mem, "1", "/count")
		if _, err := mem.WaitSent(testCtx(t), dm.ID, 3); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if ev, sends := j.pending(); ev != 0 || sends != 0 {
			t.Fatalf("%d events and %d sends not done after handling", ev, sends)
		}
		if len(j.events) != 1 || len(j.sends) != 3 || j.sends[0].id != "memory:1/1" || j.sends[2].id != "memory:1/3" {
			t.Fatalf("journal holds %d events and sends %+v", len(j.events), j.sends)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// An event recorded before is a duplicate: taken, not handled again, and
// said once at info level, however many come.
func TestJournalDuplicateEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		core, logs := observer.New(zap.InfoLevel)
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)), engine.WithLogger(zap.New(core)))
		if err != nil {
			t.Fatal(err)
		}
		e.OnCommand("count", func(c *engine.Context) error { c.ReplyText("x"); return nil })
		ev := platform.Event{ID: "7", Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/count"}
		for range 3 {
			if err := e.HandleEvent(ev); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := e.HandleEvents([]platform.Event{ev}); n != 1 || err != nil {
			t.Fatalf("HandleEvents: %d, %v", n, err)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(mem.Sent(dm.ID)); n != 1 || e.Stats().Duplicates != 3 {
			t.Fatalf("%d replies, %d duplicates; want 1 and 3", n, e.Stats().Duplicates)
		}
		said := logs.FilterMessageSnippet("recorded before").All()
		if len(said) != 1 || said[0].ContextMap()["event"] != "7" {
			t.Fatalf("logged %+v; want one line naming the event", said)
		}
	})
}

// After a crash, the next engine sends what was not sent, each chat in
// order, once, and logs what it took up.
func TestJournalRecoversAfterCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		mem.SlowNext(dm.ID, time.Hour) // the first reply hangs: the process dies meanwhile
		e, _ := journaled(t, mem, j, engine.WithHandlerConcurrency(1))
		sayID(mem, "1", "/count")
		synctest.Wait()
		crash(e)
		// The handler had returned: its event is done; its sends are not.
		if ev, sends := j.pending(); ev != 0 || sends != 3 {
			t.Fatalf("after the crash the journal holds %d events and %d sends; want 0 and 3", ev, sends)
		}

		mem2 := memory.New()
		core, logs := observer.New(zap.InfoLevel)
		e2, done := journaled(t, mem2, j, engine.WithLogger(zap.New(core)))
		sent, err := mem2.WaitSent(testCtx(t), dm.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := mem2.Texts(dm.ID); !slices.Equal(got, []string{"1", "2", "3"}) {
			t.Fatalf("after the restart the chat got %q (%d sends); want 1, 2, 3 once", got, len(sent))
		}
		// The operator reads what the restart took up.
		if took := logs.FilterMessage("engine: taking up what the journal held").All(); len(took) != 1 ||
			took[0].ContextMap()["sends"] != int64(3) || took[0].ContextMap()["events"] != int64(0) {
			t.Fatalf("the restart logged %+v; want one line of 3 sends and 0 events", took)
		}
		if ev, sends := j.pending(); ev != 0 || sends != 0 {
			t.Fatalf("%d events and %d sends still pending", ev, sends)
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}

// A send a forced shutdown cuts off, whose adapter says it must not be
// made again (its request may have arrived, and the adapter avoids
// duplicates: telegram.Config.AvoidDuplicates), is a dead letter, not
// made again at the next start; the sends after it are.
func TestJournalCutOffSendAvoidsDuplicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		mem.SlowNext(dm.ID, time.Hour) // the first reply hangs: the process is stopped meanwhile
		avoid := func(next platform.Sender) platform.Sender {
			return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
				if ctx.Err() != nil {
					return next.Send(ctx, req) // not begun: surely not delivered
				}
				res, err := next.Send(ctx, req)
				if errors.Is(err, context.Canceled) {
					err = platform.Permanent(platform.MaybeDelivered(err))
				}
				return res, err
			})
		}
		e, _ := journaled(t, mem, j, engine.WithHandlerConcurrency(1), engine.WithSenderMiddleware(avoid))
		sayID(mem, "1", "/count")
		synctest.Wait()
		crash(e)
		if ev, sends := j.pending(); ev != 0 || sends != 2 {
			t.Fatalf("after the forced stop the journal holds %d events and %d sends; want 0 and 2", ev, sends)
		}
		if got := len(j.dead); got != 1 {
			t.Fatalf("%d dead letters; want the send cut off", got)
		}

		mem2 := memory.New()
		e2, done := journaled(t, mem2, j)
		if _, err := mem2.WaitSent(testCtx(t), dm.ID, 2); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := mem2.Texts(dm.ID); !slices.Equal(got, []string{"2", "3"}) {
			t.Fatalf("after the restart the chat got %q; want 2, 3 (1 may have arrived)", got)
		}
		if dl := e2.DeadLetters(); len(dl) != 1 || dl[0].Request.Message.Text != "1" {
			t.Fatalf("dead letters after the restart: %+v; want the send of 1", dl)
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}

// A conversation survives a crash: the handler runs again on its event,
// its question is not sent again, and the answer is greeted once.
func TestJournalConversationSurvivesCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		e, _ := journaled(t, mem, j)
		sayID(mem, "1", "/greet")
		if _, err := mem.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		crash(e)
		j.forgetIDs() // the delivered question is known by its mark only

		mem2 := memory.New()
		e2, done := journaled(t, mem2, j)
		synctest.Wait()
		if n := len(mem2.Sent(dm.ID)); n != 0 {
			t.Fatalf("the question was sent again: %q", mem2.Texts(dm.ID))
		}
		sayID(mem2, "2", "Ann")
		if _, err := mem2.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := mem2.Texts(dm.ID); !slices.Equal(got, []string{"Hello, Ann!"}) {
			t.Fatalf("after the restart: %q; want the greeting once", got)
		}
		if ev, sends := j.pending(); ev != 0 || sends != 0 {
			t.Fatalf("%d events and %d sends still pending", ev, sends)
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}

// While the journal refuses, events are refused and sends fail at once,
// with ErrJournal; the outage is logged once, its end once.
func TestJournalDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.InfoLevel)
		mem, j := memory.New(), newMemJournal()
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)), engine.WithLogger(zap.New(core)))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		e.OnCommand("hi", func(c *engine.Context) error {
			_, err := c.ReplyText("hello").Wait(c.Context())
			got <- err
			return nil
		})
		j.setRefuse(errors.New("nats: no responders"))
		for i := range 5 {
			err := e.HandleEvent(platform.Event{ID: fmt.Sprint(i), Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/hi"})
			if !errors.Is(err, engine.ErrJournal) {
				t.Fatalf("event while the journal refuses: %v; want ErrJournal", err)
			}
		}
		j.setRefuse(nil)
		if err := e.HandleEvent(platform.Event{ID: "10", Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/hi"}); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("reply once the journal is back: %v", err)
		}
		// The handler ends and its event and reply are marked done, all
		// while the journal is up: else a mark made in the second outage,
		// or after it, is a call this test says there is none of.
		synctest.Wait()
		j.setRefuse(errors.New("insufficient resources"))
		if err := e.HandleEvent(platform.Event{ID: "11", Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/hi"}); !errors.Is(err, engine.ErrJournal) {
			t.Fatalf("event: %v", err)
		}
		j.setRefuse(nil)
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		down := logs.FilterMessageSnippet("the journal refuses").Len()
		back := logs.FilterMessageSnippet("the journal is back").Len()
		if down != 2 || back != 1 {
			t.Fatalf("%d outage lines and %d recovery lines for two outages; want 2 and 1 (the second outage ends unlogged, with no call after it)", down, back)
		}
	})
}

// Dead letters are kept in the journal and come back after a restart;
// replayed, they leave it.
func TestJournalDeadLettersSurviveRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		mem.FailNext(dm.ID, platform.Permanent(errors.New("chat not found")))
		e, _ := journaled(t, mem, j)
		sayID(mem, "1", "/count")
		if _, err := mem.WaitSent(testCtx(t), dm.ID, 2); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}

		mem2 := memory.New()
		e2, done := journaled(t, mem2, j)
		synctest.Wait()
		letters := e2.DeadLetters()
		if len(letters) != 1 || letters[0].Request.Message.Text != "1" || !strings.HasPrefix(letters[0].ID, "dl-") {
			t.Fatalf("dead letters after the restart: %+v", letters)
		}
		if n, err := e2.ReplayDeadLetters(context.Background()); n != 1 || err != nil {
			t.Fatalf("replay = %d, %v", n, err)
		}
		if _, err := mem2.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if rec, _ := j.Pending(context.Background()); len(rec.DeadLetters) != 0 || len(e2.DeadLetters()) != 0 {
			t.Fatalf("replayed letters still kept: %+v", rec.DeadLetters)
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}

// A handler a forced shutdown cuts off makes nothing more: what it asks
// for after the cut fails at once and takes no id, and its error reaches
// no error hook. After the restart the journal hands its event over
// again, and the handler's run makes its sends, each once, under the ids
// they have in its handling — the late send included.
func TestForcedStopTakesNoIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		release := make(chan struct{})
		var hooked []error
		slow := func(e *engine.Engine, first bool) {
			e.OnCommand("slow", func(c *engine.Context) error {
				c.ReplyText("one")
				if first {
					<-release // still running when the shutdown runs out
				}
				f := c.ReplyText("two")
				if first {
					_, err := f.Result() // refused at once: the run was cut off
					return err
				}
				return nil
			})
		}
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)),
			engine.WithOnError(func(c *engine.Context, err error) { hooked = append(hooked, err); c.ReplyError(err) }))
		if err != nil {
			t.Fatal(err)
		}
		slow(e, true)
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		sayID(mem, "1", "/slow")
		if _, err := mem.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		crashed := make(chan struct{})
		go func() { crash(e); close(crashed) }()
		time.Sleep(time.Second) // past the forced shutdown
		close(release)
		<-crashed
		<-done
		synctest.Wait()
		if len(hooked) != 0 {
			t.Fatalf("the error hook got %v for a handler the shutdown cut off", hooked)
		}
		if ev, _ := j.pending(); ev != 1 {
			t.Fatalf("the journal holds %d events; want the cut-off one", ev)
		}
		for _, r := range j.sends {
			if r.id != "memory:1/1" {
				t.Fatalf("the journal recorded send %q after the cut", r.id)
			}
		}

		mem2 := memory.New()
		e2, err := engine.New(engine.WithAdapter(mem2), engine.WithJournal(journal.NewLocal(j)))
		if err != nil {
			t.Fatal(err)
		}
		slow(e2, false)
		done2 := make(chan error, 1)
		go func() { done2 <- e2.Run(context.Background()) }()
		if _, err := mem2.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done2
		// "one" was delivered before the crash: the run again knows it.
		if got := mem2.Texts(dm.ID); !slices.Equal(got, []string{"two"}) {
			t.Fatalf("after the restart the chat got %q; want the late send, once", got)
		}
	})
}

// A handler run again after a restart that asks, at a send's place, for
// another send than the one made there before diverged: the other send is
// not made, the conversation ends with ErrDiverged to the error hook, and
// the engine logs it once with the event's ID and both texts.
func TestDivergenceAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		mem.SlowNext(dm.ID, time.Hour) // the first reply hangs: the process dies meanwhile
		handler := func(text string) engine.Handler {
			return func(c *engine.Context) error {
				c.ReplyText(text)
				_, err := c.ReplyText("then").Wait(c.Context())
				return err
			}
		}
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)))
		if err != nil {
			t.Fatal(err)
		}
		e.OnCommand("go", handler("first version"))
		go e.Run(context.Background())
		sayID(mem, "1", "/go")
		synctest.Wait()
		crash(e)

		core, logs := observer.New(zap.WarnLevel)
		var hooked []error
		mem2 := memory.New()
		e2, err := engine.New(engine.WithAdapter(mem2), engine.WithJournal(journal.NewLocal(j)), engine.WithLogger(zap.New(core)),
			engine.WithOnError(func(c *engine.Context, err error) { hooked = append(hooked, err); c.ReplyText("sorry") }))
		if err != nil {
			t.Fatal(err)
		}
		e2.OnCommand("go", handler("second version"))
		done := make(chan error, 1)
		go func() { done <- e2.Run(context.Background()) }()
		synctest.Wait()
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
		for _, s := range mem2.Texts(dm.ID) {
			if s == "second version" {
				t.Fatalf("the diverged send was made: the chat got %q", mem2.Texts(dm.ID))
			}
		}
		if len(hooked) != 1 || !errors.Is(hooked[0], engine.ErrDiverged) {
			t.Fatalf("the error hook got %v; want one ErrDiverged", hooked)
		}
		if n := countOf(mem2.Texts(dm.ID), "sorry"); n != 1 {
			t.Fatalf("the error hook's reply was sent %d times: the chat got %q; want once", n, mem2.Texts(dm.ID))
		}
		warned := logs.FilterMessageSnippet("diverged").All()
		if len(warned) != 1 {
			t.Fatalf("%d divergence warnings; want 1", len(warned))
		}
		f := warned[0].ContextMap()
		if msg, _ := f["error"].(string); f["event"] != "1" || !strings.Contains(msg, "first version") || !strings.Contains(msg, "second version") {
			t.Fatalf("the warning says %v; want the event's ID and both texts", f)
		}
	})
}

// A conversation's wait counts from when it began, across restarts: taken
// up after a restart, it ends when it would have ended without one.
func TestWaitBoundAcrossRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newMemJournal()
		start := func(mem *memory.Adapter) (*engine.Engine, <-chan error) {
			e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(j)),
				engine.WithConversationWait(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			e.OnCommand("ask", func(c *engine.Context) error {
				_, err := c.Prompt(c.Context(), platform.TextMessage("Well?"))
				if errors.Is(err, context.DeadlineExceeded) {
					c.ReplyText("Too late.")
					return nil
				}
				return err
			})
			done := make(chan error, 1)
			go func() { done <- e.Run(context.Background()) }()
			return e, done
		}
		mem := memory.New()
		e, done := start(mem)
		began := time.Now()
		mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: dm, From: ann, Text: "/ask", Time: began})
		if _, err := mem.WaitSent(testCtx(t), dm.ID, 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Minute)
		if err := e.Shutdown(context.Background()); err != nil { // a clean stop: the wait stays
			t.Fatal(err)
		}
		<-done

		mem2 := memory.New()
		e2, done2 := start(mem2)
		sent, err := mem2.WaitSent(context.Background(), dm.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := sent[0].Message.Text; got != "Too late." {
			t.Fatalf("after the restart the chat got %q; want the wait's end", got)
		}
		if d := time.Since(began); d != time.Hour {
			t.Fatalf("the wait ended %v after it began; want 1h", d)
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done2
	})
}

// A send repeated under its SendID while the first, taken up after a
// restart, is being made resolves with the first's outcome, Duplicate
// set; the chat gets it once.
func TestSendIDRepeatWhileTakenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		mem.SlowNext(dm.ID, time.Hour) // the first send hangs: the process dies meanwhile
		e, _ := journaled(t, mem, j)
		synctest.Wait()
		e.Send(mem.Name(), dm, platform.TextMessage("once"), engine.SendID("n-1"))
		synctest.Wait()
		crash(e)

		mem2 := memory.New()
		mem2.SlowNext(dm.ID, time.Second) // taken up, and being made when the repeat comes
		e2, done := journaled(t, mem2, j)
		synctest.Wait()
		res, err := e2.Send(mem2.Name(), dm, platform.TextMessage("once"), engine.SendID("n-1")).Wait(testCtx(t))
		if err != nil || !res.Duplicate || res.MessageID == "" {
			t.Fatalf("the repeat resolved with %+v, %v; want the first's result, Duplicate set", res, err)
		}
		if got := mem2.Texts(dm.ID); !slices.Equal(got, []string{"once"}) {
			t.Fatalf("the chat got %q; want the send once", got)
		}
		if err := e2.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}

// countOf returns how many of texts are s.
func countOf(texts []string, s string) int {
	n := 0
	for _, t := range texts {
		if t == s {
			n++
		}
	}
	return n
}

// A replay the dispatcher refuses (its chat's queue is full) keeps its
// letter under a new id: the journal knows the refused replay's send id,
// and would take the next replay of the letter for it, and send nothing.
// Every letter arrives once (one refused after those queued).
func TestJournalReplayRefusedKeepsLetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		e, done := journaled(t, mem, j, engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1}))
		synctest.Wait() // Run took up the journal: its letters are kept there
		for _, text := range []string{"a", "b", "c"} {
			e.DeadLetterStore().Add(sender.DeadLetter{Request: platform.SendRequest{Platform: mem.Name(), Target: dm,
				Message: platform.TextMessage(text)}, Attempts: 1, Err: errors.New("timeout"), At: time.Now()})
		}
		mem.SlowNext(dm.ID, time.Second)
		if n, err := e.ReplayDeadLetters(context.Background()); err == nil || n == 3 {
			t.Fatalf("first replay: %d, %v; want some refused by the full queue", n, err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		for range 5 { // what is left, until none is: a queue of one may refuse again
			if e.DeadLetterStore().Len() == 0 {
				break
			}
			_, _ = e.ReplayDeadLetters(context.Background())
			time.Sleep(3 * time.Second)
			synctest.Wait()
		}
		// A letter refused comes after those queued before it.
		if got := slices.Sorted(slices.Values(mem.Texts(dm.ID))); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("the chat got %q; want each letter once", mem.Texts(dm.ID))
		}
		if got := e.DeadLetters(); len(got) != 0 {
			t.Fatalf("still kept: %+v", got)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
