package sender

import (
	"context"
	"errors"
	"time"

	"github.com/heraldbot/herald/platform"
)

// Outcome is how a send ended, as [Observe] reports it.
type Outcome struct {
	// Request is the send's request.
	Request platform.SendRequest
	// Result is the platform's result; zero on failure.
	Result platform.SendResult
	// Err is the send's final error, nil on success.
	Err error
	// Attempts is how many attempts the send made (see [Retry]; 1 without
	// Retry, 0 when its context had ended before the first).
	Attempts int
	// DeadLettered is set when a [DeadLetters] decorator below kept the
	// failed send.
	DeadLettered bool
	// Duration is the send's whole time, from its first run's start to
	// its end: retries, backoffs and rate-limit waits included.
	Duration time.Duration
	// Queued is how long the send waited for its first run, in its
	// chat's queue (zero when its scheduler does not say:
	// platform.Progress Submitted).
	Queued time.Duration
	// Sending is the part of Duration spent in the calls of the platform
	// sender, as a [Timeout] below measures it (zero without one); the
	// rest of Duration was spent waiting for rate-limit tokens and
	// between retries.
	Sending time.Duration
}

// Kind classifies the outcome with [OutcomeOf].
func (o Outcome) Kind() string { return OutcomeOf(o.Err) }

// Observe returns a decorator that calls fn once for every send through
// it, when the send is over, with its [Outcome]. It is the building block
// of Metrics, Logging, Counters and DeadLetters, and the way to write a
// decorator of your own that records sends: fn sees each send once and
// only its end, however many attempts, waits and runs it took (a run that
// only paused, see [platform.Progress], is not an end). fn runs on the
// send's goroutine after the sender below returned, before the caller
// gets the result; keep it short, and do not keep ctx. A nil fn returns
// the sender unchanged.
//
// Placed outside [Retry], as Default places its observers, fn sees final
// outcomes; placed below it, each attempt is a send of its own.
func Observe(fn func(ctx context.Context, o Outcome)) SenderDecorator {
	return func(next platform.Sender) platform.Sender {
		if fn == nil {
			return next
		}
		return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
			ctx, p := platform.SendProgress(ctx)
			res, err := next.Send(ctx, req)
			if _, paused := platform.PauseOf(err); paused {
				return res, err
			}
			if p.Ended.IsZero() {
				p.Ended = time.Now() // once, for every observer of the send
			}
			o := Outcome{
				Request:      req,
				Result:       res,
				Err:          err,
				Attempts:     attemptsMade(p, err),
				DeadLettered: peekState(p).deadLettered,
				Duration:     p.Ended.Sub(p.Started),
				Sending:      p.Sending,
			}
			if !p.Submitted.IsZero() && p.Started.After(p.Submitted) {
				o.Queued = p.Started.Sub(p.Submitted)
			}
			fn(ctx, o)
			return res, err
		})
	}
}

// attemptsMade returns the attempts of a send that ended with err: those
// Retry counted, or one without Retry.
func attemptsMade(p *platform.Progress, err error) int {
	if err != nil {
		if n, ok := AttemptsOf(err); ok {
			return n
		}
	}
	return max(p.Attempts, 1)
}

// The outcomes [OutcomeOf] reports. They are the values of the outcome label
// of herald_sends_total and of the outcome field of Logging's lines.
const (
	OutcomeOK          = "ok"           // delivered
	OutcomeCanceled    = "canceled"     // the send's context was cancelled (a forced shutdown)
	OutcomePermanent   = "permanent"    // the platform refused for good (platform.IsPermanent)
	OutcomeRateLimited = "rate_limited" // a retry-after that could not be waited out (platform.RetryAfterOf)
	OutcomeTimeout     = "timeout"      // a deadline passed, or a wait could not finish before it
	OutcomeError       = "error"        // any other failure, after the retries ran out
)

// outcomes lists the outcome values in index order; outcomeIndex maps an
// error onto it.
var outcomes = [...]string{OutcomeOK, OutcomeCanceled, OutcomePermanent, OutcomeRateLimited, OutcomeTimeout, OutcomeError}

// OutcomeOf classifies a send's final error. The first rule that matches
// wins:
//
//	nil                                         → OutcomeOK
//	errors.Is(err, context.Canceled)            → OutcomeCanceled
//	platform.IsPermanent(err)                   → OutcomePermanent
//	platform.RetryAfterOf(err) reports true     → OutcomeRateLimited
//	errors.Is(err, context.DeadlineExceeded),
//	  or errors.Is(err, ErrWouldExceedDeadline) → OutcomeTimeout
//	anything else                               → OutcomeError
func OutcomeOf(err error) string { return outcomes[outcomeIndex(err)] }

func outcomeIndex(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		return 1
	case platform.IsPermanent(err):
		return 2
	}
	if _, ok := platform.RetryAfterOf(err); ok {
		return 3
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrWouldExceedDeadline) {
		return 4
	}
	return 5
}

// ErrWouldExceedDeadline is reported when a wait (a backoff, a
// retry-after, a rate-limit token or a paused chat) cannot finish before
// the send's deadline; it is [platform.ErrWouldExceedDeadline].
var ErrWouldExceedDeadline = platform.ErrWouldExceedDeadline

// observeAll returns one observer function that calls fns, innermost
// first: the same as Chain(Observe(fns[0]), Observe(fns[1]), …), in one
// layer instead of one per function. Nil functions are skipped; with none
// left it returns nil.
func observeAll(fns ...func(context.Context, Outcome)) func(context.Context, Outcome) {
	var live []func(context.Context, Outcome)
	for i := len(fns) - 1; i >= 0; i-- {
		if fns[i] != nil {
			live = append(live, fns[i])
		}
	}
	if len(live) == 0 {
		return nil
	}
	return func(ctx context.Context, o Outcome) {
		p := platform.ProgressOf(ctx)
		for _, fn := range live {
			fn(ctx, o)
			if p != nil {
				o.DeadLettered = peekState(p).deadLettered // as the next layer out would see it
			}
		}
	}
}
