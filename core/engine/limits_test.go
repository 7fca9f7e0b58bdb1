package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// limitedMemory is a memory adapter whose "platform" publishes a budget of
// one message a second to a chat.
type limitedMemory struct{ *memory.Adapter }

func (limitedMemory) Limits() platform.Limits {
	return platform.Limits{PerChatPerSecond: 1, PerChatBurst: 1}
}

// An adapter's published budget limits its sends by default; WithRateLimit
// and a RateLimit in WithSenderConfig take precedence, in that order; a
// zero RateLimitConfig is not set, and Off turns limiting off.
func TestPublishedLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []engine.Option
		want []time.Duration // when the three replies went
	}{
		{"published", nil, []time.Duration{0, time.Second, 2 * time.Second}},
		{"WithRateLimit", []engine.Option{engine.WithRateLimit(memory.DefaultName, sender.RateLimitConfig{PerChat: 2, PerChatBurst: 1})},
			[]time.Duration{0, 500 * time.Millisecond, time.Second}},
		{"WithSenderConfig", []engine.Option{engine.WithSenderConfig(sender.DefaultConfig{RateLimit: sender.RateLimitConfig{PerChat: 0.5, PerChatBurst: 1}})},
			[]time.Duration{0, 2 * time.Second, 4 * time.Second}},
		{"WithRateLimit over WithSenderConfig", []engine.Option{
			engine.WithSenderConfig(sender.DefaultConfig{RateLimit: sender.RateLimitConfig{PerChat: 0.5, PerChatBurst: 1}}),
			engine.WithRateLimit(memory.DefaultName, sender.RateLimitConfig{PerChat: 2, PerChatBurst: 1}),
		}, []time.Duration{0, 500 * time.Millisecond, time.Second}},
		{"zero is not set", []engine.Option{engine.WithRateLimit(memory.DefaultName, sender.RateLimitConfig{})},
			[]time.Duration{0, time.Second, 2 * time.Second}},
		{"off", []engine.Option{engine.WithRateLimit(memory.DefaultName, sender.RateLimitConfig{Off: true})}, []time.Duration{0, 0, 0}},
		{"off in WithSenderConfig", []engine.Option{engine.WithSenderConfig(sender.DefaultConfig{RateLimit: sender.RateLimitConfig{Off: true}})},
			[]time.Duration{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memory.New()
				e, err := engine.New(append([]engine.Option{engine.WithAdapter(limitedMemory{mem})}, tc.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				e.OnCommand("three", func(c *engine.Context) error {
					for i := range 3 {
						c.ReplyText(fmt.Sprint(i))
					}
					return nil
				})
				start := time.Now()
				must(t, e.HandleEvent(msg(dm, ann, "/three")))
				if err := e.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				var got []time.Duration
				for _, s := range mem.Sent(dm.ID) {
					got = append(got, s.At.Sub(start))
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("replies at %v; want %v", got, tc.want)
				}
			})
		})
	}
}

// A chain given with WithSenderMiddleware keeps the engine's bookkeeping:
// its sends are counted and its failures kept as dead letters.
func TestCustomChainKeepsBookkeeping(t *testing.T) {
	mem := memory.New()
	var seen int
	mine := func(next platform.Sender) platform.Sender {
		return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
			seen++
			return next.Send(ctx, req)
		})
	}
	e, err := engine.New(engine.WithAdapter(mem), engine.WithSenderMiddleware(mine))
	if err != nil {
		t.Fatal(err)
	}
	e.OnCommand("two", func(c *engine.Context) error {
		c.ReplyText("a")
		c.ReplyText("b")
		return nil
	})
	mem.FailNext(dm.ID, platform.Permanent(errors.New("refused")))
	must(t, e.HandleEvent(msg(dm, ann, "/two")))
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if seen != 2 || st.Sends.Delivered != 1 || st.Sends.Failed != 1 || st.Sends.DeadLettered != 1 || st.DeadLetters != 1 {
		t.Fatalf("custom chain saw %d sends; Stats %+v, %d dead letters; want 1 delivered, 1 failed and kept", seen, st.Sends, st.DeadLetters)
	}
}
