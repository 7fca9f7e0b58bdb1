package sender_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// BenchmarkDefaultChain measures the cost the default chain adds to a send:
// a no-op platform sender under every decorator, with rate limits off.
func BenchmarkDefaultChain(b *testing.B) {
	noop := platform.SenderFunc(func(_ context.Context, req platform.SendRequest) (platform.SendResult, error) {
		return platform.SendResult{MessageID: "1", ChatID: req.Target.ID}, nil
	})
	m, err := sender.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	full := sender.Default(sender.DefaultConfig{
		Metrics:     m,
		Logger:      zap.NewNop(),
		Counters:    new(sender.Counters),
		DeadLetters: sender.NewDeadLetterStore(0),
		Timeout:     10 * time.Second,
	})(noop)
	noTimeout := sender.Default(sender.DefaultConfig{
		Metrics:     m,
		Logger:      zap.NewNop(),
		Counters:    new(sender.Counters),
		DeadLetters: sender.NewDeadLetterStore(0),
		Timeout:     -1,
	})(noop)
	rq := req("42")
	run := func(s platform.Sender) func(*testing.B) {
		return func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Send(ctx, rq); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("bare", run(noop))
	b.Run("default", run(full))
	b.Run("default-no-timeout", run(noTimeout)) // what context.WithTimeout costs
	b.Run("default-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := full.Send(ctx, rq); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
