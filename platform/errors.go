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

// ErrBlocked is wrapped by the [Permanent] error an adapter returns for a
// send to a chat that no longer takes the bot's messages: the user blocked
// the bot or deleted their account, or the bot was removed from the group
// or channel (Telegram's 403 Forbidden answers). Every send to the chat
// fails so until it lets the bot back in ([EventBotUnblocked],
// [EventBotAdded]): a bot that sends on its own (a broadcast, reminders)
// takes such a chat off its list. Check it with errors.Is on a send's
// error, a Future's or a dead letter's.
var ErrBlocked = errors.New("platform: the chat does not take the bot's messages")

// ErrAlreadyRunning is what an adapter's Run (and the engine's) returns
// while another Run of it has not returned: each adapter package's
// ErrAlreadyRunning is this value, so errors.Is matches either.
var ErrAlreadyRunning = errors.New("already running")

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

// ErrMaybeDelivered is matched, with errors.Is, by a send error after which
// the message may have reached the platform although the send failed: the
// request was written and then no answer came (the connection broke, the
// attempt timed out), or the platform answered in a way that leaves the
// outcome open. Sending again may deliver the message twice.
//
// An error that does not match it means the platform surely did not take
// the message (the connection was refused, the name did not resolve, the
// request was never written, or the platform refused it): sending again
// is safe. Adapters mark their ambiguous errors with [MaybeDelivered];
// with their AvoidDuplicates setting they also mark them [Permanent], so
// the retry middleware sends them to the dead letters instead of trying
// again (at most once instead of at least once).
var ErrMaybeDelivered = errors.New("platform: the message may have been delivered")

// maybeDeliveredError marks an error with ErrMaybeDelivered.
type maybeDeliveredError struct{ err error }

func (e *maybeDeliveredError) Error() string        { return e.err.Error() }
func (e *maybeDeliveredError) Unwrap() error        { return e.err }
func (e *maybeDeliveredError) Is(target error) bool { return target == ErrMaybeDelivered }

// MaybeDelivered marks err as ambiguous: the message may have been
// delivered (see [ErrMaybeDelivered]). The returned error's message is
// err's and it wraps err. MaybeDelivered(nil) returns nil, and an error
// already matching ErrMaybeDelivered is returned as it is.
func MaybeDelivered(err error) error {
	if err == nil || errors.Is(err, ErrMaybeDelivered) {
		return err
	}
	return &maybeDeliveredError{err: err}
}
