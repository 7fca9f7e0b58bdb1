package cluster_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// A handler's replies are covered by its event's record (no record of
// their own): across a crash, a reply delivered before it is not made
// again — it was marked, whether delivered while its handler ran or after
// — and one that was waiting out a platform's retry-after (a record of
// its own made when it saved its wait) is taken up from its record and
// made once, in its place, before the replies after it.
func TestCoveredRepliesAcrossCrash(t *testing.T) {
	parallel(t, 4*time.Second)
	for _, tc := range []struct {
		name string
		wait bool // the handler waits for its first reply's delivery
	}{{"handler waits", true}, {"handler returns at once", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := ctxFor(t)
			chat, user := memory.Private("1"), memory.User("1", "Ann")
			start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
				return startJournaled(t, dir, mem, func(e *engine.Engine) {
					e.OnCommand("three", func(c *engine.Context) error {
						f := c.ReplyText("1")
						if tc.wait {
							if _, err := f.Wait(c.Context()); err != nil {
								return err
							}
						}
						c.ReplyText("2")
						c.ReplyText("3")
						return nil
					})
				})
			}
			mem := memory.New()
			// The first reply goes through; the second is told to come back
			// in 2 s: it saves its wait, and the process dies meanwhile.
			mem.FailNext(chat.ID, nil, platform.NewRetryAfter(2*time.Second, errors.New("429")))
			srv, e, done := start(mem)
			mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "/three"})
			waitLong(ctx, t, "the second reply's wait to be saved", func() bool {
				return mem.Calls(chat.ID) >= 2 && streamMsgs(ctx, t, srv, "OUT_"+cluster.DefaultBot) > 0
			})
			crashBot(ctx, srv, e, done)
			if got := mem.Texts(chat.ID); !slices.Equal(got, []string{"1"}) {
				t.Fatalf("before the crash: %q; want only the first reply", got)
			}

			mem2 := restarted(ctx, t, start, chat.ID, 2, 0)
			if got := mem2.Texts(chat.ID); !slices.Equal(got, []string{"2", "3"}) {
				t.Fatalf("after the restart: %q; want the second and third replies, once each", got)
			}
		})
	}
}

// A conversation's event and the answer its wait took stay in the journal
// together while its last reply, covered by them, is not made: a crash
// then runs the conversation again with its answer, and the reply is made
// once, without asking again.
func TestCoveredConversationKeepsItsAnswer(t *testing.T) {
	parallel(t, 2*time.Second)
	dir := t.TempDir()
	ctx := ctxFor(t)
	chat, user := memory.Private("1"), memory.User("1", "Ann")
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		return startJournaled(t, dir, mem, func(e *engine.Engine) {
			e.OnCommand("greet", func(c *engine.Context) error {
				c.ReplyText("Your name?")
				answer, err := c.Next(c.Context(), nil)
				if err != nil {
					return err
				}
				c.ReplyText("Hello, " + answer.Text + "!")
				return nil
			})
		})
	}
	mem := memory.New()
	srv, e, done := start(mem)
	mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "/greet"})
	if _, err := mem.WaitSent(ctx, chat.ID, 1); err != nil {
		t.Fatal(err)
	}
	mem.SlowNext(chat.ID, time.Hour) // the greeting hangs: the process dies meanwhile
	mem.Emit(platform.Event{ID: "2", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "Ann"})
	waitLong(ctx, t, "the greeting to start", func() bool { return mem.Calls(chat.ID) >= 2 })
	crashBot(ctx, srv, e, done)

	mem2 := restarted(ctx, t, start, chat.ID, 1, 0) // the greeting
	if got := mem2.Texts(chat.ID); !slices.Equal(got, []string{"Hello, Ann!"}) {
		t.Fatalf("after the restart: %q; want the greeting alone", got)
	}
}

// startJournaled starts a bot on mem with a journal on an embedded server
// whose store is dir and opts, its handlers registered by handle, and
// returns the
// server, the engine and the channel Run's outcome comes on.
func startJournaled(t *testing.T, dir string, mem *memory.Adapter, handle func(*engine.Engine), opts ...engine.Option) (*server, *engine.Engine, chan error) {
	t.Helper()
	srv := startServer(t, dir, embedded.Config{})
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{}))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	handle(e)
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	return srv, e, done
}

// greeter registers /greet, a conversation that asks the user's name and
// greets them by it (waiting for the greeting's delivery with wait), and
// a handler of the text "Ann" alone, which answers an "Ann" the
// conversation did not take.
func greeter(wait bool) func(*engine.Engine) {
	return func(e *engine.Engine) {
		e.OnCommand("greet", func(c *engine.Context) error {
			c.ReplyText("Your name?")
			answer, err := c.Next(c.Context(), nil)
			if err != nil {
				return err
			}
			f := c.ReplyText("Hello, " + answer.Text + "!")
			if wait {
				_, err = f.Wait(c.Context())
			}
			return err
		})
		e.OnFullMatch("Ann", func(c *engine.Context) error {
			c.ReplyText("who is Ann?")
			return nil
		})
	}
}

// crashBot stops e as a crash would — what is under way is cut off after
// 100 ms, nothing done after that — and its server with it.
func crashBot(ctx context.Context, srv *server, e *engine.Engine, done chan error) {
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = e.Shutdown(sctx)
	cancel()
	<-done
	srv.stop()
}

// stopBot stops e cleanly, and its server.
func stopBot(ctx context.Context, t *testing.T, srv *server, e *engine.Engine, done chan error) {
	t.Helper()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	srv.stop()
}

// restarted starts the bot again with start on a fresh adapter, waits for
// n messages to chat — for good, or, with within > 0, at most that long
// (when what is checked is what must not come) — stops it, and returns
// the adapter.
func restarted(ctx context.Context, t *testing.T, start func(*memory.Adapter) (*server, *engine.Engine, chan error), chat string, n int, within time.Duration) *memory.Adapter {
	t.Helper()
	mem := memory.New()
	srv, e, done := start(mem)
	if within > 0 {
		wctx, cancel := context.WithTimeout(ctx, within)
		_, _ = mem.WaitSent(wctx, chat, n)
		cancel()
	} else if _, err := mem.WaitSent(ctx, chat, n); err != nil {
		t.Fatalf("after the restart: %v: %q", err, mem.Texts(chat))
	}
	stopBot(ctx, t, srv, e, done)
	return mem
}

// streamMsgs returns how many messages the stream named name holds.
func streamMsgs(ctx context.Context, t *testing.T, srv *server, name string) uint64 {
	t.Helper()
	js, err := jetstream.New(srv.nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// coverCrash runs handler on /go in chat 1 of a bot on an embedded
// journal, crashes it once crashed says (a stop cut short, the server
// stopped with it), starts it again on the same directory and returns
// what each chat got after the restart, once want sends to the chat of
// ID wantIn came or a while passed.
func coverCrash(t *testing.T, handler func(*engine.Context) error, prep func(*memory.Adapter), crashed func(*memory.Adapter, *engine.Engine) bool, wantIn string, want int) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	ctx := ctxFor(t)
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		return startJournaled(t, dir, mem, func(e *engine.Engine) {
			e.OnCommand("go", handler)
		})
	}
	mem := memory.New()
	prep(mem)
	srv, e, done := start(mem)
	mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: memory.Private("1"),
		From: memory.User("1", "Ann"), Text: "/go"})
	waitLong(ctx, t, "the moment of the crash", func() bool { return crashed(mem, e) })
	crashBot(ctx, srv, e, done)

	mem2 := restarted(ctx, t, start, wantIn, want, 3*time.Second)
	return map[string][]string{"1": mem2.Texts("1"), "2": mem2.Texts("2")}
}

// fileMsg is a message carrying a file's bytes: never covered.
func fileMsg(text string) platform.OutboundMessage {
	return platform.OutboundMessage{Text: text, Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("hello"), FileName: "f.txt"}}}
}

// A covered send followed in its chat by a send recorded on its own (a
// file) keeps its place across a crash: it gets a record before the file's.
func TestCoveredKeepsItsPlaceBeforeARecordedSend(t *testing.T) {
	parallel(t, 3*time.Second)
	got := coverCrash(t, func(c *engine.Context) error {
		c.ReplyText("a")
		c.Reply(fileMsg("b"))
		return nil
	}, func(mem *memory.Adapter) { mem.SlowNext("1", time.Hour) },
		func(mem *memory.Adapter, e *engine.Engine) bool {
			return mem.Calls("1") >= 1 && e.Stats().Outbound.Submitted >= 2
		}, "1", 2)
	if !slices.Equal(got["1"], []string{"a", "b"}) {
		t.Fatalf("after the restart: %q; want a, then b", got["1"])
	}
}

// A covered send that failed for good (a dead letter) before a crash is
// not made again by the handler's run again.
func TestCoveredFailureNotMadeAgain(t *testing.T) {
	parallel(t, 3*time.Second)
	got := coverCrash(t, func(c *engine.Context) error {
		_, _ = c.ReplyText("x").Wait(c.Context())
		c.ReplyText("y")
		return nil
	}, func(mem *memory.Adapter) {
		mem.FailNext("1", platform.Permanent(errors.New("blocked")))
		mem.SlowNext("1", time.Hour)
	}, func(mem *memory.Adapter, _ *engine.Engine) bool { return mem.Calls("1") >= 2 }, "1", 1)
	if !slices.Equal(got["1"], []string{"y"}) {
		t.Fatalf("after the restart: %q; want y alone", got["1"])
	}
}

// A send recorded on its own (a file) delivered while its event's removal
// waits for a covered send to another chat is marked: the handler run
// again after a crash does not send it again.
func TestRecordedSendMarkedWhileEventHeld(t *testing.T) {
	parallel(t, 3*time.Second)
	got := coverCrash(t, func(c *engine.Context) error {
		c.Send(memory.Private("2"), platform.TextMessage("slow"))
		c.Reply(fileMsg("photo"))
		return nil
	}, func(mem *memory.Adapter) { mem.SlowNext("2", time.Hour) },
		func(mem *memory.Adapter, e *engine.Engine) bool {
			return len(mem.Sent("1")) == 1 && e.Stats().Journal.Sends == 1 // the photo done, the slow one not
		}, "2", 1)
	if len(got["1"]) != 0 || !slices.Equal(got["2"], []string{"slow"}) {
		t.Fatalf("after the restart: chat 1 %q, chat 2 %q; want nothing, then slow", got["1"], got["2"])
	}
}

// Two chats' events send to a third (a log chat): the first's send, in
// flight at a crash, still comes before the second's after the restart,
// where both handlers run again at once — the second is recorded on its
// own, and gives the first a record before it.
func TestCoveredOrderAcrossChatsSendingToOne(t *testing.T) {
	parallel(t, 2*time.Second)
	dir := t.TempDir()
	ctx := ctxFor(t)
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		return startJournaled(t, dir, mem, func(e *engine.Engine) {
			e.OnCommand("go", func(c *engine.Context) error {
				if c.Event().Chat.ID == "1" {
					time.Sleep(300 * time.Millisecond) // some work before its send: after a restart the other runs first
					c.Send(memory.Private("3"), platform.TextMessage("a"))
					return nil
				}
				c.Send(memory.Private("3"), platform.TextMessage("b"))
				return nil
			})
		})
	}
	emit := func(mem *memory.Adapter, id, chat string) {
		mem.Emit(platform.Event{ID: id, Platform: mem.Name(), Kind: platform.EventMessage, Chat: memory.Private(chat),
			From: memory.User("u"+chat, "U"), Text: "/go"})
	}
	mem := memory.New()
	mem.SlowNext("3", time.Hour) // "a" hangs in flight
	srv, e, done := start(mem)
	emit(mem, "1", "1")
	waitLong(ctx, t, "a in flight", func() bool { return mem.Calls("3") >= 1 })
	emit(mem, "2", "2")
	waitLong(ctx, t, "b queued", func() bool { return e.Stats().Outbound.Submitted >= 2 })
	crashBot(ctx, srv, e, done)

	mem2 := restarted(ctx, t, start, "3", 2, 3*time.Second)
	if got := mem2.Texts("3"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("chat 3 after the restart: %q; want a, then b (their order before the crash)", got)
	}
}

// A conversation's answer whose handler middleware, on its offer, sent a
// line that hangs (a log line to another chat) is removed with the
// conversation all the same: that send is not covered by the answer's
// record, so the answer cannot stay behind alone, to be handled after a
// crash as a new event.
func TestTakenAnswerGoesWithItsConversation(t *testing.T) {
	parallel(t, 3*time.Second)
	dir := t.TempDir()
	ctx := ctxFor(t)
	chat, user := memory.Private("1"), memory.User("1", "Ann")
	logger := func(next engine.Handler) engine.Handler {
		return func(c *engine.Context) error {
			if c.Event().Text == "Ann" {
				c.Send(memory.Private("9"), platform.TextMessage("log: Ann"))
			}
			return next(c)
		}
	}
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		return startJournaled(t, dir, mem, greeter(true), engine.WithMiddleware(logger))
	}
	mem := memory.New()
	mem.SlowNext("9", time.Hour) // the log line hangs
	srv, e, done := start(mem)
	mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "/greet"})
	if _, err := mem.WaitSent(ctx, chat.ID, 1); err != nil {
		t.Fatal(err)
	}
	mem.Emit(platform.Event{ID: "2", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "Ann"})
	if _, err := mem.WaitSent(ctx, chat.ID, 2); err != nil {
		t.Fatal(err)
	}
	waitLong(ctx, t, "the conversation's events to be done", func() bool { return e.Stats().Journal.Events == 0 })
	crashBot(ctx, srv, e, done)

	mem2 := restarted(ctx, t, start, "9", 1, 2*time.Second) // the log line, made again
	if got := mem2.Texts("1"); len(got) != 0 {
		t.Fatalf("after the restart chat 1 got %q; the conversation had ended, its answer taken", got)
	}
}

// A covered send that failed for good before a crash fails again, with its
// error, for the handler run again after it — without being made again —
// so that the handler's branch for the failure (a Reply after an
// unsupported Edit, a Prompt whose question failed) is taken again, and
// the send it made there, in flight at the crash, is made.
func TestCoveredFailureSeenAgainAfterCrash(t *testing.T) {
	parallel(t, 3*time.Second)
	dir := t.TempDir()
	ctx := ctxFor(t)
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		mem.FailWhen(func(req platform.SendRequest) error {
			if req.Message.Text == "x" {
				return platform.Permanent(platform.ErrUnsupported)
			}
			return nil
		})
		return startJournaled(t, dir, mem, func(e *engine.Engine) {
			e.OnCommand("go", func(c *engine.Context) error {
				if _, err := c.ReplyText("x").Wait(c.Context()); err != nil {
					c.Send(memory.Private("2"), platform.TextMessage("fallback"))
				}
				return nil
			})
		})
	}
	mem := memory.New()
	mem.SlowNext("2", time.Hour) // the fallback hangs: the process dies meanwhile
	srv, e, done := start(mem)
	mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: memory.Private("1"),
		From: memory.User("1", "Ann"), Text: "/go"})
	waitLong(ctx, t, "the fallback in flight", func() bool { return mem.Calls("2") >= 1 })
	crashBot(ctx, srv, e, done)

	mem2 := restarted(ctx, t, start, "2", 1, 3*time.Second)
	if got := mem2.Texts("2"); !slices.Equal(got, []string{"fallback"}) {
		t.Fatalf("after the restart chat 2 got %q; want the fallback, in flight at the crash", got)
	}
}

// The handler middleware an answer offered to a conversation passes
// through fails after the conversation took it: the error hook's send of
// that run (a scope of its own) is not covered by the answer's record
// either, so the answer goes with its conversation and is not handled
// after a crash as a new event.
func TestHookSendOfOfferedAnswerNotCovered(t *testing.T) {
	parallel(t, 3*time.Second)
	dir := t.TempDir()
	ctx := ctxFor(t)
	chat, user := memory.Private("1"), memory.User("1", "Ann")
	audit := func(next engine.Handler) engine.Handler {
		return func(c *engine.Context) error {
			err := next(c)
			if err == nil && c.Event().Text == "Ann" {
				return errors.New("audit failed")
			}
			return err
		}
	}
	hook := func(c *engine.Context, err error) {
		c.Send(memory.Private("9"), platform.TextMessage("error: "+err.Error()))
	}
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		return startJournaled(t, dir, mem, greeter(false), engine.WithMiddleware(audit), engine.WithOnError(hook))
	}
	mem := memory.New()
	mem.SlowNext("9", time.Hour) // the hook's line hangs
	srv, e, done := start(mem)
	mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "/greet"})
	if _, err := mem.WaitSent(ctx, chat.ID, 1); err != nil {
		t.Fatal(err)
	}
	mem.SlowNext(chat.ID, 300*time.Millisecond) // the greeting is slow: the conversation's removal waits for it
	mem.Emit(platform.Event{ID: "2", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: user, Text: "Ann"})
	if _, err := mem.WaitSent(ctx, chat.ID, 2); err != nil {
		t.Fatal(err)
	}
	waitLong(ctx, t, "the hook's line in flight", func() bool { return mem.Calls("9") >= 1 })
	waitLong(ctx, t, "the conversation's removal", func() bool {
		st := e.Stats().Journal
		return st.Events == 0 && st.Sends == 1 // the hook's line alone
	})
	crashBot(ctx, srv, e, done)

	mem2 := memory.New()
	srv2, e2, done2 := start(mem2)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, _ = mem2.WaitSent(wctx, "9", 1) // the hook's line, made again
	cancel()
	time.Sleep(300 * time.Millisecond)
	stopBot(ctx, t, srv2, e2, done2)
	if got := mem2.Texts("1"); len(got) != 0 {
		t.Fatalf("after the restart chat 1 got %q; the conversation had ended, its answer taken", got)
	}
}
