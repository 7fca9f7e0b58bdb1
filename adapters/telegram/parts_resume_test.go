package telegram

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Under the engine, the pauses between the parts of a long message, and
// the wait before a later part's retry, hold no dispatcher worker: with one
// worker, another chat's reply goes out during them. The parts still go in
// order, 1 s apart, each once, and the retried part after exactly its
// retry_after.
func TestEngineLongMessagePausesHoldNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const long, short = 42, 43
		srv := telegramtest.NewServer(telegramtest.InMemory())
		defer srv.Close()
		var sends atomic.Int32
		srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
			if r.Method != "sendMessage" || r.ChatID != long {
				return nil
			}
			if sends.Add(1) == 3 { // the third part, first try
				return &telegramtest.Fault{Status: 429, RetryAfter: 4}
			}
			return nil
		})
		a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.WithAdapter(a), engine.WithDispatcherConfig(engine.DispatcherConfig{MaxInflight: 1}))
		if err != nil {
			t.Fatal(err)
		}
		line := strings.Repeat("x", 4000)
		text := line + "\n" + strings.Repeat("y", 4000) + "\n" + strings.Repeat("z", 4000)
		e.OnCommand("long", func(c *engine.Context) error {
			c.Reply(platform.TextMessage(text))
			return nil
		})
		e.OnCommand("short", func(c *engine.Context) error {
			c.ReplyText("short")
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()

		start := time.Now()
		srv.SendUserMessage(long, ann, "/long")
		if _, err := srv.WaitSent(ctx, long, 1); err != nil {
			t.Fatal(err)
		}
		srv.SendUserMessage(short, ann, "/short")
		got, err := srv.WaitSent(ctx, short, 1)
		if err != nil {
			t.Fatal(err)
		}
		if at := got[0].At.Sub(start); at != 0 {
			t.Fatalf("the short reply went at %v; want 0, while the long one pauses", at)
		}
		parts, err := srv.WaitSent(ctx, long, 3)
		if err != nil {
			t.Fatal(err)
		}
		var at []time.Duration
		for i, p := range parts {
			if want := string("xyz"[i]); !strings.HasPrefix(p.Text, want) {
				t.Fatalf("part %d starts %q; want %q", i+1, p.Text[:1], want)
			}
			at = append(at, p.At.Sub(start))
		}
		// 1 s pacing before parts 2 and 3; part 3 refused once with
		// retry_after 4.
		if want := []time.Duration{0, time.Second, 6 * time.Second}; len(at) != 3 || at[1] != want[1] || at[2] != want[2] {
			t.Fatalf("parts at %v; want %v", at, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if st := e.Stats(); st.Sends.Delivered != 2 || st.DeadLetters != 0 || st.Outbound.Waiting != 0 {
			t.Fatalf("stats %+v; want both replies delivered", st)
		}
	})
}

// A long message whose send is force-closed in the pause between part 1
// and part 2 fails for good, saying part 1 was delivered — in place and
// paused, with and without a RateLimit above the adapter (which lets the
// resumed send through to say so).
func TestLongMessageForceClosedBetweenParts(t *testing.T) {
	for _, tc := range []struct {
		name            string
		resumable, rate bool
	}{
		{"in place", false, true},
		{"resumable", true, false},
		{"resumable, rate limited", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := telegramtest.NewServer(telegramtest.InMemory())
				defer srv.Close()
				a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client()})
				if err != nil {
					t.Fatal(err)
				}
				ds := []sender.SenderDecorator{sender.Retry(sender.RetryConfig{})}
				if tc.rate {
					ds = append(ds, sender.RateLimit(sender.TelegramLimits()))
				}
				s := sender.Chain(ds...)(a)
				d := engine.NewOutboundDispatcher(context.Background(), engine.DispatcherConfig{})
				text := strings.Repeat("x", 4000) + "\n" + strings.Repeat("y", 4000) + "\n" + strings.Repeat("z", 4000)
				req := platform.SendRequest{Platform: DefaultName, Target: platform.Chat{ID: "42", Type: platform.ChatPrivate}, Message: platform.TextMessage(text)}
				errc := make(chan error, 1)
				p := platform.NewProgress(time.Now(), time.Time{}) // as the engine's send task owns one
				task := func(ctx context.Context) error {
					if tc.resumable {
						ctx = platform.WithProgress(ctx, p)
					}
					_, err := s.Send(ctx, req)
					if _, ok := platform.PauseOf(err); !ok {
						errc <- err
					}
					return err
				}
				err = d.Submit("telegram:42", task)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(500 * time.Millisecond) // part 1 sent; pausing before part 2
				synctest.Wait()
				if n := len(srv.Sent(42)); n != 1 {
					t.Fatalf("%d parts sent before ForceClose; want 1", n)
				}
				d.ForceClose()
				err = <-errc
				if !platform.IsPermanent(err) || !strings.Contains(err.Error(), "part 1 was delivered") {
					t.Fatalf("Send = %v; want a permanent error saying part 1 was delivered", err)
				}
				if err := d.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				if n := len(srv.Sent(42)); n != 1 {
					t.Fatalf("%d parts sent; want only part 1", n)
				}
			})
		})
	}
}
