package sender_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

var errFlaky = errors.New("flaky: 502 Bad Gateway")

func TestRetryAfterWaitsExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{reply: failFirst(1, platform.NewRetryAfter(40*time.Millisecond, errFlaky))}
		s := sender.Retry(noJitter(5, time.Millisecond, time.Millisecond))(r)
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := s.Send(context.Background(), req("1"))
			done <- err
		}()
		time.Sleep(40*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if n := r.count(); n != 1 {
			t.Fatalf("%d calls 1ns before the retry-after ended; want 1", n)
		}
		if err := <-done; err != nil {
			t.Fatalf("Send = %v", err)
		}
		calls := r.snapshot()
		if len(calls) != 2 {
			t.Fatalf("%d calls; want 2", len(calls))
		}
		if got := calls[1].at.Sub(start); got != 40*time.Millisecond {
			t.Fatalf("second attempt after %v; want exactly 40ms", got)
		}
	})
}

func TestRetryBackoffDoublesAndCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{reply: always(errFlaky)}
		s := sender.Retry(noJitter(6, 100*time.Millisecond, 350*time.Millisecond))(r)
		_, err := s.Send(context.Background(), req("1"))
		if !errors.Is(err, errFlaky) || !errors.Is(err, sender.ErrAttemptsExhausted) {
			t.Fatalf("Send = %v; want errFlaky and ErrAttemptsExhausted", err)
		}
		if n, ok := sender.AttemptsOf(err); !ok || n != 6 {
			t.Fatalf("AttemptsOf = %d, %v; want 6, true", n, ok)
		}
		calls := r.snapshot()
		want := []time.Duration{100, 200, 350, 350, 350}
		if len(calls) != len(want)+1 {
			t.Fatalf("%d calls; want %d", len(calls), len(want)+1)
		}
		for i, w := range want {
			if got := calls[i+1].at.Sub(calls[i].at); got != w*time.Millisecond {
				t.Errorf("wait %d = %v; want %v", i+1, got, w*time.Millisecond)
			}
		}
	})
}

func TestRetryNotRetried(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		permOK bool
	}{
		{"permanent", platform.Permanent(errors.New("403 Forbidden: bot was blocked by the user")), true},
		{"wrapped permanent", fmt.Errorf("telegram: %w", platform.Permanent(errFlaky)), true},
		{"canceled below", fmt.Errorf("adapter stopped: %w", context.Canceled), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &recorder{reply: always(tt.err)}
				_, err := sender.Retry(sender.RetryConfig{})(r).Send(context.Background(), req("1"))
				if r.count() != 1 {
					t.Fatalf("%d calls; want 1", r.count())
				}
				if !errors.Is(err, tt.err) || platform.IsPermanent(err) != tt.permOK {
					t.Fatalf("Send = %v; want the cause, IsPermanent %v", err, tt.permOK)
				}
				if n, ok := sender.AttemptsOf(err); !ok || n != 1 {
					t.Fatalf("AttemptsOf = %d, %v; want 1, true", n, ok)
				}
			})
		})
	}
}

func TestRetryGivesUpAtOnce(t *testing.T) {
	tests := []struct {
		name      string
		cfg       sender.RetryConfig
		timeout   time.Duration // 0: no deadline
		err       error
		reason    error
		wantAfter time.Duration // RetryAfterOf the result; 0: none
	}{
		{"retry-after beyond MaxRetryAfter", sender.RetryConfig{}, 0,
			platform.NewRetryAfter(2*time.Hour, errFlaky), sender.ErrRetryAfterTooLong, 2 * time.Hour},
		{"retry-after beyond custom MaxRetryAfter", sender.RetryConfig{MaxRetryAfter: time.Second}, 0,
			platform.NewRetryAfter(1001*time.Millisecond, nil), sender.ErrRetryAfterTooLong, 1001 * time.Millisecond},
		{"retry-after beyond deadline", sender.RetryConfig{}, time.Second,
			platform.NewRetryAfter(5*time.Second, errFlaky), sender.ErrWouldExceedDeadline, 5 * time.Second},
		{"retry-after ending at deadline", sender.RetryConfig{}, time.Second,
			platform.NewRetryAfter(time.Second, errFlaky), sender.ErrWouldExceedDeadline, time.Second},
		{"backoff beyond deadline", noJitter(5, 2*time.Second, 2*time.Second), time.Second,
			errFlaky, sender.ErrWouldExceedDeadline, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				r := &recorder{reply: always(tt.err)}
				start := time.Now()
				_, err := sender.Retry(tt.cfg)(r).Send(ctx, req("1"))
				if d := time.Since(start); d != 0 {
					t.Fatalf("gave up after %v; want at once", d)
				}
				if r.count() != 1 {
					t.Fatalf("%d calls; want 1", r.count())
				}
				if !errors.Is(err, tt.reason) || !errors.Is(err, tt.err) {
					t.Fatalf("Send = %v; want %v wrapping %v", err, tt.reason, tt.err)
				}
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Send = %v; the context has not ended", err)
				}
				d, ok := platform.RetryAfterOf(err)
				if ok != (tt.wantAfter > 0) || d != tt.wantAfter {
					t.Fatalf("RetryAfterOf = %v, %v; want %v", d, ok, tt.wantAfter)
				}
				if n, ok := sender.AttemptsOf(err); !ok || n != 1 {
					t.Fatalf("AttemptsOf = %d, %v; want 1, true", n, ok)
				}
			})
		})
	}
}

func TestRetryCancelDuringWait(t *testing.T) {
	for _, cause := range []error{platform.NewRetryAfter(10*time.Second, errFlaky), errFlaky} {
		for _, mode := range sendModes {
			testRetryCancelDuringWait(t, cause, mode.name, mode.resumed)
		}
	}
}

func testRetryCancelDuringWait(t *testing.T, cause error, modeName string, resumed bool) {
	t.Run(cause.Error()+"/"+modeName, func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			r := &recorder{reply: always(cause)}
			go func() {
				time.Sleep(time.Second)
				cancel()
			}()
			start := time.Now()
			s, res := inMode(resumed, sender.Retry(noJitter(5, 10*time.Second, 10*time.Second))(r))
			_, err := s.Send(ctx, req("1"))
			if d := time.Since(start); d != time.Second {
				t.Fatalf("returned after %v; want 1s, when ctx was cancelled", d)
			}
			if !errors.Is(err, context.Canceled) || !errors.Is(err, errFlaky) {
				t.Fatalf("Send = %v; want context.Canceled and the cause", err)
			}
			_, ok := platform.RetryAfterOf(err)
			_, wantOK := platform.RetryAfterOf(cause)
			if ok != wantOK {
				t.Fatalf("RetryAfterOf ok = %v; want %v", ok, wantOK)
			}
			if n, _ := sender.AttemptsOf(err); n != 1 || r.count() != 1 {
				t.Fatalf("AttemptsOf = %d, calls %d; want 1, 1", n, r.count())
			}
			checkResumed(t, res, 1)
		})
	})
}

func TestRetryDeadlineEndsAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The send's own context ends during an attempt: not retried.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r := &recorder{reply: func(ctx context.Context, _ int, _ platform.SendRequest) error {
			<-ctx.Done()
			return ctx.Err()
		}}
		_, err := sender.Retry(sender.RetryConfig{})(r).Send(ctx, req("1"))
		if !errors.Is(err, context.DeadlineExceeded) || r.count() != 1 {
			t.Fatalf("Send = %v after %d calls; want DeadlineExceeded after 1", err, r.count())
		}
		if got := sender.OutcomeOf(err); got != sender.OutcomeTimeout {
			t.Fatalf("OutcomeOf = %q; want timeout", got)
		}
	})
}

func TestRetryContextEndedBeforeFirstAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &recorder{}
	_, err := sender.Retry(sender.RetryConfig{})(r).Send(ctx, req("1"))
	if !errors.Is(err, context.Canceled) || r.count() != 0 {
		t.Fatalf("Send = %v after %d calls; want Canceled after none", err, r.count())
	}
	if n, ok := sender.AttemptsOf(err); !ok || n != 0 {
		t.Fatalf("AttemptsOf = %d, %v; want 0, true", n, ok)
	}
}

func TestRetrySucceedsAndReportsAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c sender.Counters
		r := &recorder{reply: failFirst(2, errFlaky)}
		s := sender.Chain(sender.Count(&c), sender.Retry(noJitter(5, 10*time.Millisecond, time.Second)))(r)
		res, err := s.Send(context.Background(), req("1"))
		if err != nil || res.MessageID != "m3" {
			t.Fatalf("Send = %+v, %v; want m3, nil", res, err)
		}
		if got := c.Snapshot(); got.Attempts != 3 || got.Retries != 2 || got.Delivered != 1 {
			t.Fatalf("counters = %+v; want 3 attempts, 2 retried, 1 delivered", got)
		}
	})
}

func TestRetrySingleAttemptIsNoOp(t *testing.T) {
	r := &recorder{}
	if got := sender.Retry(sender.RetryConfig{MaxAttempts: 1})(r); got != platform.Sender(r) {
		t.Fatalf("Retry with MaxAttempts 1 = %T; want the sender unchanged", got)
	}
}

func TestRetryErrorMessage(t *testing.T) {
	tests := []struct {
		err  *sender.RetryError
		want string
	}{
		{&sender.RetryError{Attempts: 3, Err: errFlaky, Reason: sender.ErrAttemptsExhausted},
			"sender: giving up after 3 attempts: attempts exhausted: flaky: 502 Bad Gateway"},
		{&sender.RetryError{Attempts: 1, Err: errFlaky},
			"sender: giving up after 1 attempt: flaky: 502 Bad Gateway"},
		{&sender.RetryError{Attempts: 0, Reason: context.Canceled},
			"sender: giving up after 0 attempts: context canceled"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q; want %q", got, tt.want)
		}
	}
	if _, ok := sender.AttemptsOf(errFlaky); ok {
		t.Error("AttemptsOf reported a plain error")
	}
	wrapped := fmt.Errorf("reply: %w", &sender.RetryError{Attempts: 4, Err: errFlaky})
	if n, ok := sender.AttemptsOf(wrapped); !ok || n != 4 {
		t.Errorf("AttemptsOf(wrapped) = %d, %v; want 4, true", n, ok)
	}
}

func TestOutcomeOf(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, sender.OutcomeOK},
		{errFlaky, sender.OutcomeError},
		{&sender.RetryError{Attempts: 1, Err: errFlaky, Reason: context.Canceled}, sender.OutcomeCanceled},
		{platform.Permanent(errFlaky), sender.OutcomePermanent},
		{&sender.RetryError{Attempts: 1, Err: platform.NewRetryAfter(time.Hour, nil), Reason: sender.ErrRetryAfterTooLong}, sender.OutcomeRateLimited},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), sender.OutcomeTimeout},
		{sender.ErrWouldExceedDeadline, sender.OutcomeTimeout},
	}
	for _, tt := range tests {
		if got := sender.OutcomeOf(tt.err); got != tt.want {
			t.Errorf("OutcomeOf(%v) = %q; want %q", tt.err, got, tt.want)
		}
	}
}
