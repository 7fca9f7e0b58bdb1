package engine_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// Middleware runs around handlers: the engine's outside the matcher's, the
// first listed outermost; one that does not call next stops the event
// there; its errors and panics are the handler's.
func TestMiddleware(t *testing.T) {
	var (
		mu    sync.Mutex
		trace []string
	)
	note := func(s string) {
		mu.Lock()
		trace = append(trace, s)
		mu.Unlock()
	}
	mw := func(name string) engine.Middleware {
		return func(next engine.Handler) engine.Handler {
			return func(c *engine.Context) error {
				note(name + ">" + c.Command())
				err := next(c)
				note("<" + name)
				return err
			}
		}
	}
	onlyAnn := func(next engine.Handler) engine.Handler {
		return func(c *engine.Context) error {
			if c.From().ID != ann.ID {
				return nil // not for others: the handler does not run
			}
			return next(c)
		}
	}
	var onErr []error
	e, _ := newEngine(t,
		engine.WithMiddleware(mw("a"), nil, mw("b")),
		engine.WithMiddleware(mw("c")),
		engine.WithOnError(func(_ *engine.Context, err error) { onErr = append(onErr, err) }),
		engine.WithFallback(func(c *engine.Context) error { note("fallback " + c.Text()); return nil }),
	)
	e.OnCommand("hi", func(c *engine.Context) error { note("hi"); return nil }, engine.Wrap(mw("m"), onlyAnn))
	e.OnCommand("fail", func(c *engine.Context) error { return errors.New("boom") })
	e.OnCommand("panic", func(c *engine.Context) error { panic("ouch") })
	for _, ev := range []platform.Event{msg(dm, ann, "/hi"), msg(dm, bob, "/hi"), msg(dm, ann, "/fail"), msg(dm, ann, "/panic"), msg(dm, ann, "hello")} {
		must(t, e.HandleEvent(ev))
	}
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(trace, " ")
	want := strings.Join([]string{
		"a>hi b>hi c>hi m>hi hi <m <c <b <a", // Ann: all of it, in order
		"a>hi b>hi c>hi m>hi <m <c <b <a",    // Bob: onlyAnn stops it
		"a>fail b>fail c>fail <c <b <a",
		"a>panic b>panic c>panic", // the panic unwinds through them
		"a> b> c> fallback hello <c <b <a",
	}, " ")
	if got != want {
		t.Fatalf("ran\n%s\nwant\n%s", got, want)
	}
	if len(onErr) != 2 || onErr[0].Error() != "boom" || !slices.ContainsFunc(onErr, func(err error) bool {
		var pe *engine.HandlerPanicError
		return errors.As(err, &pe)
	}) {
		t.Fatalf("OnError got %v; want the error and the panic", onErr)
	}
}

// Middleware runs only for registrations that succeed, and one that
// returns no handler is refused.
func TestMiddlewareRegistration(t *testing.T) {
	calls := 0
	counting := func(next engine.Handler) engine.Handler { calls++; return next }
	e, _ := newEngine(t, engine.WithMiddleware(counting))
	h := func(c *engine.Context) error { return nil }
	e.OnCommand("a", h)
	if err := registrationPanic(func() { e.OnCommand("a", h) }); !errors.Is(err, engine.ErrDuplicateCommand) {
		t.Fatalf("duplicate = %v", err)
	}
	if calls != 1 {
		t.Fatalf("middleware called %d times; want once, for the registration that succeeded", calls)
	}
	nilHandler := func(engine.Handler) engine.Handler { return nil }
	if err := registrationPanic(func() { e.OnCommand("b", h, engine.Wrap(nilHandler)) }); !errors.Is(err, engine.ErrInvalidMatcher) {
		t.Fatalf("a middleware returning nil = %v; want ErrInvalidMatcher", err)
	}
}

// While a conversation waits, the handler middleware sees each event once:
// an event the conversation takes passes through it (with the event's own
// Context), one the conversation refuses reaches the matchers' handlers
// without running through it again, and one it stops reaches neither.
func TestMiddlewareSeesOfferedEventsOnce(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	mw := func(next engine.Handler) engine.Handler {
		return func(c *engine.Context) error {
			mu.Lock()
			seen = append(seen, c.From().Name+":"+c.Text())
			mu.Unlock()
			if c.Text() == "blocked" {
				return nil // stops the event
			}
			return next(c)
		}
	}
	e, mem := newEngine(t, engine.WithMiddleware(mw))
	var got []string
	e.OnCommand("ask", func(c *engine.Context) error {
		c.ReplyText("Say 'this'.")
		ans, err := c.Next(c.Context(), func(ev platform.Event) bool { return ev.Text == "this" })
		if err != nil {
			return err
		}
		c.ReplyText("took " + ans.Text)
		return nil
	}, engine.Block())
	e.OnMessage(func(c *engine.Context) error {
		got = append(got, c.From().Name+":"+c.Text()) // one chat: one at a time
		return nil
	}, engine.Priority(10))
	runEngine(t, e)

	mem.Say(group, ann, "/ask")
	waitTexts(t, mem, group.ID, "Say 'this'.")
	mem.Say(group, ann, "other")   // refused by Ann's wait: to the matchers
	mem.Say(group, ann, "blocked") // stopped by the middleware: to no one
	mem.Say(group, ann, "this")    // Ann's answer
	waitTexts(t, mem, group.ID, "Say 'this'.", "took this")
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Each event once; and the /ask handler's runs again (its replays,
	// one per event offered to it) go through the middleware with its
	// first event, as every run of a handler does.
	want := []string{"Ann:/ask", "Ann:other", "Ann:/ask", "Ann:blocked", "Ann:this", "Ann:/ask"}
	if !slices.Equal(seen, want) {
		t.Fatalf("middleware saw %q; want %q", seen, want)
	}
	if want := []string{"Ann:other"}; !slices.Equal(got, want) {
		t.Fatalf("the message matcher got %q; want %q", got, want)
	}
}
