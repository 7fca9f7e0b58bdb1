package onebot

import (
	"errors"
	"fmt"
	"time"

	"github.com/heraldbot/herald/platform"
)

// unsupportedError is ErrUnsupported: this adapter's kind of
// platform.ErrUnsupported.
type unsupportedError struct{}

func (unsupportedError) Error() string { return "onebot: not supported by OneBot v11" }

// Is reports that ErrUnsupported is a platform.ErrUnsupported.
func (unsupportedError) Is(target error) bool { return target == platform.ErrUnsupported }

// Errors of the adapter. Send's errors wrap one of these (or are an
// [*ActionError]); whether the retry middleware may try again is marked with
// [platform.Permanent] as each one's doc says.
var (
	// ErrNotConnected: no connection for the target bot. Retryable: the
	// implementation may (re)connect. Send fails with it at once instead of
	// waiting for a connection.
	ErrNotConnected = errors.New("onebot: bot not connected")

	// ErrConnectionLost: the connection closed (dropped, replaced by a new
	// connection of the same bot, or shut down) while the action was
	// pending. Lost before the action frame was written, the message was
	// certainly not sent, and the error is retryable. Lost after, the
	// implementation may have sent it: the error also matches
	// [ErrMaybeDelivered] (that is, [platform.ErrMaybeDelivered]), and is
	// permanent with [Config.AvoidDuplicates].
	ErrConnectionLost = errors.New("onebot: connection lost")

	// ErrActionTimeout: no response within [Config.ActionTimeout]. It also
	// matches [ErrMaybeDelivered]: retryable, or permanent with
	// [Config.AvoidDuplicates].
	ErrActionTimeout = errors.New("onebot: no response to action")

	// ErrMaybeDelivered is [platform.ErrMaybeDelivered] itself, the
	// platform-neutral kind of a send failure after which the message may
	// have been delivered: errors.Is(err, onebot.ErrMaybeDelivered) and
	// errors.Is(err, platform.ErrMaybeDelivered) always agree, and code that
	// serves several platforms checks the latter. Send's ambiguous errors
	// match it: a failed status with a retcode other than
	// 1400/1401/1403/1404 ([*ActionError]), no response within
	// [Config.ActionTimeout] ([ErrActionTimeout]), the send's context ending
	// (a per-attempt timeout, say) after the action frame was written, and
	// the connection lost after the action frame was written
	// ([ErrConnectionLost]). They are retryable by default, and a retry may
	// post the message twice; with [Config.AvoidDuplicates] they are
	// [platform.Permanent] instead. Errors after which the frame was surely
	// not written never match it.
	ErrMaybeDelivered = platform.ErrMaybeDelivered

	// ErrAmbiguousChat: a bare chat ID ("<id>" with no self ID) was sent to
	// while several bots are connected. Permanent: use "<self_id>:<id>".
	ErrAmbiguousChat = errors.New("onebot: chat ID has no self ID and several bots are connected")

	// ErrUnsupported: the message has something OneBot v11 cannot send (a
	// document given as bytes, an edit). Permanent. It also matches
	// platform.ErrUnsupported with errors.Is.
	ErrUnsupported error = unsupportedError{}

	// ErrUnauthorized: forward mode's handshake was refused with 401 or 403
	// (a missing or wrong access token); Run returns it, since retrying
	// cannot help.
	ErrUnauthorized = errors.New("onebot: access token refused")

	// ErrAlreadyRunning: Run was called while an earlier call had not returned
	// (including one still closing its connections after its context ended).
	// It is [platform.ErrAlreadyRunning].
	ErrAlreadyRunning = platform.ErrAlreadyRunning
)

// ActionError is a response with status "failed" (or another status that
// is neither "ok" nor "async"). RetCode is the implementation's code: 1400
// bad request, 1401 unauthorized, 1403 forbidden and 1404 no such action
// mirror HTTP, and Send marks them [platform.Permanent]; other codes (100
// and up are implementation-defined) leave it open whether the action took
// effect, so the error matches [ErrMaybeDelivered] and Send leaves it
// retryable unless [Config.AvoidDuplicates] is set.
//
// Send returns it wrapped (find it with errors.As). It is a plain value,
// never changed once returned, so it is safe to share between goroutines;
// its zero value is not an error Send returns.
type ActionError struct {
	Action  string // the action, such as "send_group_msg"
	RetCode int64  // the response's retcode
	Message string // the response's msg or wording, if any
}

// Error returns "onebot: <action> failed: retcode N: <message>".
func (e *ActionError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("onebot: %s failed: retcode %d", e.Action, e.RetCode)
	}
	return fmt.Sprintf("onebot: %s failed: retcode %d: %s", e.Action, e.RetCode, e.Message)
}

// Is reports whether target is [ErrMaybeDelivered] and the retcode leaves
// the outcome open.
func (e *ActionError) Is(target error) bool {
	return target == ErrMaybeDelivered && !e.definite()
}

// definite reports whether the retcode certainly means the action did not
// take effect.
func (e *ActionError) definite() bool {
	switch e.RetCode {
	case 1400, 1401, 1403, 1404:
		return true
	}
	return false
}

// lostError is ErrConnectionLost for one action, with why the connection
// closed. written says whether the action frame had been handed to the
// connection's writer, which writes it at once: the implementation may
// then have received it, and the error matches ErrMaybeDelivered too.
type lostError struct {
	action  string
	reason  error
	written bool
}

func (e *lostError) Error() string {
	s := fmt.Sprintf("onebot: connection lost: %s: %v", e.action, e.reason)
	if e.written {
		s += " (the message may have been delivered)"
	}
	return s
}

func (e *lostError) Is(target error) bool {
	return target == ErrConnectionLost || e.written && target == ErrMaybeDelivered
}

// timeoutError is ErrActionTimeout with the action and the wait.
type timeoutError struct {
	action string
	after  time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("onebot: %s: no response within %v (the message may have been delivered)", e.action, e.after)
}

func (e *timeoutError) Is(target error) bool {
	return target == ErrActionTimeout || target == ErrMaybeDelivered
}
