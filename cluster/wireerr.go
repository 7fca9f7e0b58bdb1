package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/heraldbot/herald/platform"
)

// wireError is an error as one member tells another: its text, its kind
// (permanent, a wait asked for) and the sentinels it matched, so that
// errors.Is and platform.IsPermanent say on the member that made a call
// what they said on the gateway that answered it. The fields are those of
// outcome's first version (error, permanent) and two more, which older
// members ignore.
type wireError struct {
	Text       string        `json:"error,omitempty"`
	Permanent  bool          `json:"permanent,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	Is         []string      `json:"is,omitempty"`
}

// sentinels are the errors a wireError carries by name.
var sentinels = []struct {
	name string
	err  error
}{
	{"unsupported", platform.ErrUnsupported},
	{"invalid_message", platform.ErrInvalidMessage},
	{"file_too_large", platform.ErrFileTooLarge},
	{"already_answered", platform.ErrAlreadyAnswered},
	{"maybe_delivered", platform.ErrMaybeDelivered},
	{"blocked", platform.ErrBlocked},
	{"would_exceed_deadline", platform.ErrWouldExceedDeadline},
	{"deadline_exceeded", context.DeadlineExceeded},
	{"canceled", context.Canceled},
	{"lease_lost", ErrLeaseLost},
	{"gateway_busy", errGatewayBusy},
}

// encodeError returns err as a wireError; a nil err gives the zero value.
func encodeError(err error) wireError {
	if err == nil {
		return wireError{}
	}
	w := wireError{Text: err.Error(), Permanent: platform.IsPermanent(err)}
	if d, ok := platform.RetryAfterOf(err); ok {
		w.RetryAfter = d
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			w.Is = append(w.Is, s.name)
		}
	}
	return w
}

// decode returns the error w stands for, nil for the zero value: one
// whose text is w's, that matches w's sentinels, and is permanent, or
// asks for a wait, as the original was. Unknown sentinel names (from a
// newer member) are ignored.
func (w wireError) decode() error {
	if w.Text == "" && !w.Permanent && w.RetryAfter == 0 && len(w.Is) == 0 {
		return nil
	}
	text := w.Text
	if text == "" {
		text = "cluster: an error without a text"
	}
	re := &remoteError{text: text, is: w.sentinelErrors()}
	if w.RetryAfter > 0 {
		// Under the error, so that its text stays the original's.
		re.wait = platform.NewRetryAfter(w.RetryAfter, nil)
	}
	var err error = re
	if w.Permanent {
		err = platform.Permanent(err)
	}
	return err
}

// sentinelErrors returns the sentinels w names.
func (w wireError) sentinelErrors() []error {
	var out []error
	for _, name := range w.Is {
		for _, s := range sentinels {
			if s.name == name {
				out = append(out, s.err)
			}
		}
	}
	return out
}

// remoteError is an error another member had: its text and the sentinels
// it matched.
type remoteError struct {
	text string
	is   []error
	wait error // the retry-after error it was, or nil
}

func (e *remoteError) Error() string { return e.text }

// Unwrap returns the wait the original asked for, if any, for
// platform.RetryAfterOf.
func (e *remoteError) Unwrap() error { return e.wait }

// Is reports whether the original error matched target.
func (e *remoteError) Is(target error) bool {
	for _, s := range e.is {
		if s == target {
			return true
		}
	}
	return false
}
