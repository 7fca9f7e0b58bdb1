package sender

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/platform"
)

// Retry's defaults, used for zero fields of [RetryConfig].
const (
	DefaultMaxAttempts   = 5
	DefaultBaseBackoff   = 500 * time.Millisecond
	DefaultMaxBackoff    = 30 * time.Second
	DefaultJitter        = 0.2
	DefaultMaxRetryAfter = 5 * time.Minute
)

// Reasons a [RetryError] gives for stopping, for use with errors.Is. A
// context's error ([context.Canceled], [context.DeadlineExceeded]) and
// [ErrWouldExceedDeadline] are the other reasons.
var (
	// ErrAttemptsExhausted means every attempt RetryConfig.MaxAttempts
	// allowed failed.
	ErrAttemptsExhausted = errors.New("sender: attempts exhausted")
	// ErrRetryAfterTooLong means the platform asked for a retry-after wait
	// longer than RetryConfig.MaxRetryAfter.
	ErrRetryAfterTooLong = errors.New("sender: retry-after longer than MaxRetryAfter")
)

// RetryConfig configures [Retry]. The zero value is a valid configuration:
// each zero field means its default.
type RetryConfig struct {
	// MaxAttempts is the most attempts a send gets, counting the first: 3
	// means one attempt and at most two retries. Zero or negative means
	// DefaultMaxAttempts (5). 1 means no retries, and Retry returns the
	// sender unchanged.
	MaxAttempts int

	// BaseBackoff is the wait after the first failed attempt; each further
	// failure doubles it (base, 2×base, 4×base, …) up to MaxBackoff. Zero or
	// negative means DefaultBaseBackoff (500 ms).
	BaseBackoff time.Duration

	// MaxBackoff caps the backoff. Zero or negative means DefaultMaxBackoff
	// (30 s); a value below BaseBackoff means BaseBackoff.
	MaxBackoff time.Duration

	// Jitter is the fraction by which each backoff wait is shortened at
	// random, so that senders that failed together do not retry together: a
	// backoff b becomes a uniformly random wait in [b·(1−Jitter), b], which
	// keeps MaxBackoff a true upper bound. Zero means DefaultJitter (0.2);
	// negative means no jitter; values above 1 mean 1. Retry-after waits
	// never get jitter.
	Jitter float64

	// MaxRetryAfter is the longest retry-after wait Retry accepts. When the
	// platform asks for more (Telegram has asked for hours) the send fails
	// at once with ErrRetryAfterTooLong. Zero or negative means
	// DefaultMaxRetryAfter (5 minutes): with the dispatcher's MaxLifetime
	// of 15 minutes, Telegram's usual flood waits are waited out.
	MaxRetryAfter time.Duration
}

func (c RetryConfig) withDefaults() RetryConfig {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxAttempts > math.MaxInt32 {
		c.MaxAttempts = math.MaxInt32
	}
	if c.BaseBackoff <= 0 {
		c.BaseBackoff = DefaultBaseBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.BaseBackoff {
		c.MaxBackoff = c.BaseBackoff
	}
	switch {
	case c.Jitter == 0:
		c.Jitter = DefaultJitter
	case c.Jitter < 0 || math.IsNaN(c.Jitter):
		c.Jitter = 0
	case c.Jitter > 1:
		c.Jitter = 1
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return c
}

// Retry returns a decorator that tries a failed send again.
//
// Before each attempt Retry checks the send's context and stops if it has
// ended. After a failed attempt it stops when:
//   - the error is permanent ([platform.IsPermanent]) or is a
//     [context.Canceled] from below: trying again cannot help;
//   - the send's own context has ended;
//   - MaxAttempts attempts have been made;
//   - the error carries a retry-after ([platform.RetryAfterOf]) longer than
//     MaxRetryAfter;
//   - the wait before the next attempt cannot finish before the context's
//     deadline (it gives up at once, without waiting).
//
// Otherwise it waits and tries again. A retry-after error is waited out for
// exactly the time the platform asked, never less, and counts as an attempt;
// any other error waits an exponential backoff with jitter (see
// [RetryConfig]). A [context.DeadlineExceeded] from below while the send's
// context is still live is a per-attempt timeout (see [Timeout]) and is
// retried. If the context ends during a wait, Retry returns at once. Waits
// go through the send's [platform.Progress]: for a send the engine's
// dispatcher resumes, a wait pauses the send instead of sleeping, and the
// next run carries on with the next attempt (see "Waiting without a
// worker" in the package documentation).
//
// On failure Retry returns a [*RetryError] holding the attempt count and the
// last attempt's error, which it wraps, so errors.Is, errors.As,
// platform.IsPermanent and platform.RetryAfterOf see the cause; when the
// context ended, the error also wraps the context's error. Read the count
// with [AttemptsOf]. On success the count is in the send's Progress, where
// the decorators outside Retry (Metrics, Logging, Counters) read it. An
// attempt is one call to the sender below Retry, so a rate-limit wait that
// gives up counts as one too. Do not nest Retry decorators: they would
// count in one Progress.
func Retry(cfg RetryConfig) SenderDecorator {
	return retryWith(cfg, rand.Float64)
}

// retryWith is Retry with the source of randomness for jitter given: rnd
// returns values in [0, 1). Tests pass a fixed one.
func retryWith(cfg RetryConfig, rnd func() float64) SenderDecorator {
	cfg = cfg.withDefaults()
	return func(next platform.Sender) platform.Sender {
		if cfg.MaxAttempts == 1 {
			return next
		}
		return &retrySender{next: next, cfg: cfg, rand: rnd}
	}
}

type retrySender struct {
	next platform.Sender
	cfg  RetryConfig // with its defaults
	rand func() float64
}

func (s *retrySender) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	ctx, p := platform.SendProgress(ctx)
	// What a run before this one left: an attempt it paused, the error of
	// the attempt before its backoff. Kept in p only across a pause.
	st := peekState(p)
	inAttempt, lastErr := st.inAttempt, st.lastErr
	keep := func() {
		kept := stateOf(p)
		kept.inAttempt, kept.lastErr = inAttempt, lastErr
	}
	for {
		// An attempt paused below is carried on even if ctx has ended:
		// the decorators below then give back what they hold (reserved
		// rate tokens) and report the end of ctx, as they would have
		// had it ended while they waited in place.
		if !inAttempt {
			if err := ctx.Err(); err != nil {
				return giveUp(p.Attempts, lastErr, err)
			}
			p.Attempts++
			inAttempt = true
		}
		res, err := s.next.Send(ctx, req)
		if _, paused := platform.PauseOf(err); paused {
			keep()
			return res, err // the attempt goes on in the next run
		}
		inAttempt = false
		if err == nil {
			if st.inAttempt || st.lastErr != nil {
				keep()
			}
			return res, nil
		}
		lastErr = err
		if cerr := ctx.Err(); cerr != nil {
			return giveUp(p.Attempts, err, cerr)
		}
		if platform.IsPermanent(err) || errors.Is(err, context.Canceled) {
			return giveUp(p.Attempts, err, nil)
		}
		if p.Attempts >= s.cfg.MaxAttempts {
			return giveUp(p.Attempts, err, ErrAttemptsExhausted)
		}
		d, ok := platform.RetryAfterOf(err)
		if ok {
			if d > s.cfg.MaxRetryAfter {
				return giveUp(p.Attempts, err, ErrRetryAfterTooLong)
			}
		} else {
			d = s.backoff(p.Attempts)
		}
		if werr := p.Wait(ctx, d); werr != nil {
			if _, paused := platform.PauseOf(werr); paused {
				keep()
				return platform.SendResult{}, werr // the next attempt is the next run's
			}
			return giveUp(p.Attempts, err, werr)
		}
	}
}

func giveUp(attempts int, last, reason error) (platform.SendResult, error) {
	return platform.SendResult{}, &RetryError{Attempts: attempts, Err: last, Reason: reason}
}

// backoff returns the wait after the failed attempt number attempt (1 for
// the first): BaseBackoff·2^(attempt−1), capped at MaxBackoff, shortened by
// up to Jitter of itself.
func (s *retrySender) backoff(attempt int) time.Duration {
	b := backoff.Exponential(attempt-1, s.cfg.BaseBackoff, s.cfg.MaxBackoff)
	if s.cfg.Jitter > 0 {
		b -= time.Duration(s.rand() * s.cfg.Jitter * float64(b))
	}
	return b
}

// RetryError is the error [Retry] returns when it gives up on a send.
//
// It wraps both Err and Reason: errors.Is and errors.As find the platform's
// error (and so do platform.IsPermanent and platform.RetryAfterOf), the
// context's error, and the reason sentinels.
type RetryError struct {
	// Attempts is how many times Retry called the sender below it; 0 when
	// the context had ended before the first attempt.
	Attempts int
	// Err is the last attempt's error, or nil if no attempt was made.
	Err error
	// Reason says why Retry stopped: ErrAttemptsExhausted,
	// ErrRetryAfterTooLong, ErrWouldExceedDeadline, or the context's error.
	// It is nil when Err itself cannot be retried (permanent, or cancelled
	// below Retry).
	Reason error
}

// Error returns "sender: giving up after N attempts", the reason and the
// last attempt's error.
func (e *RetryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sender: giving up after %d attempt", e.Attempts)
	if e.Attempts != 1 {
		b.WriteByte('s')
	}
	if e.Reason != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Reason.Error(), "sender: "))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the reason and the last attempt's error, leaving out nils.
func (e *RetryError) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Reason != nil {
		errs = append(errs, e.Reason)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// AttemptsOf reports how many attempts a send made, if err, or an error it
// wraps, came from [Retry]. It returns false for errors that did not pass
// through Retry; such a send made one attempt.
func AttemptsOf(err error) (int, bool) {
	var re *RetryError
	if errors.As(err, &re) {
		return re.Attempts, true
	}
	return 0, false
}
