package engine_test

import (
	"context"
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
// and a RateLimit in WithSenderConfig take precedence, and a zero
// WithRateLimit turns limiting off.
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
		{"off", []engine.Option{engine.WithRateLimit(memory.DefaultName, sender.RateLimitConfig{})}, []time.Duration{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := memory.New()
				e, err := engine.New(append([]engine.Option{engine.WithAdapter(limitedMemory{mem})}, tc.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				must(t, e.OnCommand("three", func(c *engine.Context) error {
					for i := range 3 {
						c.ReplyText(fmt.Sprint(i))
					}
					return nil
				}))
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
