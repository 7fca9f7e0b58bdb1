package sender_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// With Retry below RateLimit, a send pauses inside RateLimit's call to the
// sender below; resumed, it must not wait for and spend tokens again: one
// token per send, as in place.
func TestRateLimitAboveRetry(t *testing.T) {
	for _, mode := range sendModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &recorder{reply: failFirst(2, errFlaky)}
				limited := sender.RateLimit(sender.RateLimitConfig{PerChat: 1})
				s, res := inMode(mode.resumed, sender.Chain(limited, sender.Retry(noJitter(3, 100*time.Millisecond, time.Second)))(r))
				start := time.Now()
				if _, err := s.Send(context.Background(), req("a")); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != 300*time.Millisecond || r.count() != 3 {
					t.Fatalf("took %v, %d calls; want 300ms (two backoffs), 3 calls", took, r.count())
				}
				checkResumed(t, res, 2)
			})
		})
	}
}

// A send paused in RateLimit for a token, woken early because its context
// ended (ForceClose), gives the token back, and Retry reports the attempt
// it was making with RateLimit's error, as in place.
func TestRateLimitPausedThenCancelledGivesTokenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		limited := sender.RateLimit(sender.RateLimitConfig{Global: rate.Every(time.Second), GlobalBurst: 1})(r)
		s := sender.Retry(noJitter(3, 100*time.Millisecond, time.Second))(limited)
		if _, err := limited.Send(context.Background(), req("x")); err != nil {
			t.Fatal(err) // takes the only token
		}
		ctx, cancel := context.WithCancel(context.Background())
		rctx := platform.WithProgress(ctx, platform.NewProgress(time.Now(), time.Time{}))
		if _, err := s.Send(rctx, req("a")); !isPause(err) {
			t.Fatalf("first run = %v; want a pause for the token", err)
		}
		cancel()
		_, err := s.Send(rctx, req("a"))
		if n, _ := sender.AttemptsOf(err); n != 1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("run after cancel = %v (%d attempts); want Canceled after 1 attempt", err, n)
		}
		start := time.Now()
		if _, err := limited.Send(context.Background(), req("y")); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("next send waited %v; want 1s (the token given back), not 2s", waited)
		}
		if r.count() != 2 {
			t.Fatalf("%d calls; want 2", r.count())
		}
	})
}

func isPause(err error) bool {
	_, ok := platform.PauseOf(err)
	return ok
}
