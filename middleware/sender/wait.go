package sender

import (
	"context"
	"errors"
	"time"

	"github.com/heraldbot/herald/infra/resume"
)

// ErrWouldExceedDeadline is reported when a wait (a backoff, a retry-after, a
// rate-limit token or a paused chat) cannot finish before the context's
// deadline. The wait is then not started at all, as rate.Limiter.Wait does:
// a send that cannot succeed in time fails at once instead of sleeping until
// its deadline.
var ErrWouldExceedDeadline = errors.New("sender: wait would exceed context deadline")

// sleep blocks for d or until ctx ends, whichever comes first. It returns
// ctx.Err() if ctx has ended or ends during the wait, ErrWouldExceedDeadline
// without waiting if ctx's deadline is no later than now+d, and nil after
// waiting d. A d of zero or less returns at once.
func sleep(ctx context.Context, d time.Duration) error {
	if err := canWait(ctx, d); err != nil || d <= 0 {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// canWait returns what sleep would return at once: ctx.Err() if ctx has
// ended, ErrWouldExceedDeadline if a wait of d cannot finish before ctx's
// deadline, and nil otherwise. For a send that can be resumed (see package
// resume) the deadline is its task's, which bounds its waits between
// runs, rather than its run's.
func canWait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	deadline, ok := ctx.Deadline()
	if t := resume.FromContext(ctx); t != nil {
		deadline, ok = t.Deadline()
	}
	if ok && !time.Now().Add(d).Before(deadline) {
		return ErrWouldExceedDeadline
	}
	return nil
}
