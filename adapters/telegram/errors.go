package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/platform"
)

// Errors that end [Adapter.Run] or come from [New].
var (
	// ErrUnauthorized ends Run when Telegram refuses the token: 401
	// Unauthorized, or 404 Not Found, Telegram's answer to a token that is
	// not even well-formed.
	ErrUnauthorized = errors.New("telegram: unauthorized: the bot token is wrong or was revoked")
	// ErrConflict ends Run when getUpdates answers 409 Conflict three
	// times within a minute: another process polls with the same token,
	// or a webhook is set. (A single 409 is retried: a process that was
	// paused polls once more when it resumes, before it stops.)
	ErrConflict = errors.New("telegram: conflict: another instance is polling with this token, or a webhook is set")
	// ErrAlreadyRunning is returned by Run while another Run of the same
	// adapter is active.
	ErrAlreadyRunning = platform.ErrAlreadyRunning
	// ErrInvalidConfig is wrapped by New's errors for a bad [Config].
	ErrInvalidConfig = errors.New("telegram: invalid config")
)

// APIError is an error answer of the Bot API. The adapter's errors wrap it
// (inside [platform.Permanent] or [platform.NewRetryAfter] where that
// applies), so callers can read it with errors.As.
//
// It is a plain value: the zero value is an empty answer (code 0, no
// description) and only Error reads it; the adapter never changes an
// APIError after returning it, so it may be read from any number of
// goroutines.
type APIError struct {
	// Method is the Bot API method called, such as "sendMessage".
	Method string
	// Code is Telegram's error_code, or, where the library does not report
	// it (uploads), the HTTP status or the code implied by the description.
	Code int
	// Description is Telegram's description, such as "Forbidden: bot was
	// blocked by the user".
	Description string
	// RetryAfter is how long Telegram asked to wait (429), or zero.
	RetryAfter time.Duration
	// MigrateToChatID is the supergroup a group was upgraded to, or zero.
	MigrateToChatID int64
}

// Error returns "telegram: METHOD: CODE DESCRIPTION".
func (e *APIError) Error() string {
	return fmt.Sprintf("telegram: %s: %d %s", e.Method, e.Code, e.Description)
}

// Is reports whether e is target: a 403 Forbidden answer ("bot was blocked
// by the user", "user is deactivated", "bot was kicked from the group
// chat", "bot can't initiate conversation with a user") is
// [platform.ErrBlocked].
func (e *APIError) Is(target error) bool {
	return target == platform.ErrBlocked && e.Code == http.StatusForbidden
}

// classify maps an error of a library call to method into Herald's error
// kinds; status is the HTTP status of the response, or 0 if there was none.
//
//   - A Telegram error answer becomes an [*APIError]: a 429 (or any answer
//     with retry_after) is wrapped in [platform.NewRetryAfter] with
//     retry_after, or with the "retry after N" of the description when the
//     parameters are missing; other 4xx answers (400, 401, 403, 404, ...)
//     are [platform.Permanent]; 5xx answers stay plain, retryable errors.
//   - An answer that is not JSON (a proxy's HTML error page) is a plain,
//     retryable error naming the HTTP status.
//   - Anything else (network errors, a cancelled context) is wrapped as it
//     is and is retryable; errors.Is still finds context.Canceled.
func classify(method string, err error, status int) error {
	if err == nil {
		return nil
	}
	// The library returns *tgbotapi.Error; a value target would never
	// match it. A tgbotapi.Error value (from code wrapping it by value) is
	// read too.
	var te *tgbotapi.Error
	if !errors.As(err, &te) {
		var tv tgbotapi.Error
		if errors.As(err, &tv) {
			te = &tv
		}
	}
	if te != nil {
		ae := &APIError{
			Method:          method,
			Code:            te.Code,
			Description:     te.Message,
			RetryAfter:      time.Duration(te.RetryAfter) * time.Second,
			MigrateToChatID: te.MigrateToChatID,
		}
		if ae.Code == 0 && status >= 400 {
			ae.Code = status
		}
		if ae.Code == 0 {
			ae.Code = codeFromDescription(te.Message)
		}
		if ae.Code == 0 && ae.RetryAfter > 0 {
			ae.Code = http.StatusTooManyRequests
		}
		if ae.Code == http.StatusTooManyRequests && ae.RetryAfter == 0 {
			ae.RetryAfter = retryAfterFromDescription(te.Message)
		}
		switch {
		case ae.RetryAfter > 0:
			return platform.NewRetryAfter(ae.RetryAfter, ae)
		case ae.Code == http.StatusTooManyRequests:
			return ae // no wait given: back off as after any transient error
		case ae.Code >= 400 && ae.Code < 500:
			return platform.Permanent(ae)
		default:
			return ae
		}
	}
	var se *json.SyntaxError
	var ue *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		if status != 0 {
			return fmt.Errorf("telegram: %s: HTTP %d %s with an answer that is not Bot API JSON: %w",
				method, status, http.StatusText(status), err)
		}
		return fmt.Errorf("telegram: %s: answer is not Bot API JSON: %w", method, err)
	}
	return fmt.Errorf("telegram: %s: %w", method, err)
}

// codeFromDescription returns the error code Telegram's description starts
// with ("Forbidden: ..." is 403), or 0.
func codeFromDescription(desc string) int {
	for _, p := range []struct {
		prefix string
		code   int
	}{
		{"Bad Request", 400}, {"Unauthorized", 401}, {"Forbidden", 403}, {"Not Found", 404},
		{"Conflict", 409}, {"Too Many Requests", 429}, {"Internal Server Error", 500},
		{"Bad Gateway", 502}, {"Service Unavailable", 503}, {"Gateway Timeout", 504},
	} {
		if strings.HasPrefix(desc, p.prefix) {
			return p.code
		}
	}
	return 0
}

// retryAfterFromDescription reads N from "... retry after N" (seconds), as
// older 429 answers had no parameters. It returns 0 if there is none.
func retryAfterFromDescription(desc string) time.Duration {
	const marker = "retry after "
	i := strings.Index(strings.ToLower(desc), marker)
	if i < 0 {
		return 0
	}
	rest := desc[i+len(marker):]
	n := 0
	for n < len(rest) && n < 9 && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	secs, err := strconv.Atoi(rest[:n])
	if err != nil || secs <= 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
}

// runFailure decides what Run does after a failed getMe, deleteWebhook,
// setWebhook or getUpdates call: it returns a non-nil error to end Run
// with, or how long to wait before trying again. attempt counts the
// failures in a row before this one; jitter in [0, 1) spreads the backoff.
func runFailure(err error, attempt int, jitter float64) (time.Duration, error) {
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case http.StatusUnauthorized, http.StatusNotFound:
			return 0, fmt.Errorf("%w (%s answered %d %s)", ErrUnauthorized, ae.Method, ae.Code, ae.Description)
		case http.StatusConflict:
			return 0, fmt.Errorf("%w (%s answered %d %s)", ErrConflict, ae.Method, ae.Code, ae.Description)
		}
	}
	if d, ok := platform.RetryAfterOf(err); ok {
		return d, nil
	}
	if platform.IsPermanent(err) {
		return 0, err
	}
	return failureDelay(attempt, jitter), nil
}

// Backoff bounds after a transient failure of a Run call.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// failureDelay returns the wait after attempt failures in a row (0 for the
// first failure): an exponential delay d = minBackoff·2^attempt capped at
// maxBackoff, of which the upper half is scaled by jitter in [0, 1), so the
// result lies in [d/2, d).
func failureDelay(attempt int, jitter float64) time.Duration {
	return backoff.EqualJitter(backoff.Exponential(attempt, minBackoff, maxBackoff), jitter)
}
