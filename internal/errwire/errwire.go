// Package errwire writes an error down as data — its text, whether it is
// permanent, the wait it asked for, and the sentinel errors it matched —
// and reads it back as an error that answers errors.Is,
// platform.IsPermanent and platform.RetryAfterOf as the original did: for
// an error one process tells another (package cluster's outcomes), or one
// kept across a restart (a dead letter).
package errwire

import (
	"context"
	"errors"
	"time"

	"github.com/heraldbot/herald/platform"
)

// Error is an error written down. Its JSON fields are "error" and
// "permanent" (the first form, which older readers know) and
// "retry_after" and "is", which they ignore.
type Error struct {
	Text       string        `json:"error,omitempty"`
	Permanent  bool          `json:"permanent,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	Is         []string      `json:"is,omitempty"`
}

// Sentinel is an error an Error carries by name.
type Sentinel struct {
	Name string
	Err  error
}

// Sentinels are the errors callers branch on that every reader knows:
// platform's and context's. A package with errors of its own appends them
// to a copy.
var Sentinels = []Sentinel{
	{"unsupported", platform.ErrUnsupported},
	{"invalid_message", platform.ErrInvalidMessage},
	{"file_too_large", platform.ErrFileTooLarge},
	{"already_answered", platform.ErrAlreadyAnswered},
	{"maybe_delivered", platform.ErrMaybeDelivered},
	{"blocked", platform.ErrBlocked},
	{"would_exceed_deadline", platform.ErrWouldExceedDeadline},
	{"deadline_exceeded", context.DeadlineExceeded},
	{"canceled", context.Canceled},
}

// Encode returns err written down, naming those of sentinels it matches;
// a nil err gives the zero Error.
func Encode(err error, sentinels []Sentinel) Error {
	if err == nil {
		return Error{}
	}
	w := Error{Text: err.Error(), Permanent: platform.IsPermanent(err)}
	if d, ok := platform.RetryAfterOf(err); ok {
		w.RetryAfter = d
	}
	for _, s := range sentinels {
		if errors.Is(err, s.Err) {
			w.Is = append(w.Is, s.Name)
		}
	}
	return w
}

// Decode returns the error w stands for, nil for the zero Error: one whose
// text is w's, that matches the sentinels w names, and is permanent, or
// asks for a wait, as the original was. Names not in sentinels (from a
// newer writer) are ignored.
func (w Error) Decode(sentinels []Sentinel) error {
	if w.Text == "" && !w.Permanent && w.RetryAfter == 0 && len(w.Is) == 0 {
		return nil
	}
	text := w.Text
	if text == "" {
		text = "an error without a text"
	}
	e := &readError{text: text}
	for _, name := range w.Is {
		for _, s := range sentinels {
			if s.Name == name {
				e.is = append(e.is, s.Err)
			}
		}
	}
	if w.RetryAfter > 0 {
		// Under the error, so that its text stays the original's.
		e.wait = platform.NewRetryAfter(w.RetryAfter, nil)
	}
	var err error = e
	if w.Permanent {
		err = platform.Permanent(err)
	}
	return err
}

// readError is an error read back: its text and the sentinels it matched.
type readError struct {
	text string
	is   []error
	wait error // the retry-after error it was, or nil
}

func (e *readError) Error() string { return e.text }

// Unwrap returns the wait the original asked for, if any, for
// platform.RetryAfterOf.
func (e *readError) Unwrap() error { return e.wait }

// Is reports whether the original error matched target.
func (e *readError) Is(target error) bool {
	for _, s := range e.is {
		if s == target {
			return true
		}
	}
	return false
}
