package telegram

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// The tests in this file check that a graceful restart repeats nothing
// when the Bot API is slow: updates are confirmed as the run goes, and
// what is left to confirm when the run stops gets what is left of the
// engine's shutdown timeout, not a fixed half second.

// slowAPI is the fake Bot API in memory with every answer a second late.
func slowAPI() *telegramtest.Server {
	srv := telegramtest.NewServer(telegramtest.InMemory())
	srv.Inject(telegramtest.Fault{Delay: time.Second})
	return srv
}

// A bot on a Bot API that takes a second per answer handles 5 updates and
// is stopped at once, while the call that would confirm them waits for its
// answer; a second process then starts and gets 5 more. The engine's
// shutdown timeout (5 s) bounds the confirming call on the way out, so it
// gets its answer (a fixed 0.5 s did not, and the next process handled the
// 5 again): every update is handled once.
func TestEngineRestartWithSlowAPIRepeatsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := slowAPI()
		defer srv.Close()
		var (
			mu      sync.Mutex
			handled = map[string]int{}
		)
		run := func(from, to int) {
			for i := from; i <= to; i++ {
				srv.SendUserMessage(1, ann, strconv.Itoa(i))
			}
			a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			e, err := engine.New(engine.WithAdapter(a), engine.WithShutdownTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			all := make(chan struct{})
			e.OnEvent(platform.EventMessage, func(c *engine.Context) error {
				mu.Lock()
				defer mu.Unlock()
				handled[c.Event().Text]++
				if c.Event().Text == strconv.Itoa(to) {
					close(all)
				}
				return nil
			})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()
			<-all
			cancel() // at once: the confirming poll is still a second away
			if err := <-done; err != nil {
				t.Fatalf("Run = %v", err)
			}
		}
		run(1, 5)
		if srv.Pending() != 0 {
			t.Fatalf("%d updates unconfirmed after the first process stopped", srv.Pending())
		}
		run(6, 10)
		mu.Lock()
		defer mu.Unlock()
		for i := 1; i <= 10; i++ {
			if n := handled[strconv.Itoa(i)]; n != 1 {
				t.Errorf("update %d handled %d times; want once", i, n)
			}
		}
	})
}

// The same without an engine, through the stop context of
// platform.WithStopContext; and, without one, the fallback of half a
// second gives up on a server that slow (the updates then come again,
// never lost).
func TestConfirmBoundedByStopContext(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stop      time.Duration // 0: no stop context
		confirmed bool
	}{
		{"stop context of 5 s", 5 * time.Second, true},
		{"no stop context", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := slowAPI()
				defer srv.Close()
				for i := 1; i <= 5; i++ {
					srv.SendUserMessage(1, ann, strconv.Itoa(i))
				}
				a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client()})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				var stopCtx context.Context
				if tc.stop > 0 {
					var endStop context.CancelFunc
					stopCtx, endStop = context.WithTimeout(t.Context(), tc.stop)
					defer endStop()
				}
				n := 0
				err = a.Run(ctx, platform.Inbound{Stop: stopCtx, Handle: func(platform.Event) error {
					if n++; n == 5 {
						cancel()
					}
					return nil
				}})
				if err != nil {
					t.Fatalf("Run = %v", err)
				}
				if got := srv.Pending() == 0; got != tc.confirmed {
					t.Fatalf("%d updates pending after the stop; confirmed %v, want %v", srv.Pending(), got, tc.confirmed)
				}
			})
		})
	}
}

// Updates are confirmed as the run goes: once a batch is handed on, the
// next call (timeout 0, answered at once) confirms it before the adapter
// waits in a long poll, so a run stopped during that long poll has
// nothing left to confirm and makes no call on its way out.
func TestConfirmedBeforeTheLongPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := slowAPI()
		defer srv.Close()
		for i := 1; i <= 5; i++ {
			srv.SendUserMessage(1, ann, strconv.Itoa(i))
		}
		a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, platform.Inbound{Handle: func(platform.Event) error { return nil }}) }()
		// getMe, deleteWebhook and the poll that brings the 5 take a
		// second each; the confirming poll one more, then the long poll
		// waits.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if srv.WaitingPolls() != 1 || srv.Pending() != 0 || srv.Offset() != 6 {
			t.Fatalf("%d long polls waiting, %d updates pending, offset %d; want 1, 0 and 6", srv.WaitingPolls(), srv.Pending(), srv.Offset())
		}
		polls := srv.Requests("getUpdates")
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := srv.Requests("getUpdates"); got != polls {
			t.Fatalf("%d getUpdates calls after the stop; want none: nothing was left to confirm", got-polls)
		}
	})
}

// A server that ignores getUpdates' timeout and answers at once with no
// update is polled at most every emptyPollFloor, not in a tight loop.
func TestPollFloorWhenEmptyAnswersComeEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{replies: map[string][]reply{}}
		for range 1000 {
			s.replies["getUpdates"] = append(s.replies["getUpdates"], ok("[]"))
		}
		a, err := New(Config{Token: testToken, APIEndpoint: "http://api.invalid/bot%s/%s", HTTPClient: &http.Client{Transport: s}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := a.Run(ctx, platform.Inbound{Handle: func(platform.Event) error { return nil }}); err != nil {
			t.Fatalf("Run = %v", err)
		}
		at := s.times("getUpdates")
		if len(at) > 21 { // at 0, 0.5 s, 1 s, …, 10 s
			t.Fatalf("%d getUpdates calls in 10 s; want at most 21", len(at))
		}
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < emptyPollFloor {
				t.Fatalf("poll %d came %v after the one before; want at least %v", i+1, gap, emptyPollFloor)
			}
		}
	})
}
