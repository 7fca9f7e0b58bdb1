package plugins_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/leakcheck"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/count"
	"github.com/heraldbot/herald/plugins/echo"
	"github.com/heraldbot/herald/plugins/help"
	"github.com/heraldbot/herald/plugins/menu"
	"github.com/heraldbot/herald/plugins/ping"
	"github.com/heraldbot/herald/plugins/stats"
)

// TestMain fails the run if the tests leave goroutines behind.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// converse sends each text as its own chat's message and returns the
// replies per text.
func converse(t *testing.T, texts ...string) map[string][]string {
	t.Helper()
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(ping.New(), echo.New(), count.New(), menu.New(), help.New(), stats.New()); err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		err := e.HandleEvent(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Time: time.Now(),
			Chat: memory.Private(fmt.Sprint(i)), From: memory.User("u", "Ann"), Text: text})
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for i, text := range texts {
		out[text] = mem.Texts(fmt.Sprint(i))
	}
	return out
}

func TestPlugins(t *testing.T) {
	got := converse(t, "/ping", "/echo hello  world", "/echo", "/count 5", "/count 0", "/count 101", "/count x",
		"/count 100", "/help", "/start", "/stats")
	if r := got["/ping"]; len(r) != 1 || !strings.HasPrefix(r[0], "pong (latency ") {
		t.Errorf("/ping → %q", r)
	}
	if r := got["/echo hello  world"]; !slices.Equal(r, []string{"hello  world"}) {
		t.Errorf("/echo → %q", r)
	}
	for _, in := range []string{"/echo"} {
		if r := got[in]; !slices.Equal(r, []string{echo.Usage}) {
			t.Errorf("%s → %q", in, r)
		}
	}
	if r := got["/count 5"]; !slices.Equal(r, []string{"1", "2", "3", "4", "5"}) {
		t.Errorf("/count 5 → %q", r)
	}
	for _, in := range []string{"/count 0", "/count 101", "/count x"} {
		if r := got[in]; !slices.Equal(r, []string{count.Usage}) {
			t.Errorf("%s → %q", in, r)
		}
	}
	if r := got["/count 100"]; len(r) != 100 || r[99] != "100" {
		t.Errorf("/count 100 → %d replies", len(r))
	}
	for _, in := range []string{"/help", "/start"} {
		r := got[in]
		if len(r) != 1 {
			t.Fatalf("%s → %q", in, r)
		}
		for _, want := range []string{"/ping — check", "/echo — repeat", "/count — send", "/menu — show", "/help, /start — list", "/stats — show"} {
			if !strings.Contains(r[0], want) {
				t.Errorf("%s lacks %q:\n%s", in, want, r[0])
			}
		}
	}
	if r := got["/stats"]; len(r) != 1 || !strings.Contains(r[0], "Events: ") || !strings.Contains(r[0], "Sends: ") {
		t.Errorf("/stats → %q", r)
	}
}

func TestPong(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	for _, tc := range []struct {
		sent time.Time
		want string
	}{
		{time.Time{}, "pong"},
		{now.Add(-1234567 * time.Microsecond), "pong (latency 1.235s)"},
		{now.Add(time.Second), "pong"},
	} {
		if got := ping.Pong(tc.sent, now); got != tc.want {
			t.Errorf("Pong(%v) = %q; want %q", tc.sent, got, tc.want)
		}
	}
}

func TestHelpText(t *testing.T) {
	if got := help.Text(nil); got != "No commands are registered." {
		t.Errorf("empty help = %q", got)
	}
	got := help.Text([]engine.MatcherInfo{
		{Kind: "command", Words: []string{"a", "b"}, Description: "does a"},
		{Kind: "message", Description: "not listed"},
		{Kind: "command", Words: []string{"c"}},
	})
	if want := "Commands:\n/a, /b — does a\n/c"; got != want {
		t.Errorf("help = %q; want %q", got, want)
	}
}

// /count larger than the chat's queue waits for room instead of losing
// numbers.
func TestCountLargerThanQueue(t *testing.T) {
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem), engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 4}))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(count.New()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mem.SlowNext("1", 5*time.Millisecond) // keep the queue full for a while
	}
	if err := e.HandleEvent(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage,
		Chat: memory.Private("1"), From: memory.User("u", "Ann"), Text: "/count 30"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := mem.Texts("1")
	want := make([]string, 30)
	for i := range want {
		want[i] = fmt.Sprint(i + 1)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("/count 30 with a queue of 4 sent %q", got)
	}
}

// When the handler's time runs out, /count stops, logs it, and what it
// sent has no gap.
func TestCountStopsWhenOutOfTime(t *testing.T) {
	mem := memory.New()
	core, logs := observer.New(zap.WarnLevel)
	e, err := engine.New(engine.WithAdapter(mem), engine.WithHandlerTimeout(50*time.Millisecond),
		engine.WithLogger(zap.New(core)), engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(count.New()); err != nil {
		t.Fatal(err)
	}
	mem.SlowNext("1", 200*time.Millisecond)
	if err := e.HandleEvent(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage,
		Chat: memory.Private("1"), From: memory.User("u", "Ann"), Text: "/count 10"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := mem.Texts("1")
	if len(got) == 0 || len(got) >= 10 {
		t.Fatalf("replies %q; want a prefix of 1…10", got)
	}
	for i, s := range got {
		if s != fmt.Sprint(i+1) {
			t.Fatalf("replies %q have a gap", got)
		}
	}
	if logs.FilterMessage("count stopped early").Len() != 1 {
		t.Fatalf("no log line for the early stop: %v", logs.All())
	}
}
