package sender

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/platform"
)

func TestRetryJitterBounds(t *testing.T) {
	cfg := RetryConfig{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Jitter: 0.25}
	tests := []struct {
		rnd     float64
		attempt int
		want    time.Duration
	}{
		{0, 1, 100 * time.Millisecond},
		{0.5, 1, 87500 * time.Microsecond},
		{0.5, 2, 175 * time.Millisecond},
		{0, 5, time.Second},                    // capped: 1.6s → 1s
		{0.5, 5, 875 * time.Millisecond},       // jitter applies after the cap
		{0.999, 3, 300100 * time.Microsecond},  // just above the lower bound 300ms
		{0.999, 30, 750250 * time.Microsecond}, // no overflow for large attempts
		{0.999, 1 << 20, 750250 * time.Microsecond},
	}
	for _, tt := range tests {
		s := retryWith(cfg, func() float64 { return tt.rnd })(nil).(*retrySender)
		if got := s.backoff(tt.attempt); got != tt.want {
			t.Errorf("backoff(attempt %d, rnd %v) = %v; want %v", tt.attempt, tt.rnd, got, tt.want)
		}
	}

	// With the real source, every wait is within [b·(1−Jitter), b].
	s := retryWith(cfg, rand.Float64)(nil).(*retrySender)
	for i := range 10000 {
		attempt := i%6 + 1
		b := min(cfg.BaseBackoff<<(attempt-1), cfg.MaxBackoff)
		got := s.backoff(attempt)
		if got > b || got < b-b/4 {
			t.Fatalf("backoff(%d) = %v; want within [%v, %v]", attempt, got, b-b/4, b)
		}
	}
}

func TestRetryJitterShortensWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var times []time.Time
		next := platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
			times = append(times, time.Now())
			return platform.SendResult{}, errors.New("flaky")
		})
		s := retryWith(RetryConfig{MaxAttempts: 3, BaseBackoff: time.Second, Jitter: 0.5}, func() float64 { return 0.5 })(next)
		if _, err := s.Send(context.Background(), platform.SendRequest{}); err == nil {
			t.Fatal("Send succeeded")
		}
		if len(times) != 3 || times[1].Sub(times[0]) != 750*time.Millisecond || times[2].Sub(times[1]) != 1500*time.Millisecond {
			t.Fatalf("attempt times %v; want waits 750ms, 1.5s", times)
		}
	})
}

func TestRetryConfigDefaults(t *testing.T) {
	got := RetryConfig{}.withDefaults()
	want := RetryConfig{MaxAttempts: 5, BaseBackoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second, Jitter: 0.2, MaxRetryAfter: 5 * time.Minute}
	if got != want {
		t.Fatalf("defaults = %+v; want %+v", got, want)
	}
	got = RetryConfig{MaxAttempts: -1, BaseBackoff: time.Second, MaxBackoff: time.Millisecond, Jitter: 3}.withDefaults()
	if got.MaxAttempts != 5 || got.MaxBackoff != time.Second || got.Jitter != 1 {
		t.Fatalf("withDefaults = %+v", got)
	}
	if got := (RetryConfig{Jitter: -0.1}).withDefaults().Jitter; got != 0 {
		t.Fatalf("negative Jitter normalized to %v; want 0", got)
	}
}
