package sender_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/middleware/sender"
)

// Observe sees each send once, with its final outcome, whether the send
// waits in place or pauses between runs; a pause is not an outcome.
func TestObserveOncePerSend(t *testing.T) {
	for _, mode := range sendModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got []sender.Outcome
				observe := sender.Observe(func(_ context.Context, o sender.Outcome) { got = append(got, o) })
				r := &recorder{reply: failFirst(2, errFlaky)}
				chain := sender.Chain(observe, sender.Retry(noJitter(3, 100*time.Millisecond, time.Second)),
					sender.RateLimit(sender.RateLimitConfig{PerChat: 1}))
				s, res := inMode(mode.resumed, chain(r))
				for range 2 {
					if _, err := s.Send(context.Background(), req("a")); err != nil {
						t.Fatal(err)
					}
				}
				checkResumed(t, res, 4)
				if len(got) != 2 {
					t.Fatalf("%d outcomes for 2 sends: %+v", len(got), got)
				}
				// The first send: three attempts, 100 ms and 200 ms backoffs,
				// each attempt a token (1/s, burst 1): attempts at 0, 1 s, 2 s.
				if o := got[0]; o.Err != nil || o.Attempts != 3 || o.Duration.Round(time.Millisecond) != 2*time.Second || o.Kind() != sender.OutcomeOK {
					t.Fatalf("first outcome %+v; want ok after 3 attempts and 2s", o)
				}
				if o := got[1]; o.Attempts != 1 || o.Duration.Round(time.Millisecond) != time.Second || o.Result.MessageID != "m4" {
					t.Fatalf("second outcome %+v; want m4 after 1 attempt waiting 1s for its token", o)
				}
			})
		})
	}
}

func TestObserveNil(t *testing.T) {
	r := &recorder{}
	if s := sender.Observe(nil)(r); s != r {
		t.Fatalf("Observe(nil) = %T; want the sender unchanged", s)
	}
}
