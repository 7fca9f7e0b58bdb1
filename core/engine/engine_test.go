package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

var (
	ann   = memory.User("u1", "Ann")
	bob   = memory.User("u2", "Bob")
	dm    = memory.Private("u1")
	group = memory.Group("g1")
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fastRetry keeps retry waits short in tests that exercise failures.
var fastRetry = sender.DefaultConfig{Retry: sender.RetryConfig{MaxAttempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}}

// newEngine returns an engine on a fresh memory adapter, shut down when the
// test ends.
func newEngine(t *testing.T, opts ...engine.Option) (*engine.Engine, *memory.Adapter) {
	t.Helper()
	mem := memory.New()
	opts = append([]engine.Option{engine.WithAdapter(mem), engine.WithSenderConfig(fastRetry)}, opts...)
	e, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Shutdown(testCtx(t)); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return e, mem
}

// runEngine runs e until the test ends.
func runEngine(t *testing.T, e *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) handler(label string) engine.Handler {
	return func(c *engine.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		entry := label
		if c.Command() != "" || len(c.Args()) > 0 {
			entry += fmt.Sprintf("(%s|%s)", c.Command(), strings.Join(c.Args(), ","))
		}
		if m := c.Matches(); m != nil {
			entry += fmt.Sprintf("%q", m)
		}
		r.log = append(r.log, entry)
		return nil
	}
}

func (r *recorder) entries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

func msg(chat platform.Chat, from platform.User, text string) platform.Event {
	return platform.Event{Platform: memory.DefaultName, Kind: platform.EventMessage, Chat: chat, From: from, Text: text}
}

func TestRouting(t *testing.T) {
	type reg func(e *engine.Engine, r *recorder) error
	tests := []struct {
		name   string
		opts   []engine.Option
		setup  []reg
		events []platform.Event
		want   []string
	}{
		{
			name: "command with args and quotes",
			setup: []reg{func(e *engine.Engine, r *recorder) error {
				e.OnCommand("echo", r.handler("echo"))
				return nil
			}},
			events: []platform.Event{msg(dm, ann, `/echo one "two three" 'four'`), msg(dm, ann, "echo no slash"), msg(dm, ann, "/echoes")},
			want:   []string{"echo(echo|one,two three,four)"},
		},
		{
			name: "command aliases, case and @botname",
			opts: []engine.Option{engine.WithBotUsername("HeraldBot")},
			setup: []reg{func(e *engine.Engine, r *recorder) error {
				e.OnCommand("help", r.handler("help"), engine.Aliases("h"))
				return nil
			}},
			events: []platform.Event{msg(dm, ann, "/h"), msg(dm, ann, "/HELP@heraldbot"), msg(dm, ann, "/help@OtherBot"), msg(dm, ann, "/help@HeraldBot x")},
			want:   []string{"help(h|)", "help(HELP|)", "help(help|x)"},
		},
		{
			name: "custom command prefixes",
			opts: []engine.Option{engine.WithCommandPrefixes("!", "/")},
			setup: []reg{func(e *engine.Engine, r *recorder) error {
				e.OnCommand("ping", r.handler("ping"))
				return nil
			}},
			events: []platform.Event{msg(dm, ann, "!ping"), msg(dm, ann, "/ping"), msg(dm, ann, ".ping")},
			want:   []string{"ping(ping|)", "ping(ping|)"},
		},
		{
			name: "message prefix keyword fullmatch regex",
			setup: []reg{
				func(e *engine.Engine, r *recorder) error {
					e.OnMessage(r.handler("msg"), engine.Priority(10))
					return nil
				},
				func(e *engine.Engine, r *recorder) error { e.OnPrefix("say ", r.handler("prefix")); return nil },
				func(e *engine.Engine, r *recorder) error {
					e.OnKeyword("weather", r.handler("kw"), engine.Aliases("rain"))
					return nil
				},
				func(e *engine.Engine, r *recorder) error { e.OnFullMatch("hi", r.handler("full")); return nil },
				func(e *engine.Engine, r *recorder) error {
					e.OnRegex(`^roll (\d+)d(\d+)$`, r.handler("re"))
					return nil
				},
			},
			events: []platform.Event{
				msg(dm, ann, "say a b"), msg(dm, ann, "will it rain?"), msg(dm, ann, " hi "), msg(dm, ann, "roll 2d6"),
			},
			want: []string{
				"prefix(|a,b)", "msg",
				"kw", "msg",
				"full", "msg",
				`re["roll 2d6" "2" "6"]`, "msg",
			},
		},
		{
			name: "priority and registration order",
			setup: []reg{
				func(e *engine.Engine, r *recorder) error {
					e.OnMessage(r.handler("p5-a"), engine.Priority(5))
					return nil
				},
				func(e *engine.Engine, r *recorder) error {
					e.OnMessage(r.handler("p1"), engine.Priority(1))
					return nil
				},
				func(e *engine.Engine, r *recorder) error {
					e.OnMessage(r.handler("p5-b"), engine.Priority(5))
					return nil
				},
				func(e *engine.Engine, r *recorder) error {
					e.OnMessage(r.handler("p-3"), engine.Priority(-3))
					return nil
				},
			},
			events: []platform.Event{msg(dm, ann, "x")},
			want:   []string{"p-3", "p1", "p5-a", "p5-b"},
		},
		{
			name: "block stops lower priorities only",
			setup: []reg{
				func(e *engine.Engine, r *recorder) error {
					e.OnCommand("stop", r.handler("stop"), engine.Priority(1), engine.Block())
					return nil
				},
				func(e *engine.Engine, r *recorder) error {
					e.OnMessage(r.handler("same"), engine.Priority(1))
					return nil
				},
				func(e *engine.Engine, r *recorder) error {
					e.OnMessage(r.handler("lower"), engine.Priority(2))
					return nil
				},
			},
			events: []platform.Event{msg(dm, ann, "/stop"), msg(dm, ann, "go")},
			want:   []string{"stop(stop|)", "same", "same", "lower"},
		},
		{
			name: "permissions",
			setup: []reg{
				func(e *engine.Engine, r *recorder) error {
					e.OnCommand("p", r.handler("private"), engine.PrivateOnly())
					return nil
				},
				func(e *engine.Engine, r *recorder) error {
					e.OnCommand("g", r.handler("group"), engine.GroupOnly())
					return nil
				},
				func(e *engine.Engine, r *recorder) error {
					e.OnCommand("admin", r.handler("admin"), engine.UsersOnly("u2"))
					return nil
				},
			},
			events: []platform.Event{
				msg(dm, ann, "/p"), msg(group, ann, "/p"), msg(dm, ann, "/g"), msg(group, ann, "/g"),
				msg(group, ann, "/admin"), msg(group, bob, "/admin"),
			},
			want: []string{"private(p|)", "group(g|)", "admin(admin|)"},
		},
		{
			name: "rules with And Or Not",
			setup: []reg{func(e *engine.Engine, r *recorder) error {
				long := func(c *engine.Context) bool { return len(c.Text()) > 3 }
				e.On(engine.And(engine.IsGroup(), engine.Or(engine.FromUsers("u2"), long), engine.Not(engine.IsKind(platform.EventCallback))), r.handler("rule"))
				return nil
			}},
			events: []platform.Event{
				msg(group, bob, "hi"), msg(group, ann, "hi"), msg(group, ann, "hello"), msg(dm, bob, "hello"),
				{Platform: memory.DefaultName, Kind: platform.EventCallback, Chat: group, From: bob, Text: "x"},
			},
			want: []string{"rule", "rule"},
		},
		{
			name: "event kinds",
			setup: []reg{
				func(e *engine.Engine, r *recorder) error {
					e.OnEvent(platform.EventMemberJoined, r.handler("joined"))
					return nil
				},
				func(e *engine.Engine, r *recorder) error {
					e.OnEvent(platform.EventCallback, r.handler("callback"))
					return nil
				},
				func(e *engine.Engine, r *recorder) error { e.OnCommand("x", r.handler("cmd")); return nil },
			},
			events: []platform.Event{
				{Platform: memory.DefaultName, Kind: platform.EventMemberJoined, Chat: group, From: bob},
				{Platform: memory.DefaultName, Kind: platform.EventCallback, Chat: group, From: bob, Text: "/x"},
				{Platform: memory.DefaultName, Kind: platform.EventEditedMessage, Chat: group, From: bob, Text: "/x"},
			},
			want: []string{"joined", "callback"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, _ := newEngine(t, tt.opts...)
				r := &recorder{}
				for _, s := range tt.setup {
					if err := s(e, r); err != nil {
						t.Fatal(err)
					}
				}
				for _, ev := range tt.events {
					handleAndWait(t, e, ev)
				}
				if err := e.Shutdown(testCtx(t)); err != nil {
					t.Fatal(err)
				}
				if got := r.entries(); !slices.Equal(got, tt.want) {
					t.Fatalf("handlers ran %q;\nwant %q", got, tt.want)
				}
			})
		})
	}
}

// A registration mistake panics, as http.ServeMux.Handle does, with an
// error saying what is wrong; Use returns it as the plugin's error.
func TestRegistrationErrors(t *testing.T) {
	e, _ := newEngine(t)
	h := func(*engine.Context) error { return nil }
	e.OnCommand("start", h, engine.Aliases("go"))
	for _, tc := range []struct {
		name     string
		register func()
		want     error
	}{
		{"duplicate", func() { e.OnCommand("START", h) }, engine.ErrDuplicateCommand},
		{"duplicate alias", func() { e.OnCommand("begin", h, engine.Aliases("go")) }, engine.ErrDuplicateCommand},
		{"nil handler", func() { e.OnMessage(nil) }, engine.ErrInvalidMatcher},
		{"empty command", func() { e.OnCommand("", h) }, engine.ErrInvalidMatcher},
		{"command with space", func() { e.OnCommand("a b", h) }, engine.ErrInvalidMatcher},
		{"bad regex", func() { e.OnRegex("(", h) }, engine.ErrInvalidMatcher},
		{"nil rule", func() { e.On(nil, h) }, engine.ErrInvalidMatcher},
		{"empty prefix", func() { e.OnPrefix("", h) }, engine.ErrInvalidMatcher},
	} {
		if err := registrationPanic(tc.register); !errors.Is(err, tc.want) {
			t.Errorf("%s: panicked with %v; want %v", tc.name, err, tc.want)
		}
	}
	if err := e.Use(dupPlugin{}); !errors.Is(err, engine.ErrDuplicateCommand) || !strings.Contains(err.Error(), "plugin dup") {
		t.Fatalf("Use of a plugin registering a duplicate = %v; want its error", err)
	}
	e.OnCommand("start", h, engine.Priority(1))
	infos := e.Matchers()
	if len(infos) != 2 || infos[0].Kind != "command" || !slices.Equal(infos[0].Words, []string{"start", "go"}) || infos[1].Priority != 1 {
		t.Fatalf("Matchers = %+v", infos)
	}
}

func TestAdapterNamesMustDiffer(t *testing.T) {
	_, err := engine.New(engine.WithAdapter(memory.New()), engine.WithAdapter(memory.New()))
	if err == nil {
		t.Fatal("two adapters named memory accepted")
	}
}

// Events of one chat are handled one after another in arrival order;
// different chats concurrently, at most WithHandlerConcurrency at once.
func TestInboundOrderAndConcurrency(t *testing.T) {
	const chats, perChat, limit = 40, 50, 4
	e, _ := newEngine(t, engine.WithHandlerConcurrency(limit))
	var running, peak atomic.Int32
	var mu sync.Mutex
	seen := map[string][]string{}
	e.OnMessage(func(c *engine.Context) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		mu.Lock()
		seen[c.Chat().ID] = append(seen[c.Chat().ID], c.Text())
		mu.Unlock()
		time.Sleep(50 * time.Microsecond)
		return nil
	})
	var wg sync.WaitGroup
	for c := range chats {
		wg.Go(func() {
			chat := memory.Private(fmt.Sprint("c", c))
			for i := range perChat {
				if err := e.HandleEvent(msg(chat, ann, fmt.Sprint(i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	for c := range chats {
		got := seen[fmt.Sprint("c", c)]
		if len(got) != perChat {
			t.Fatalf("chat %d handled %d events", c, len(got))
		}
		for i, s := range got {
			if s != fmt.Sprint(i) {
				t.Fatalf("chat %d: event %d handled at position %d", c, i, slices.Index(got, fmt.Sprint(i)))
			}
		}
	}
	if p := peak.Load(); p > limit || p < 2 {
		t.Fatalf("peak concurrency %d; want between 2 and %d", p, limit)
	}
	if st := e.Stats(); st.Received != chats*perChat || st.Matched != chats*perChat {
		t.Fatalf("Stats = %+v", st)
	}
}

// blockOnMessage gives e a message handler that blocks until release is
// closed; started receives once a handler runs.
func blockOnMessage(e *engine.Engine) (started <-chan struct{}, release chan struct{}) {
	release = make(chan struct{})
	ran := make(chan struct{}, 1)
	e.OnMessage(func(*engine.Context) error {
		select {
		case ran <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
	return ran, release
}

func TestInboundBackpressure(t *testing.T) {
	e, _ := newEngine(t, engine.WithInboundQueueSize(2), engine.WithHandlerConcurrency(1))
	started, release := blockOnMessage(e)
	if err := e.HandleEvent(msg(dm, ann, "running")); err != nil {
		t.Fatal(err)
	}
	<-started
	for range 2 {
		if err := e.HandleEvent(msg(dm, ann, "queued")); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.HandleEvent(msg(dm, ann, "one too many")); !errors.Is(err, engine.ErrQueueFull) {
		t.Fatalf("HandleEvent on a full queue = %v; want ErrQueueFull", err)
	}
	close(release)
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.HandleEvent(msg(dm, ann, "late")); !errors.Is(err, engine.ErrEngineClosed) {
		t.Fatalf("HandleEvent after Shutdown = %v", err)
	}
	if st := e.Stats(); st.Dropped != 1 || st.Received != 3 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestHandlerErrorsAndPanics(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	var mu sync.Mutex
	var hookErrs []error
	e, mem := newEngine(t,
		engine.WithLogger(zap.New(core)),
		engine.WithOnError(func(c *engine.Context, err error) {
			mu.Lock()
			hookErrs = append(hookErrs, err)
			mu.Unlock()
			c.ReplyError(err)
		}),
	)
	boom := errors.New("boom")
	r := &recorder{}
	e.OnCommand("fail", func(*engine.Context) error { return boom })
	e.OnCommand("panic", func(*engine.Context) error { panic("oops") })
	e.OnCommand("nope", func(*engine.Context) error { return engine.NewUserError("No such note.", nil) })
	e.OnMessage(r.handler("after"), engine.Priority(1))
	for _, text := range []string{"/fail", "/panic", "/fail", "/nope"} {
		must(t, e.HandleEvent(msg(dm, ann, text)))
	}
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := r.entries(); len(got) != 4 {
		t.Fatalf("later handlers ran %d times; want 4", len(got))
	}
	var pe *engine.HandlerPanicError
	if len(hookErrs) != 4 || !errors.Is(hookErrs[0], boom) || !errors.As(hookErrs[1], &pe) || pe.Value != "oops" {
		t.Fatalf("OnError got %v", hookErrs)
	}
	if st := e.Stats(); st.HandlerErrors != 2 || st.HandlerPanics != 1 {
		t.Fatalf("Stats = %+v", st)
	}
	if texts := mem.Texts(dm.ID); len(texts) != 4 || !strings.Contains(texts[0], "Sorry") || texts[3] != "⚠️ No such note." {
		t.Fatalf("replies = %q", texts)
	}
	// Each error is logged once: by the engine, not again by the hook's
	// ReplyError; a user error is no failure.
	if n := logs.FilterLevelExact(zap.WarnLevel).Len(); n != 2 {
		t.Fatalf("%d warn lines; want 2 (one per failure): %v", n, logs.FilterLevelExact(zap.WarnLevel).All())
	}
	if n := logs.FilterMessage("handler ended with a user error").Len(); n != 1 {
		t.Fatalf("%d user error log lines; want 1", n)
	}
	if n := logs.FilterMessage("handler panicked").Len(); n != 1 {
		t.Fatalf("%d panic log lines", n)
	}
	if n := logs.FilterMessage("handler failed").Len(); n != 2 {
		t.Fatalf("%d error log lines", n)
	}
}

func TestUnmatchedAndFallback(t *testing.T) {
	r := &recorder{}
	e, _ := newEngine(t, engine.WithFallback(r.handler("fallback")))
	e.OnCommand("known", r.handler("known"))
	must(t, e.HandleEvent(msg(dm, ann, "/known")))
	must(t, e.HandleEvent(msg(dm, ann, "/unknown")))
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := r.entries(); !slices.Equal(got, []string{"known(known|)", "fallback"}) {
		t.Fatalf("ran %q", got)
	}
	if st := e.Stats(); st.Matched != 1 || st.Unmatched != 1 {
		t.Fatalf("Stats = %+v", st)
	}
}

// Reply's Future is resolved on every path, through the real dispatcher and
// sender chain.
func TestReplyFutureOutcomes(t *testing.T) { synctest.Test(t, testReplyFutureOutcomes) }

func testReplyFutureOutcomes(t *testing.T) {
	e, mem := newEngine(t, engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1}))
	futures := make(chan *future.Future[platform.SendResult], 10)
	e.OnCommand("say", func(c *engine.Context) error {
		futures <- c.ReplyText(c.RawArgs())
		return nil
	})
	ctx := testCtx(t)
	wait := func() (platform.SendResult, error) {
		t.Helper()
		select {
		case f := <-futures:
			return f.Wait(ctx)
		case <-ctx.Done():
			t.Fatal("handler did not reply")
			return platform.SendResult{}, nil
		}
	}

	must(t, e.HandleEvent(msg(dm, ann, "/say ok")))
	if res, err := wait(); err != nil || res.MessageID == "" {
		t.Fatalf("success: %+v, %v", res, err)
	}

	mem.FailNext(dm.ID, platform.Permanent(errors.New("blocked by user")))
	must(t, e.HandleEvent(msg(dm, ann, "/say blocked")))
	if _, err := wait(); !platform.IsPermanent(err) {
		t.Fatalf("permanent failure: %v", err)
	}

	mem.PanicNext(dm.ID, "sender bug")
	must(t, e.HandleEvent(msg(dm, ann, "/say panic")))
	if _, err := wait(); !errors.Is(err, sender.ErrSenderPanicked) || !platform.IsPermanent(err) {
		t.Fatalf("sender panic: %v; want a permanent ErrSenderPanicked", err)
	}

	// Queue full: one slow send running, one waiting; the third handler's
	// reply waits for room, and goes.
	mem.SlowNext(dm.ID, 200*time.Millisecond)
	must(t, e.HandleEvent(msg(dm, ann, "/say q")))
	synctest.Wait() // the slow send has started
	for range 2 {
		must(t, e.HandleEvent(msg(dm, ann, "/say q")))
	}
	var errs []error
	for range 3 {
		_, err := wait()
		errs = append(errs, err)
	}
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || e.Stats().RoomWaits != 1 {
		t.Fatalf("replies to a full chat: %v, %d waits for room; want all sent, the third after a wait", errs, e.Stats().RoomWaits)
	}
	// The permanent failure and the recovered panic are dead letters.
	if st := e.Stats(); st.DeadLetters != 2 || st.Sends.DeadLettered != 2 || st.Outbound.Failed != 2 {
		t.Fatalf("Stats = %+v", st)
	}
}

// After Shutdown returns, every reply was sent or its Future resolved.
func TestShutdownLosesNoReply(t *testing.T) {
	e, mem := newEngine(t, engine.WithDispatcherConfig(engine.DispatcherConfig{MaxInflight: 3, QueueSize: 1000}))
	var futures sync.Map
	e.OnCommand("count", func(c *engine.Context) error {
		for i := 1; i <= 20; i++ {
			futures.Store(fmt.Sprint(c.Chat().ID, "/", i), c.ReplyText(fmt.Sprint(i)))
		}
		return nil
	})
	const chats = 30
	for c := range chats {
		must(t, e.HandleEvent(msg(memory.Private(fmt.Sprint(c)), ann, "/count")))
	}
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	n := 0
	futures.Range(func(_, v any) bool {
		n++
		if _, err := v.(*future.Future[platform.SendResult]).Result(); err != nil {
			t.Errorf("Future after Shutdown: %v", err)
		}
		return true
	})
	if n != chats*20 {
		t.Fatalf("%d futures; want %d", n, chats*20)
	}
	for c := range chats {
		texts := mem.Texts(fmt.Sprint(c))
		for i, s := range texts {
			if s != fmt.Sprint(i+1) {
				t.Fatalf("chat %d got %q", c, texts)
			}
		}
		if len(texts) != 20 {
			t.Fatalf("chat %d got %d replies", c, len(texts))
		}
	}
}

// Shutdown with a deadline that passes force-closes: pending sends resolve
// with the cancellation and land in dead letters.
func TestShutdownForced(t *testing.T) { synctest.Test(t, testShutdownForced) }

func testShutdownForced(t *testing.T) {
	e, mem := newEngine(t, engine.WithDispatcherConfig(engine.DispatcherConfig{MaxInflight: 1}))
	var futures []*future.Future[platform.SendResult]
	var mu sync.Mutex
	e.OnCommand("slow", func(c *engine.Context) error {
		mu.Lock()
		defer mu.Unlock()
		for range 3 {
			futures = append(futures, c.ReplyText("x"))
		}
		return nil
	})
	mem.SlowNext("", time.Hour)
	must(t, e.HandleEvent(msg(dm, ann, "/slow")))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v; want DeadlineExceeded", err)
	}
	for i, f := range futures {
		if _, err := f.Result(); !errors.Is(err, context.Canceled) {
			t.Fatalf("future %d: %v; want Canceled", i, err)
		}
	}
	if n := len(e.DeadLetters()); n != 3 {
		t.Fatalf("%d dead letters; want 3", n)
	}
}

// hungReply returns an engine, in a synctest bubble, whose one reply
// hangs in the adapter, and that reply's Future.
func hungReply(t *testing.T) (*engine.Engine, *memory.Adapter, *future.Future[platform.SendResult]) {
	t.Helper()
	e, mem := newEngine(t)
	var f *future.Future[platform.SendResult]
	e.OnCommand("slow", func(c *engine.Context) error {
		f = c.ReplyText("x")
		return nil
	})
	mem.SlowNext("", time.Hour)
	must(t, e.HandleEvent(msg(dm, ann, "/slow")))
	synctest.Wait() // the handler ran; its reply hangs in the adapter
	return e, mem, f
}

// An outside Shutdown's deadline holds even when another call (Run's own,
// with the whole shutdown timeout) is already draining: the outside call
// force-closes the work at its deadline rather than waiting behind it.
func TestShutdownDeadlineHoldsBehindAnotherCall(t *testing.T) {
	synctest.Test(t, testShutdownDeadlineHoldsBehindAnotherCall)
}

func testShutdownDeadlineHoldsBehindAnotherCall(t *testing.T) {
	e, mem, f := hungReply(t)

	first := make(chan error, 1)
	go func() { first <- e.Shutdown(context.Background()) }()
	synctest.Wait() // the first call drains, waiting for the reply

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v; want DeadlineExceeded", err)
	}
	if d := time.Since(start); d != 100*time.Millisecond {
		t.Fatalf("Shutdown returned after %v; want its 100ms", d)
	}
	if _, err := f.Result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("reply: %v; want Canceled", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first Shutdown = %v", err)
	}
	if n := len(mem.Sent(dm.ID)); n != 0 {
		t.Fatalf("%d replies sent; want none", n)
	}
}

// Shutdown with a context already ended still shuts down, at once: every
// pending reply's Future is resolved when it returns.
func TestShutdownWithEndedContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _, f := hungReply(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := e.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown = %v; want Canceled", err)
		}
		if _, err := f.Result(); !errors.Is(err, context.Canceled) {
			t.Fatalf("reply: %v; want Canceled", err)
		}
	})
}

func TestRunWithAdapter(t *testing.T) {
	e, mem := newEngine(t)
	e.OnCommand("ping", func(c *engine.Context) error {
		c.ReplyText("pong")
		return nil
	})
	runEngine(t, e)
	mem.Say(dm, ann, "/ping")
	sent, err := mem.WaitSent(testCtx(t), dm.ID, 1)
	if err != nil || sent[0].Message.Text != "pong" {
		t.Fatalf("WaitSent = %+v, %v", sent, err)
	}
	if err := e.Run(context.Background()); !errors.Is(err, engine.ErrAlreadyRunning) {
		t.Fatalf("second Run = %v", err)
	}
}

type failingAdapter struct{ *memory.Adapter }

func (failingAdapter) Name() string { return "failing" }
func (failingAdapter) Run(context.Context, platform.Inbound) error {
	return errors.New("token revoked")
}

func TestRunStopsWhenAnAdapterFails(t *testing.T) {
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem), engine.WithAdapter(failingAdapter{memory.New()}))
	if err != nil {
		t.Fatal(err)
	}
	err = e.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "token revoked") {
		t.Fatalf("Run = %v", err)
	}
	if err := e.HandleEvent(msg(dm, ann, "x")); !errors.Is(err, engine.ErrEngineClosed) {
		t.Fatalf("HandleEvent after Run = %v", err)
	}
	if _, err := engine.New(); err != nil {
		t.Fatal(err)
	}
	noAdapters, _ := engine.New()
	if err := noAdapters.Run(context.Background()); !errors.Is(err, engine.ErrNoAdapter) {
		t.Fatalf("Run without adapters = %v", err)
	}
}

func TestDeadLettersReplay(t *testing.T) {
	e, mem := newEngine(t)
	e.OnCommand("say", func(c *engine.Context) error {
		c.ReplyText(c.RawArgs())
		return nil
	})
	down := atomic.Bool{}
	down.Store(true)
	mem.FailWhen(func(platform.SendRequest) error {
		if down.Load() {
			return platform.Permanent(errors.New("chat unavailable"))
		}
		return nil
	})
	for _, s := range []string{"one", "two", "three"} {
		must(t, e.HandleEvent(msg(dm, ann, "/say "+s)))
	}
	must(t, e.Shutdown(testCtx(t)))
	dls := e.DeadLetters()
	if len(dls) != 3 || dls[0].Request.Message.Text != "one" || dls[0].Attempts != 1 {
		t.Fatalf("dead letters = %+v", dls)
	}
	// Replay on a fresh engine sharing the store, once the chat is back.
	e2, err := engine.New(engine.WithAdapter(mem), engine.WithDeadLetterStore(e.DeadLetterStore()))
	if err != nil {
		t.Fatal(err)
	}
	down.Store(false)
	n, err := e2.ReplayDeadLetters(testCtx(t))
	if n != 3 || err != nil {
		t.Fatalf("ReplayDeadLetters = %d, %v", n, err)
	}
	must(t, e2.Shutdown(testCtx(t)))
	if got := mem.Texts(dm.ID); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("replayed %q", got)
	}
	if e2.Stats().DeadLetters != 0 {
		t.Fatal("store not emptied")
	}
	// Replaying on a closed engine keeps the letters.
	e.DeadLetterStore().Add(sender.DeadLetter{Request: dls[0].Request})
	if n, err := e2.ReplayDeadLetters(testCtx(t)); n != 0 || !errors.Is(err, engine.ErrDispatcherClosed) {
		t.Fatalf("replay after shutdown = %d, %v", n, err)
	}
	if e2.Stats().DeadLetters != 1 {
		t.Fatal("refused replay lost")
	}
}

func TestContextValuesShared(t *testing.T) {
	e, _ := newEngine(t)
	got := make(chan any, 1)
	e.OnMessage(func(c *engine.Context) error { c.Set("user", "ann"); return nil })
	e.OnMessage(func(c *engine.Context) error {
		v, _ := c.Get("user")
		got <- v
		return nil
	})
	must(t, e.HandleEvent(msg(dm, ann, "x")))
	if v := <-got; v != "ann" {
		t.Fatalf("Get = %v", v)
	}
}

type testPlugin struct{ fail bool }

func (p testPlugin) Name() string { return "test" }
func (p testPlugin) Register(e *engine.Engine) error {
	if p.fail {
		return errors.New("nope")
	}
	e.OnCommand("plugged", func(*engine.Context) error { return nil }, engine.Description("from a plugin"))
	return nil
}

func TestUse(t *testing.T) {
	e, _ := newEngine(t)
	must(t, e.Use(testPlugin{}))
	if m := e.Matchers(); len(m) != 1 || m[0].Description != "from a plugin" {
		t.Fatalf("Matchers = %+v", m)
	}
	if err := e.Use(testPlugin{fail: true}); err == nil || !strings.Contains(err.Error(), "plugin test") {
		t.Fatalf("Use = %v", err)
	}
}

// handleAndWait handles ev and waits until its handlers have finished, so
// that events of different chats are handled in the test's order. It runs
// in a synctest bubble.
func handleAndWait(t *testing.T, e *engine.Engine, ev platform.Event) {
	t.Helper()
	must(t, e.HandleEvent(ev))
	synctest.Wait()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A reply made after the engine force-closed its dispatcher resolves at
// once with ErrDispatcherClosed, and the handler's context is cancelled.
func TestReplyAfterShutdown(t *testing.T) { synctest.Test(t, testReplyAfterShutdown) }

func testReplyAfterShutdown(t *testing.T) {
	e, _ := newEngine(t)
	release := make(chan struct{})
	started := make(chan struct{})
	type outcome struct {
		ctxErr, replyErr error
	}
	result := make(chan outcome, 1)
	e.OnCommand("late", func(c *engine.Context) error {
		close(started)
		<-release // ignores its context, like a careless handler
		_, err := c.ReplyText("too late").Result()
		result <- outcome{c.Context().Err(), err}
		return nil
	})
	must(t, e.HandleEvent(msg(dm, ann, "/late")))
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- e.Shutdown(ctx) }()
	time.Sleep(time.Second) // past the deadline: the dispatchers are force-closed
	synctest.Wait()
	if err := e.Dispatcher().Submit("probe", func(context.Context) error { return nil }); !errors.Is(err, engine.ErrDispatcherClosed) {
		t.Fatalf("Submit after the forced shutdown = %v", err)
	}
	close(release)
	got := <-result
	if !errors.Is(got.replyErr, engine.ErrDispatcherClosed) {
		t.Fatalf("reply after shutdown: %v; want ErrDispatcherClosed", got.replyErr)
	}
	if !errors.Is(got.ctxErr, context.Canceled) {
		t.Fatalf("handler context: %v; want Canceled", got.ctxErr)
	}
	if err := <-shut; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v", err)
	}
}

// registrationPanic runs register and returns the error it panicked with,
// or nil.
func registrationPanic(register func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err, _ = r.(error)
		}
	}()
	register()
	return nil
}

// dupPlugin registers /start, which the test already has.
type dupPlugin struct{}

func (dupPlugin) Name() string { return "dup" }
func (dupPlugin) Register(e *engine.Engine) error {
	e.OnCommand("start", func(*engine.Context) error { return nil })
	return nil
}

// Replays asked at once (a double click on an operator's button) send
// each dead letter once.
func TestDeadLettersReplayConcurrent(t *testing.T) {
	e, mem := newEngine(t)
	const n, chats = 300, 30 // ten a chat: no chat's queue is full
	for i := range n {
		chat := memory.Private(strconv.Itoa(i % chats))
		e.DeadLetterStore().Add(sender.DeadLetter{Request: platform.SendRequest{Platform: mem.Name(), Target: chat, Message: platform.TextMessage(strconv.Itoa(i))}})
	}
	runEngine(t, e)
	var wg sync.WaitGroup
	var queued atomic.Int64
	for range 3 {
		wg.Go(func() {
			k, err := e.ReplayDeadLetters(testCtx(t))
			if err != nil {
				t.Error(err)
			}
			queued.Add(int64(k))
		})
	}
	wg.Wait()
	if queued.Load() != n {
		t.Fatalf("replays queued %d sends; want %d", queued.Load(), n)
	}
	for c := range chats {
		if _, err := mem.WaitSent(testCtx(t), strconv.Itoa(c), n/chats); err != nil {
			t.Fatal(err)
		}
	}
	must(t, e.Shutdown(testCtx(t)))
	for c := range chats {
		if got := len(mem.Texts(strconv.Itoa(c))); got != n/chats {
			t.Fatalf("chat %d got %d messages; want each of its %d letters once", c, got, n/chats)
		}
	}
}
