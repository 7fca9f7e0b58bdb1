package platform

import (
	"errors"
	"fmt"
	"time"
)

// RetryAfterError is a send error with which the platform asked the caller to
// wait before trying again, such as Telegram's 429 with retry_after. Create
// one with [NewRetryAfter] and read it with [RetryAfterOf]; it survives
// wrapping with %w.
type RetryAfterError struct {
	// After is how long the platform asked to wait.
	After time.Duration
	// Err is the platform's error, or nil.
	Err error
}

// Error returns "platform: retry after D" followed by the cause, if any.
func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("platform: retry after %v", e.After)
	}
	return fmt.Sprintf("platform: retry after %v: %v", e.After, e.Err)
}

// Unwrap returns the cause.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// NewRetryAfter returns an error saying the send may be tried again after d.
// cause is the platform's own error and may be nil. A negative d is treated
// as zero.
func NewRetryAfter(d time.Duration, cause error) error {
	if d < 0 {
		d = 0
	}
	return &RetryAfterError{After: d, Err: cause}
}

// RetryAfterOf reports whether err, or any error it wraps, is a
// [RetryAfterError], and if so how long the platform asked to wait.
func RetryAfterOf(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.After, true
	}
	return 0, false
}

// ErrUnsupported is wrapped by the [Permanent] error an adapter returns for a
// request its platform cannot carry out, such as an edit
// ([OutboundMessage] EditID) on a platform without message editing.
var ErrUnsupported = errors.New("platform: not supported")

// permanentError marks an error that no retry can cure.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as permanent: sending the same request again cannot
// succeed (the user blocked the bot, the chat does not exist, the message is
// malformed), so retry middleware gives up at once. The returned error's
// message is err's and it wraps err, so errors.Is and errors.As still see
// the cause. Permanent(nil) returns nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	if IsPermanent(err) {
		return err
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or any error it wraps, was marked with
// [Permanent].
func IsPermanent(err error) bool {
	var pe *permanentError
	return errors.As(err, &pe)
}
