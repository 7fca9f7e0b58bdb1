package engine

import (
	stdctx "context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	hctx "github.com/heraldbot/herald/core/context"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/internal/handling"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// queue is a journal that records the tasks of the sends appended to it,
// for the test to run, instead of queueing them in the dispatcher.
type queue struct {
	e      *Engine
	mu     sync.Mutex
	keys   []string
	tasks  []func(stdctx.Context) error
	refuse error
}

func (q *queue) Attach(journal.Member) error { return nil }

func (q *queue) AppendEvent(stdctx.Context, platform.Event) (bool, error) { return false, nil }

func (q *queue) AppendSend(_ stdctx.Context, s journal.Send) (journal.Appended, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.refuse != nil {
		return journal.Appended{}, &refusal{q.refuse}
	}
	t, err := q.e.sendTaskOf(journal.Outgoing{ID: s.ID, Request: s.Request, Done: s.Done, Settled: s.Settled})
	if err != nil {
		return journal.Appended{}, err
	}
	q.keys = append(q.keys, handling.ChatKey(s.Request.Platform, s.Request.Target.ID))
	q.tasks = append(q.tasks, t.run)
	return journal.Appended{}, nil
}

func (q *queue) Recover(stdctx.Context) (sender.DeadLetterBackend, []sender.DeadLetter, error) {
	return nil, nil, nil
}

func (q *queue) Join(ctx stdctx.Context) error { <-ctx.Done(); return nil }

func (q *queue) Effect(stdctx.Context, string) ([]byte, bool, error) { return nil, false, nil }

func (q *queue) RecordEffect(stdctx.Context, string, []byte) error { return nil }

func (q *queue) Interact(stdctx.Context, string, journal.Interaction) ([]byte, error) {
	return nil, platform.ErrUnsupported
}

// run runs task i with ctx on a fresh goroutine, as the dispatcher would,
// and returns what it panicked with, if it did, and its error.
func (q *queue) run(i int, ctx stdctx.Context) (panicked any, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		err = q.tasks[i](ctx)
	}()
	<-done
	return panicked, err
}

var ctxEvent = platform.Event{
	ID: "ev1", Platform: "mem", Kind: platform.EventMessage,
	Chat: platform.Chat{ID: "c1", Type: platform.ChatPrivate},
	From: platform.User{ID: "u1", Name: "Ann"},
	Text: "/echo hi",
}

// newRun returns a first run of ev's handling on e.
func (e *Engine) newRun(ctx stdctx.Context, ev platform.Event) *handling.Run {
	return handling.New(ev, nil, false).NewRun((*env)(e), ctx, handling.Start{})
}

// newContext returns the Context of a first run of ev's handling on e,
// with no match.
func (e *Engine) newContext(ctx stdctx.Context, ev platform.Event) *Context {
	return hctx.New(e.newRun(ctx, ev).Ctx(handling.Match{}))
}

// testContext returns the Context of ev on an engine whose platform "mem"
// sends through s (none if nil), whose sends go to q (the dispatcher if
// nil), and which logs to log (none if nil).
func testContext(t *testing.T, ev platform.Event, s platform.Sender, q *queue, log *zap.Logger) *Context {
	return hctx.New(testRun(t, ev, s, q, log).Ctx(handling.Match{}))
}

// testRun is testContext's run.
func testRun(t *testing.T, ev platform.Event, s platform.Sender, q *queue, log *zap.Logger) *handling.Run {
	t.Helper()
	opts := []Option{WithLogger(log)}
	if q != nil {
		opts = append(opts, WithJournal(q))
	}
	e, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if s != nil {
		e.senders["mem"] = s
	}
	if q != nil {
		q.e = e
	}
	return e.newRun(stdctx.Background(), ev)
}

func newCtx(t *testing.T, s platform.Sender, q *queue) *Context {
	return testContext(t, ctxEvent, s, q, nil)
}

func TestReplyResolvesOnEveryPath(t *testing.T) {
	expired, cancel := stdctx.WithDeadline(stdctx.Background(), time.Now())
	defer cancel()
	boom := errors.New("boom")
	tests := []struct {
		name      string
		sender    platform.SenderFunc
		ctx       func() stdctx.Context
		wantErr   error
		wantPanic bool
		wantID    string
	}{
		{name: "success", sender: func(_ stdctx.Context, req platform.SendRequest) (platform.SendResult, error) {
			return platform.SendResult{MessageID: "m1", ChatID: req.Target.ID}, nil
		}, wantID: "m1"},
		{name: "sender error", sender: func(stdctx.Context, platform.SendRequest) (platform.SendResult, error) {
			return platform.SendResult{}, boom
		}, wantErr: boom},
		{name: "timeout", sender: func(ctx stdctx.Context, _ platform.SendRequest) (platform.SendResult, error) {
			<-ctx.Done()
			return platform.SendResult{}, ctx.Err()
		}, ctx: func() stdctx.Context {
			return expired
		}, wantErr: stdctx.DeadlineExceeded},
		{name: "cancelled", sender: func(ctx stdctx.Context, _ platform.SendRequest) (platform.SendResult, error) {
			return platform.SendResult{}, ctx.Err()
		}, ctx: func() stdctx.Context {
			ctx, cancel := stdctx.WithCancel(stdctx.Background())
			cancel()
			return ctx
		}, wantErr: stdctx.Canceled},
		{name: "panic", sender: func(stdctx.Context, platform.SendRequest) (platform.SendResult, error) {
			panic("sender bug")
		}, wantErr: ErrSendPanicked, wantPanic: true},
		{name: "goexit", sender: func(stdctx.Context, platform.SendRequest) (platform.SendResult, error) {
			runtime.Goexit()
			return platform.SendResult{}, nil
		}, wantErr: ErrSendAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &queue{}
			f := newCtx(t, tt.sender, q).ReplyText("hello")
			if f.IsDone() {
				t.Fatal("Future resolved before the send ran")
			}
			ctx := stdctx.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			panicked, _ := q.run(0, ctx)
			if (panicked != nil) != tt.wantPanic {
				t.Fatalf("panicked = %v; want panic %v", panicked, tt.wantPanic)
			}
			if !f.IsDone() {
				t.Fatal("Future not resolved")
			}
			res, err := f.Result()
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Future err = %v; want %v", err, tt.wantErr)
			}
			if res.MessageID != tt.wantID {
				t.Fatalf("MessageID = %q; want %q", res.MessageID, tt.wantID)
			}
		})
	}
}

func TestReplyRefused(t *testing.T) {
	refused := errors.New("engine: queue full")
	q := &queue{refuse: refused}
	f := newCtx(t, platform.SenderFunc(func(stdctx.Context, platform.SendRequest) (platform.SendResult, error) {
		t.Fatal("sender called for a refused send")
		return platform.SendResult{}, nil
	}), q).Reply(platform.TextMessage("x"))
	if _, err := f.Result(); !errors.Is(err, refused) {
		t.Fatalf("Future err = %v; want the Submit error", err)
	}
}

func TestNoSender(t *testing.T) {
	c := newCtx(t, nil, nil)
	for _, f := range []interface {
		Result() (platform.SendResult, error)
	}{
		c.ReplyText("a"), c.ReplySuccess("b"), c.ReplyError(errors.New("c")), c.Send(platform.Chat{ID: "x"}, platform.TextMessage("d")),
	} {
		if _, err := f.Result(); !errors.Is(err, ErrNoSender) {
			t.Fatalf("err = %v; want ErrNoSender", err)
		}
	}
}

func TestSendKeysAndRequests(t *testing.T) {
	var mu sync.Mutex
	var reqs []platform.SendRequest
	q := &queue{}
	c := newCtx(t, platform.SenderFunc(func(_ stdctx.Context, req platform.SendRequest) (platform.SendResult, error) {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		return platform.SendResult{}, nil
	}), q)
	c.ReplyText("one")
	c.Send(platform.Chat{ID: "other", Type: platform.ChatGroup}, platform.TextMessage("two"))
	c.ReplySuccess("done")
	for i := range q.tasks {
		q.run(i, stdctx.Background())
	}
	if want := []string{"mem:c1", "mem:other", "mem:c1"}; len(q.keys) != 3 || q.keys[0] != want[0] || q.keys[1] != want[1] || q.keys[2] != want[2] {
		t.Fatalf("keys = %v; want %v", q.keys, want)
	}
	if reqs[0].Platform != "mem" || reqs[0].Target.ID != "c1" || reqs[0].Message.Text != "one" {
		t.Fatalf("reply request = %+v", reqs[0])
	}
	if reqs[1].Target.ID != "other" || reqs[1].Target.Type != platform.ChatGroup {
		t.Fatalf("send request = %+v", reqs[1])
	}
	if reqs[2].Message.Text != "✅ done" {
		t.Fatalf("success text = %q", reqs[2].Message.Text)
	}
}

func TestReplyErrorHidesDetails(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	q := &queue{}
	var texts []string
	sender := platform.SenderFunc(func(_ stdctx.Context, req platform.SendRequest) (platform.SendResult, error) {
		texts = append(texts, req.Message.Text)
		return platform.SendResult{}, nil
	})
	c := testContext(t, ctxEvent, sender, q, zap.New(core))
	c.ReplyError(errors.New("db password=hunter2 rejected"))
	c.ReplyError(NewUserError("That city is unknown.", errors.New("geo lookup: 404")))
	for i := range q.tasks {
		q.run(i, stdctx.Background())
	}
	if texts[0] != "⚠️ Sorry, something went wrong." || texts[1] != "⚠️ That city is unknown." {
		t.Fatalf("texts = %q", texts)
	}
	entries := logs.All()
	if len(entries) != 2 || entries[0].ContextMap()["error"] != "db password=hunter2 rejected" {
		t.Fatalf("log entries = %+v", entries)
	}
	if m := entries[0].ContextMap(); m["platform"] != "mem" || m["chat"] != "c1" || m["event"] != "ev1" {
		t.Fatalf("log fields = %v", m)
	}
}

func TestAccessorsAndValues(t *testing.T) {
	r := testRun(t, ctxEvent, nil, nil, nil)
	c := hctx.New(r.Ctx(handling.Match{Command: "echo", RawArgs: "hi", Args: []string{"hi"}, Groups: []string{"x"}}))
	if c.Command() != "echo" || c.RawArgs() != "hi" || len(c.Args()) != 1 || c.Matches()[0] != "x" {
		t.Fatal("match accessors wrong")
	}
	if c.Text() != "/echo hi" || c.Platform() != "mem" || c.Chat().ID != "c1" || c.From().Name != "Ann" || c.Event().ID != "ev1" {
		t.Fatal("event accessors wrong")
	}
	if c.Context() == nil || c.Logger() == nil {
		t.Fatal("no context or logger")
	}
	if _, ok := c.Get("k"); ok {
		t.Fatal("Get found a value never set")
	}
	c.Set("k", 42)
	if v, ok := c.Get("k"); !ok || v != 42 {
		t.Fatalf("Get = %v, %v", v, ok)
	}
	if err := NewUserError("shown", errors.New("cause")); err.Error() != "shown: cause" {
		t.Fatalf("UserError = %q", err)
	}
}

func TestWithMatchSharesEventState(t *testing.T) {
	r := testRun(t, ctxEvent, nil, nil, nil)
	c := hctx.New(r.Ctx(handling.Match{}))
	c.Set("k", 1)
	d := hctx.New(r.Ctx(handling.Match{Command: "x", Args: []string{"y"}}))
	if v, _ := d.Get("k"); v != 1 {
		t.Fatal("withMatch lost the values")
	}
	d.Set("k", 2)
	if v, _ := c.Get("k"); v != 2 {
		t.Fatal("values not shared")
	}
	if c.Command() != "" || d.Command() != "x" || d.Logger() != c.Logger() || d.Event().ID != c.Event().ID {
		t.Fatal("withMatch did not keep its own match and share the rest")
	}
}

func TestNoChat(t *testing.T) {
	ev := ctxEvent
	ev.Chat = platform.Chat{}
	q := &queue{}
	c := testContext(t, ev, platform.SenderFunc(func(stdctx.Context, platform.SendRequest) (platform.SendResult, error) {
		return platform.SendResult{}, nil
	}), q, nil)
	if _, err := c.ReplyText("x").Result(); !errors.Is(err, ErrNoChat) {
		t.Fatalf("Reply without chat = %v", err)
	}
	if _, err := c.Send(platform.Chat{}, platform.TextMessage("x")).Result(); !errors.Is(err, ErrNoChat) {
		t.Fatalf("Send to empty chat = %v", err)
	}
	if len(q.tasks) != 0 {
		t.Fatal("a send without a chat was queued")
	}
}

func TestSenderPanicWithError(t *testing.T) {
	cause := errors.New("cause")
	q := &queue{}
	f := newCtx(t, platform.SenderFunc(func(stdctx.Context, platform.SendRequest) (platform.SendResult, error) {
		panic(cause)
	}), q).ReplyText("x")
	q.run(0, stdctx.Background())
	if _, err := f.Result(); !errors.Is(err, ErrSendPanicked) || !errors.Is(err, cause) {
		t.Fatalf("err = %v; want ErrSendPanicked wrapping the panic's error", err)
	}
}

// A run that pauses leaves the Future unresolved and hands the pause to
// the dispatcher; the run that finishes resolves it. The send's Progress
// is the task's, the same in both runs.
func TestReplyPausedRunLeavesFutureOpen(t *testing.T) {
	q := &queue{}
	var seen []*platform.Progress
	s := platform.SenderFunc(func(ctx stdctx.Context, req platform.SendRequest) (platform.SendResult, error) {
		p := platform.ProgressOf(ctx)
		seen = append(seen, p)
		if len(seen) == 1 {
			if err := p.Wait(ctx, time.Second); err != nil {
				return platform.SendResult{}, err
			}
		}
		return platform.SendResult{MessageID: "m1"}, nil
	})
	f := newCtx(t, s, q).ReplyText("hi")
	_, err := q.run(0, stdctx.Background())
	if d, ok := platform.PauseOf(err); !ok || d != time.Second {
		t.Fatalf("first run = %v; want a 1s pause", err)
	}
	if f.IsDone() {
		t.Fatal("Future resolved by a paused run")
	}
	if _, err := q.run(0, stdctx.Background()); err != nil {
		t.Fatalf("second run = %v", err)
	}
	if res, err := f.Result(); err != nil || res.MessageID != "m1" {
		t.Fatalf("Future = %+v, %v; want m1", res, err)
	}
	if len(seen) != 2 || seen[0] == nil || seen[0] != seen[1] || !seen[0].Resumable() {
		t.Fatalf("Progress in the runs: %v; want one resumable Progress in both", seen)
	}
}
