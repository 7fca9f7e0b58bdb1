package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// menuAdapter is a memory adapter with a commands menu whose first fails
// calls fail with err, or, with err nil, never answer (until their
// context ends).
type menuAdapter struct {
	*memory.Adapter
	mu    sync.Mutex
	fails int
	err   error
	calls int
	menu  []platform.Command
}

func (a *menuAdapter) SetCommands(ctx context.Context, cmds []platform.Command, _ platform.CommandScope) error {
	a.mu.Lock()
	a.calls++
	fail, err := a.calls <= a.fails, a.err
	if !fail {
		a.menu = cmds
	}
	a.mu.Unlock()
	switch {
	case !fail:
		return nil
	case err == nil: // a Bot API that never answers
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (a *menuAdapter) state() (calls int, menu []platform.Command) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, a.menu
}

// The commands menu is set beside the adapter's run, not before it: a
// platform that fails the call, or does not answer it, delays no event. A
// failure that may pass is logged once and the call made again, with
// backoff (a 429's retry-after when longer), until it succeeds; a
// permanent one (a menu the platform refuses) is not made again.
func TestCommandsMenuRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error // nil: the call never answers
		callsAt20 int   // calls made 20 s after the start
		wantCalls int   // calls made after an hour
		wantMenu  bool
		wantLogs  []string
	}{
		{"transient", errors.New("connection refused"), 4, 4, true, []string{
			"engine: setting the commands menu failed; trying again", "engine: the commands menu is set"}},
		{"silent", nil, 2, 4, true, []string{
			"engine: setting the commands menu failed; trying again", "engine: the commands menu is set"}},
		{"flood wait", platform.NewRetryAfter(30*time.Second, nil), 1, 4, true, []string{
			"engine: setting the commands menu failed; trying again", "engine: the commands menu is set"}},
		{"permanent", platform.Permanent(errors.New("400 Bad Request")), 1, 1, false, []string{
			"engine: setting the commands menu failed; the bot runs without it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &menuAdapter{Adapter: memory.New(), fails: 3, err: tc.err}
				core, logs := observer.New(zap.InfoLevel)
				e, err := engine.New(engine.WithAdapter(a), engine.WithLogger(zap.New(core)))
				if err != nil {
					t.Fatal(err)
				}
				e.OnCommand("ping", func(c *engine.Context) error { c.ReplyText("pong"); return nil }, engine.Description("answers pong"))
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- e.Run(ctx) }()

				start := time.Now()
				chat := memory.Private("1")
				a.Say(chat, memory.User("1", "Ann"), "/ping")
				if _, err := a.WaitSent(ctx, chat.ID, 1); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took > time.Second {
					t.Fatalf("the first reply took %v (fake time): the menu held the adapter up", took)
				}
				if calls, menu := a.state(); menu != nil {
					t.Fatalf("the menu was set (%d calls) before the first event was answered; the first calls fail", calls)
				}
				time.Sleep(20*time.Second - time.Since(start))
				if calls, _ := a.state(); calls != tc.callsAt20 {
					t.Fatalf("%d calls 20 s after the start; want %d", calls, tc.callsAt20)
				}
				time.Sleep(time.Hour) // fake time: the retries' backoff passes
				calls, menu := a.state()
				if calls != tc.wantCalls || (menu != nil) != tc.wantMenu {
					t.Fatalf("%d calls, menu %v; want %d calls, a menu: %v", calls, menu, tc.wantCalls, tc.wantMenu)
				}
				if tc.wantMenu && (len(menu) != 1 || menu[0].Name != "ping" || menu[0].Description != "answers pong") {
					t.Fatalf("the menu is %+v; want /ping, answers pong", menu)
				}
				var got []string
				for _, l := range logs.FilterMessageSnippet("commands menu").All() {
					got = append(got, l.Message)
				}
				if len(got) != len(tc.wantLogs) || got[0] != tc.wantLogs[0] || got[len(got)-1] != tc.wantLogs[len(tc.wantLogs)-1] {
					t.Fatalf("logged %q; want %q", got, tc.wantLogs)
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
