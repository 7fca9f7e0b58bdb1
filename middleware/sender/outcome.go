package sender

import (
	"context"
	"errors"

	"github.com/heraldbot/herald/platform"
)

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
