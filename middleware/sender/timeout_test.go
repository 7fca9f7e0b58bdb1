package sender_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

func TestTimeoutPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first attempt hangs until its deadline; the retry must get a
		// fresh, full second of its own.
		r := &recorder{reply: func(ctx context.Context, n int, _ platform.SendRequest) error {
			if n == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}}
		s := sender.Chain(sender.Retry(noJitter(3, 100*time.Millisecond, time.Second)), sender.Timeout(time.Second))(r)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if _, err := s.Send(ctx, req("1")); err != nil {
			t.Fatalf("Send = %v", err)
		}
		calls := r.snapshot()
		if len(calls) != 2 {
			t.Fatalf("%d calls; want 2", len(calls))
		}
		for i, c := range calls {
			if !c.hasDeadline || c.deadline.Sub(c.at) != time.Second {
				t.Errorf("attempt %d had deadline %v from its start (set %v); want a full 1s", i+1, c.deadline.Sub(c.at), c.hasDeadline)
			}
		}
		if got := calls[1].at.Sub(start); got != 1100*time.Millisecond {
			t.Errorf("second attempt at %v; want 1.1s (1s timeout + 100ms backoff)", got)
		}
	})
}

func TestTimeoutExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{reply: func(ctx context.Context, _ int, _ platform.SendRequest) error {
			<-ctx.Done()
			return ctx.Err()
		}}
		start := time.Now()
		_, err := sender.Timeout(250*time.Millisecond)(r).Send(context.Background(), req("1"))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 250*time.Millisecond {
			t.Fatalf("Send = %v after %v; want DeadlineExceeded after 250ms", err, time.Since(start))
		}
	})
}

func TestTimeoutKeepsNearerDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		want, _ := ctx.Deadline()
		if _, err := sender.Timeout(time.Second)(r).Send(ctx, req("1")); err != nil {
			t.Fatal(err)
		}
		if c := r.snapshot()[0]; !c.deadline.Equal(want) {
			t.Fatalf("deadline %v; want the context's own %v", c.deadline, want)
		}
	})
}

func TestTimeoutZeroIsNoOp(t *testing.T) {
	r := &recorder{}
	for _, d := range []time.Duration{0, -time.Second} {
		if got := sender.Timeout(d)(r); got != platform.Sender(r) {
			t.Fatalf("Timeout(%v) = %T; want the sender unchanged", d, got)
		}
	}
}
