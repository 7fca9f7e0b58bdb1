package engine_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// A reply waiting out a platform's retry-after holds no send worker: with
// one worker, another chat's reply goes out meanwhile; the waiting reply
// goes after exactly the time asked, before its own chat's next reply, and
// its Future reports the delivery.
func TestEngineReplyWaitHoldsNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		store := sender.NewDeadLetterStore(10)
		e, err := engine.New(
			engine.WithAdapter(mem),
			engine.WithDispatcherConfig(engine.DispatcherConfig{MaxInflight: 1}),
			engine.WithDeadLetterStore(store),
		)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		results := make(chan error, 2)
		e.OnMessage(func(c *engine.Context) error {
			f := c.ReplyText("re: " + c.Text())
			if c.Chat().ID == "slow" && c.Text() == "1" {
				go func() {
					_, err := f.Wait(context.Background())
					results <- err
				}()
			}
			return nil
		})
		slow, quick := memory.Private("slow"), memory.Private("quick")
		mem.FailNext("slow", platform.NewRetryAfter(10*time.Second, errors.New("429 Too Many Requests")))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		mem.Say(slow, ann, "1")
		mem.Say(slow, ann, "2")
		synctest.Wait()
		mem.Say(quick, ann, "hi")
		synctest.Wait()

		if got := mem.Texts("quick"); len(got) != 1 || time.Since(start) != 0 {
			t.Fatalf("quick chat got %q at %v; want its reply at once while slow waits", got, time.Since(start))
		}
		if st := e.Stats().Outbound; st.Waiting != 1 || st.Running != 0 {
			t.Fatalf("dispatcher %+v; want the slow reply waiting, nothing running", st)
		}
		sent, err := mem.WaitSent(context.Background(), "slow", 2)
		if err != nil {
			t.Fatal(err)
		}
		if sent[0].Message.Text != "re: 1" || sent[1].Message.Text != "re: 2" {
			t.Fatalf("slow chat got %+v; want re: 1, re: 2 in order", sent)
		}
		if at := sent[0].At.Sub(start); at != 10*time.Second {
			t.Fatalf("retried after %v; want exactly the 10s asked", at)
		}
		if err := <-results; err != nil {
			t.Fatalf("Future of the waiting reply: %v", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if store.Len() != 0 {
			t.Fatalf("%d dead letters; want none", store.Len())
		}
	})
}

// A send that asks to wait just as its context ends (here the deadline
// passes before its run returns) is run once more, and its Future is
// resolved with the context's end, not left open.
func TestEngineReplyPausedAsContextEndsIsResolved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		pauseLate := func(next platform.Sender) platform.Sender {
			return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
				if err := platform.ProgressOf(ctx).Wait(ctx, time.Second); err != nil {
					if _, ok := platform.PauseOf(err); ok {
						<-ctx.Done() // the deadline passes before the run returns
					}
					return platform.SendResult{}, err
				}
				return next.Send(ctx, req)
			})
		}
		e, err := engine.New(engine.WithAdapter(mem), engine.WithSenderMiddleware(pauseLate),
			engine.WithDispatcherConfig(engine.DispatcherConfig{SendTimeout: 5 * time.Second, MaxLifetime: 5 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		res := make(chan error, 1)
		e.OnCommand("go", func(c *engine.Context) error {
			f := c.ReplyText("hi")
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := f.Wait(ctx)
				res <- err
			}()
			return nil
		})
		if err := e.HandleEvent(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage,
			Chat: memory.Private("1"), From: memory.User("u", "U"), Text: "/go"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = <-res
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("Future = %v after %v; want the 5s deadline's DeadlineExceeded", err, time.Since(start))
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Flood waits of 30 s and more (Telegram's retry_after) are waited out
// with the engine's defaults: the bound on a send's whole life is not the
// bound on one run.
func TestEngineLongRetryAfterIsWaited(t *testing.T) {
	for _, wait := range []time.Duration{30 * time.Second, 45 * time.Second, 5 * time.Minute} {
		t.Run(wait.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memory.New()
				e, err := engine.New(engine.WithAdapter(mem))
				if err != nil {
					t.Fatal(err)
				}
				res := make(chan error, 1)
				e.OnMessage(func(c *engine.Context) error {
					f := c.ReplyText("re: " + c.Text())
					go func() { _, err := f.Wait(context.Background()); res <- err }()
					return nil
				})
				mem.FailNext("1", platform.NewRetryAfter(wait, errors.New("429 Too Many Requests")))
				start := time.Now()
				if err := e.HandleEvent(mem.Say(memory.Private("1"), memory.User("u", "U"), "hi")); err != nil {
					t.Fatal(err)
				}
				if err := <-res; err != nil {
					t.Fatalf("reply after a %v flood wait: %v", wait, err)
				}
				if got := time.Since(start); got != wait {
					t.Fatalf("delivered after %v; want %v", got, wait)
				}
				if n := len(e.DeadLetters()); n != 0 {
					t.Fatalf("%d dead letters", n)
				}
				if err := e.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// Sends refused with ErrQueueFull are logged, once per interval however
// many there are, and their Futures report it. (A handler's sends wait for
// room instead: TestHandlerRepliesWaitForRoom.)
func TestEngineRefusedSendsLoggedRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.WarnLevel)
		mem := memory.New()
		e, err := engine.New(engine.WithAdapter(mem), engine.WithLogger(zap.New(core)),
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1}))
		if err != nil {
			t.Fatal(err)
		}
		mem.SlowNext("1", time.Second)
		n := 0
		for range 1000 {
			if _, err := e.Send(mem.Name(), memory.Private("1"), platform.TextMessage("x")).Result(); errors.Is(err, engine.ErrQueueFull) {
				n++
			}
		}
		if n < 990 {
			t.Fatalf("%d of 1000 sends refused; want all but the running and the queued one", n)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		lines := logs.FilterMessageSnippet("send was refused").All()
		if len(lines) != 1 {
			t.Fatalf("%d log lines for the refused sends; want 1", len(lines))
		}
	})
}
