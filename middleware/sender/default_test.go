package sender_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

func TestDefaultZeroConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{reply: failFirst(1, errFlaky)}
		s := sender.Default(sender.DefaultConfig{})(r)
		start := time.Now()
		if _, err := s.Send(context.Background(), req("1")); err != nil {
			t.Fatal(err)
		}
		calls := r.snapshot()
		if len(calls) != 2 {
			t.Fatalf("%d calls; want 2 (retried by default)", len(calls))
		}
		// Default backoff: 500ms less up to 20% jitter.
		if d := calls[1].at.Sub(start); d < 400*time.Millisecond || d > 500*time.Millisecond {
			t.Fatalf("retry after %v; want within [400ms, 500ms]", d)
		}
		for _, c := range calls {
			if !c.hasDeadline || c.deadline.Sub(c.at) != sender.DefaultAttemptTimeout {
				t.Fatalf("attempt deadline %v away; want DefaultAttemptTimeout", c.deadline.Sub(c.at))
			}
		}
	})
}

func TestDefaultNegativeTimeout(t *testing.T) {
	r := &recorder{}
	if _, err := sender.Default(sender.DefaultConfig{Timeout: -1})(r).Send(context.Background(), req("1")); err != nil {
		t.Fatal(err)
	}
	if r.snapshot()[0].hasDeadline {
		t.Fatal("negative Timeout still set a per-attempt deadline")
	}
}

// TestDefaultOrder checks the order through what each decorator can see: the
// outer ones see one final outcome and the whole duration, dead letters see
// only final failures, and every retry waits for a rate token.
func TestDefaultOrder(t *testing.T) {
	for _, mode := range sendModes {
		t.Run(mode.name, func(t *testing.T) { testDefaultOrder(t, mode.resumed) })
	}
}

func testDefaultOrder(t *testing.T, resumed bool) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := sender.NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zapcore.DebugLevel)
		c := new(sender.Counters)
		store := sender.NewDeadLetterStore(10)
		s := sender.Default(sender.DefaultConfig{
			Metrics: m, Logger: zap.New(core), Counters: c, DeadLetters: store,
			Retry:     noJitter(3, time.Millisecond, time.Millisecond),
			RateLimit: sender.RateLimitConfig{PerChat: 1},
			Timeout:   time.Second,
		})(&recorder{reply: chatReplies()})
		s, r := inMode(resumed, s)

		start := time.Now()
		if _, err := s.Send(context.Background(), req("flaky2")); err != nil {
			t.Fatal(err)
		}
		// Three attempts, each after a fresh chat token: at 0s, 1s and 2s.
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("send took %v; want 2s (retries wait for rate tokens)", d)
		}
		if store.Len() != 0 {
			t.Fatal("a send that succeeded on retry was dead-lettered")
		}
		if n := logs.Len(); n != 1 || logs.All()[0].ContextMap()["attempts"] != int64(3) {
			t.Fatalf("%d log lines %v; want 1 with 3 attempts", n, logs.All())
		}
		if got := sendsTotal(t, reg, "ok"); got != 1 {
			t.Fatalf("herald_sends_total{ok} = %v; want 1", got)
		}

		_, err = s.Send(context.Background(), req("down"))
		if n, _ := sender.AttemptsOf(err); n != 3 || store.Len() != 1 || store.List()[0].Attempts != 3 {
			t.Fatalf("failed send: %v, %d letters; want 3 attempts, one letter", err, store.Len())
		}
		if e := logs.All()[1]; e.Level != zapcore.WarnLevel || e.ContextMap()["dead_letter"] != true {
			t.Fatalf("failure logged as %v %v", e.Level, e.ContextMap())
		}
		if got := c.Snapshot(); got != (sender.SendStats{Delivered: 1, Failed: 1, Attempts: 6, Retries: 4, DeadLettered: 1}) {
			t.Fatalf("counters %+v", got)
		}
		if !errors.Is(err, errFlaky) {
			t.Fatalf("err = %v; want the cause", err)
		}
		// Each of the two sends waited for two rate tokens and two backoffs.
		checkResumed(t, r, 8)
	})
}

// sendsTotal returns herald_sends_total{platform="test",outcome=outcome}
// from reg.
func sendsTotal(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "herald_sends_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["outcome"] == outcome && labels["platform"] == "test" {
				return mt.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no herald_sends_total{outcome=%q}", outcome)
	return 0
}

// TestDefaultConcurrentNothingLost runs many chats at once through the full
// chain against a platform that floods, fails and refuses, and checks every
// send ends delivered or dead-lettered, and per-chat order holds on delivery.
func TestDefaultConcurrentNothingLost(t *testing.T) {
	for _, mode := range sendModes {
		t.Run(mode.name, func(t *testing.T) { testDefaultConcurrentNothingLost(t, mode.resumed) })
	}
}

func testDefaultConcurrentNothingLost(t *testing.T, resumed bool) {
	synctest.Test(t, func(t *testing.T) {
		c := new(sender.Counters)
		store := sender.NewDeadLetterStore(1000)
		var mu sync.Mutex
		delivered := map[string][]int{}
		platformSender := platform.SenderFunc(func(ctx context.Context, rq platform.SendRequest) (platform.SendResult, error) {
			var seq int
			fmt.Sscanf(rq.Message.Text, "%d", &seq)
			switch {
			case seq%7 == 3 && rand.IntN(2) == 0:
				return platform.SendResult{}, platform.NewRetryAfter(time.Duration(rand.IntN(300))*time.Millisecond, errFlaky)
			case seq%11 == 5:
				return platform.SendResult{}, platform.Permanent(errors.New("bad request"))
			case rand.IntN(4) == 0:
				return platform.SendResult{}, errFlaky
			}
			mu.Lock()
			delivered[rq.Target.ID] = append(delivered[rq.Target.ID], seq)
			mu.Unlock()
			return platform.SendResult{MessageID: rq.Message.Text}, nil
		})
		s := sender.Default(sender.DefaultConfig{
			Counters: c, DeadLetters: store,
			Retry:     sender.RetryConfig{MaxAttempts: 4, BaseBackoff: 50 * time.Millisecond},
			RateLimit: sender.RateLimitConfig{Global: 200, GlobalBurst: 10, PerChat: 20, PerChatBurst: 3, PerGroup: 10},
			Timeout:   time.Second,
		})(platformSender)
		s, r := inMode(resumed, s)
		const chats, each = 40, 25
		var wg sync.WaitGroup
		for ch := range chats {
			wg.Go(func() {
				for i := range each {
					rq := req(fmt.Sprint(ch))
					if ch%3 == 0 {
						rq.Target.Type = platform.ChatGroup
					}
					rq.Message.Text = fmt.Sprint(i)
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					_, _ = s.Send(ctx, rq) // one chat's sends go one at a time, as the dispatcher runs them
					cancel()
				}
			})
		}
		wg.Wait()
		got := c.Snapshot()
		if got.Delivered+got.Failed != chats*each || got.Failed != got.DeadLettered || uint64(store.Len()) != got.DeadLettered {
			t.Fatalf("counters %+v, %d dead letters: sends vanished", got, store.Len())
		}
		if got.Retries == 0 || got.DeadLettered == 0 {
			t.Fatalf("counters %+v: the test did not exercise retries and failures", got)
		}
		for chat, seqs := range delivered {
			if !slices.IsSorted(seqs) {
				t.Fatalf("chat %s delivered out of order: %v", chat, seqs)
			}
		}
		checkResumed(t, r, 1)
	})
}
