package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/internal/leakcheck"
	"github.com/heraldbot/herald/internal/natstest"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

func TestMain(m *testing.M) {
	if load := os.Getenv(apartBotAPIEnv); load != "" {
		os.Exit(serveApartBotAPI(load)) // this binary is BenchmarkBotReplies's fake Bot API
	}
	// Twice as many at once as the processors, longest first: the tests
	// wait (for leases, outages, servers) about as much as they compute.
	// Alone on 2 cores, under -race: 34 s with 2 at once, 22 s with 4, the
	// same CPU (37–39 core-seconds).
	cluster.TestQueue.SetUp(2 * runtime.GOMAXPROCS(0))
	leakcheck.VerifyTestMainAfter(m, natstest.Cleanup)
}

// parallel makes t a parallel test that starts in its turn (see
// cluster.TestQueue), expect being about how long it runs alone.
func parallel(t *testing.T, expect time.Duration) {
	t.Helper()
	cluster.TestQueue.Run(t, expect)
}

// server is an embedded NATS server in dir, with a connection to it.
type server struct {
	s  *embedded.Server
	nc *nats.Conn
}

func startServer(t *testing.T, dir string, cfg embedded.Config) *server {
	t.Helper()
	cfg.Dir = dir
	s, err := embedded.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := s.Connect()
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	srv := &server{s: s, nc: nc}
	t.Cleanup(srv.stop)
	return srv
}

func (s *server) stop() {
	s.nc.Close()
	s.s.Shutdown()
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, nc *nats.Conn, cfg cluster.Config) *cluster.Journal {
	t.Helper()
	j, err := cluster.Open(ctxFor(t), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func event(id, chat, text string) platform.Event {
	return platform.Event{ID: id, Platform: "memory", Kind: platform.EventMessage,
		Chat: platform.Chat{ID: chat, Type: platform.ChatPrivate}, From: platform.User{ID: "u", Name: "U"}, Text: text}
}

func sendTo(chat, text string) platform.SendRequest {
	return platform.SendRequest{Platform: "memory", Target: platform.Chat{ID: chat}, Message: platform.TextMessage(text)}
}

// What is recorded and not done comes back in order, after a restart of
// the server too; what is done does not; ids recognize duplicates.
func TestJournalRoundTrip(t *testing.T) {
	parallel(t, 2*time.Second)
	dir := t.TempDir()
	ctx := ctxFor(t)
	srv := startServer(t, dir, embedded.Config{})
	j := open(t, srv.nc, cluster.Config{})

	var evs []journal.Record
	for i, chat := range []string{"a", "b.c", "a", "sp ace", ""} {
		rec, dup, err := j.RecordEvent(ctx, event(fmt.Sprint(i), chat, fmt.Sprint("text ", i)))
		if err != nil || dup {
			t.Fatalf("AppendEvent %d: %v, duplicate %v", i, err, dup)
		}
		evs = append(evs, rec)
	}
	if _, dup, err := j.RecordEvent(ctx, event("1", "b.c", "again")); err != nil || !dup {
		t.Fatalf("the same event again: duplicate %v, %v; want a duplicate", dup, err)
	}
	if err := evs[1].Done(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := evs[1].Done(ctx, nil); err != nil {
		t.Fatalf("Done twice: %v", err)
	}
	s1, _, err := j.RecordSend(ctx, journal.Send{ID: "memory:0/1", Request: sendTo("a", "one")})
	if err != nil {
		t.Fatal(err)
	}
	if _, a, err := j.RecordSend(ctx, journal.Send{ID: "memory:0/1", Request: sendTo("a", "one")}); err != nil || !a.Duplicate {
		t.Fatalf("a send repeated with its id: %+v, %v", a, err)
	}
	s2, _, err := j.RecordSend(ctx, journal.Send{Request: sendTo("a", "two")})
	if err != nil {
		t.Fatal(err)
	}
	p := platform.NewProgress(time.Unix(100, 0), time.Time{})
	p.Attempts, p.Platform = 2, []byte(`{"next":1}`)
	if err := s2.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.RecordSend(ctx, journal.Send{Request: sendTo("b", "three")}); err != nil {
		t.Fatal(err)
	}
	if err := s1.Done(ctx, &platform.SendResult{MessageID: "77", ChatID: "a"}); err != nil {
		t.Fatal(err)
	}

	// The process and the server stop; a new one on the same directory.
	srv.stop()
	srv = startServer(t, dir, embedded.Config{})
	j = open(t, srv.nc, cluster.Config{})
	rec, err := j.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range rec.Events {
		texts = append(texts, e.Event.Chat.ID+"="+e.Event.Text)
	}
	if want := []string{"a=text 0", "a=text 2", "sp ace=text 3", "=text 4"}; !slices.Equal(texts, want) {
		t.Fatalf("events recovered %q; want %q", texts, want)
	}
	if len(rec.Sends) != 2 || rec.Sends[0].Request.Message.Text != "two" || rec.Sends[1].Request.Message.Text != "three" {
		t.Fatalf("sends recovered %+v", rec.Sends)
	}
	if got := rec.Sends[0].Progress; got.Attempts != 2 || string(got.Platform) != `{"next":1}` || !got.Started.Equal(time.Unix(100, 0)) {
		t.Fatalf("progress recovered %+v", got)
	}
	// The event done before the restart, handed on again by its platform
	// (as Telegram does with updates it was not told were taken), is known
	// as handled, though the server no longer holds it; a new one is not.
	if _, dup, err := j.RecordEvent(ctx, event("1", "b.c", "again")); err != nil || !dup {
		t.Fatalf("an event handled before the restart, again: duplicate %v, %v; want a duplicate", dup, err)
	}
	newRec, dup, err := j.RecordEvent(ctx, event("9", "b.c", "new"))
	if err != nil || dup {
		t.Fatalf("a new event after the restart: duplicate %v, %v", dup, err)
	}
	if err := newRec.Done(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The delivered send, repeated by its handler after the restart, is
	// known by its mark, with its result.
	if _, a, err := j.RecordSend(ctx, journal.Send{ID: "memory:0/1", Request: sendTo("a", "one"), Repeat: true}); err != nil ||
		!a.Duplicate || a.Delivered == nil || a.Delivered.MessageID != "77" {
		t.Fatalf("a delivered send repeated after a restart: %+v, %v; want a duplicate with its result", a, err)
	}
	for _, s := range rec.Sends {
		if err := s.Record.Done(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range rec.Events {
		if err := e.Record.Done(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if rec, err = j.Pending(ctx); err != nil || len(rec.Sends)+len(rec.Events) != 0 {
		t.Fatalf("after Done: %+v, %v; want nothing", rec, err)
	}
}

// Dead letters are kept, listed after a restart, and forgotten.
func TestJournalDeadLetters(t *testing.T) {
	parallel(t, 0)
	ctx := ctxFor(t)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	j := open(t, srv.nc, cluster.Config{Bot: "bot-2"})
	var ids []string
	for i := range 3 {
		id, err := j.Keep(sender.DeadLetter{Request: sendTo("c", fmt.Sprint(i)), Attempts: i, Err: platform.Permanent(errors.New("blocked")), At: time.Unix(int64(i), 0)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := j.Forget(ids[1], "not-ours"); err != nil {
		t.Fatal(err)
	}
	rec, err := j.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.DeadLetters) != 2 || rec.DeadLetters[0].ID != ids[0] || rec.DeadLetters[1].Request.Message.Text != "2" ||
		rec.DeadLetters[1].Attempts != 2 || !platform.IsPermanent(rec.DeadLetters[1].Err) {
		t.Fatalf("dead letters %+v", rec.DeadLetters)
	}
}

// A stream that is full refuses; it takes again once what it holds is
// done.
func TestJournalFull(t *testing.T) {
	parallel(t, 0)
	ctx := ctxFor(t)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	j := open(t, srv.nc, cluster.Config{MaxBytes: 4096})
	var recs []journal.Record
	var err error
	for i := 0; i < 1000; i++ {
		var r journal.Record
		r, _, err = j.RecordSend(ctx, journal.Send{Request: sendTo("c", fmt.Sprintf("a reply of some length, number %d", i))})
		if err != nil {
			break
		}
		recs = append(recs, r)
	}
	if err == nil || len(recs) == 0 {
		t.Fatalf("a 4 KiB stream took %d sends, last error %v", len(recs), err)
	}
	if !errors.Is(err, journal.ErrOutage) || errors.Is(err, journal.ErrUnrecordable) {
		t.Fatalf("a full stream's refusal: %v; want an outage", err)
	}
	for _, r := range recs {
		if err := r.Done(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The journal refuses until its probe saw room again.
	if err := j.WaitRecording(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.RecordSend(ctx, journal.Send{Request: sendTo("c", "after")}); err != nil {
		t.Fatalf("after the sends were done: %v", err)
	}
}

// With the server gone, every call fails within its context; the engine
// then refuses (see engine's tests of a journal that refuses).
func TestJournalServerDown(t *testing.T) {
	parallel(t, 0)
	ctx := ctxFor(t)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	j := open(t, srv.nc, cluster.Config{})
	srv.s.Shutdown()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, _, err := j.RecordEvent(short, event("1", "c", "x")); err == nil {
		t.Fatal("RecordEvent with the server down succeeded")
	}
}

func TestOpenRefusesBadBotName(t *testing.T) {
	parallel(t, 0)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	if _, err := cluster.Open(ctxFor(t), srv.nc, cluster.Config{Bot: "a.b"}); err == nil {
		t.Fatal("Open with a bot name holding a dot succeeded")
	}
}

// The engine on a cluster journal: a process that dies with replies not
// yet sent and a conversation waiting; the next process, on the same
// directory, sends them once and resumes the conversation without asking
// again.
func TestEngineOnJournalAcrossRestart(t *testing.T) {
	parallel(t, 2*time.Second)
	dir := t.TempDir()
	ctx := ctxFor(t)
	chat := memory.Private("1")
	user := memory.User("1", "Ann")
	say := func(mem *memory.Adapter, id, text string) {
		mem.Emit(platform.Event{ID: id, Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: text})
	}
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		srv := startServer(t, dir, embedded.Config{})
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{})))
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
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		return srv, e, done
	}

	mem := memory.New()
	mem.SlowNext(chat.ID, time.Hour) // the first reply hangs: the process dies meanwhile
	srv, e, done := start(mem)
	say(mem, "1", "/count")
	say(mem, "2", "/greet")
	for e.Stats().Outbound.Submitted < 4 { // the three counts and the question, all behind the hung one
		select {
		case <-ctx.Done():
			t.Fatalf("the replies were not made: %+v", e.Stats())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The crash: handlers and sends are cut off, and nothing is done
	// after that; the server stops with the process.
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = e.Shutdown(sctx)
	cancel()
	<-done
	srv.stop()
	if n := len(mem.Sent(chat.ID)); n != 0 {
		t.Fatalf("%d replies before the crash; want none (the first hung)", n)
	}

	mem2 := memory.New()
	srv2, e2, done2 := start(mem2)

	if _, err := mem2.WaitSent(ctx, chat.ID, 4); err != nil {
		t.Fatalf("%v: %q", err, mem2.Texts(chat.ID))
	}
	say(mem2, "3", "Ann")
	sent, err := mem2.WaitSent(ctx, chat.ID, 5)
	if err != nil {
		t.Fatalf("%v: %q", err, mem2.Texts(chat.ID))
	}
	var texts []string
	for _, s := range sent {
		texts = append(texts, s.Message.Text)
	}
	if want := []string{"1", "2", "3", "Your name?", "Hello, Ann!"}; !slices.Equal(texts, want) {
		t.Fatalf("after the restart the chat got %q; want %q", texts, want)
	}
	if err := e2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-done2
	srv2.stop()
}

// A conversation whose question was delivered before the crash is not
// asked again: the delivered send is marked while its event is handled.
func TestConversationAskedOnceAcrossRestart(t *testing.T) {
	parallel(t, 0)
	dir := t.TempDir()
	ctx := ctxFor(t)
	chat, user := memory.Private("1"), memory.User("1", "Ann")
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		srv := startServer(t, dir, embedded.Config{})
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{})))
		if err != nil {
			t.Fatal(err)
		}
		e.OnCommand("greet", func(c *engine.Context) error {
			q, err := c.ReplyText("Your name?").Wait(c.Context())
			if err != nil {
				return err
			}
			answer, err := c.Next(c.Context(), nil)
			if err != nil {
				return err
			}
			c.ReplyText("Hello, " + answer.Text + "! (asked in " + q.MessageID + ")")
			return nil
		})
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		return srv, e, done
	}
	mem := memory.New()
	srv, e, done := start(mem)
	mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "/greet"})
	sent, err := mem.WaitSent(ctx, chat.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	asked := sent[0].MessageID
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = e.Shutdown(sctx)
	cancel()
	<-done
	srv.stop()

	mem2 := memory.New()
	srv2, e2, done2 := start(mem2)
	mem2.Emit(platform.Event{ID: "2", Platform: mem2.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "Ann"})
	got, err := mem2.WaitSent(ctx, chat.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Hello, Ann! (asked in " + asked + ")"; len(got) != 1 || got[0].Message.Text != want {
		t.Fatalf("after the restart: %q; want only %q", mem2.Texts(chat.ID), want)
	}
	if err := e2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-done2
	srv2.stop()
}
