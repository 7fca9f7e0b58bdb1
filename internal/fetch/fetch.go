// Package fetch downloads a file over HTTP for an adapter's
// platform.Downloader: with a bound on its size, read no further than
// the bound, and its failures mapped onto the platform's error kinds.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldbot/herald/platform"
)

// TooLarge builds the error of a file over the limit: size bytes, as by
// says ("Content-Length", "read so far").
type TooLarge func(size int64, by string) error

// Doer sends an HTTP request, as *http.Client does.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Get fetches url with c and returns its body, of at most maxBytes bytes
// (maxBytes must be positive). A response whose Content-Length is over
// maxBytes is refused unread, and one that turns out longer is refused
// once maxBytes+1 bytes were read, both with tooLarge's error. A 429 is
// a retry-after error when it says how long to wait (Retry-After in
// seconds) and retryable otherwise, another 4xx permanent, any other
// status but 200 retryable, as are network failures; the end of ctx
// ends the download with an error wrapping ctx's. Errors carry no
// prefix: the caller adds its own (and redacts the URL if it holds a
// secret).
func Get(ctx context.Context, c Doer, url string, maxBytes int64, tooLarge TooLarge) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, platform.Permanent(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errors.Join(ctx.Err(), err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	if err := statusError(resp); err != nil {
		return nil, err
	}
	if resp.ContentLength > maxBytes {
		return nil, tooLarge(resp.ContentLength, "the download's Content-Length")
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, errors.Join(ctx.Err(), err)
	case err != nil:
		return nil, err
	case int64(len(data)) > maxBytes:
		return nil, tooLarge(int64(len(data)), "read so far")
	}
	return data, nil
}

// maxRetryAfter caps the wait a 429's Retry-After may ask for.
const maxRetryAfter = time.Hour

// statusError returns the error of a response that is not 200 OK.
func statusError(resp *http.Response) error {
	code := resp.StatusCode
	err := fmt.Errorf("HTTP %d %s", code, http.StatusText(code))
	switch {
	case code == http.StatusOK:
		return nil
	case code == http.StatusTooManyRequests:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s >= 0 {
			return platform.NewRetryAfter(min(time.Duration(s)*time.Second, maxRetryAfter), err)
		}
		return err
	case code >= 400 && code < 500:
		return platform.Permanent(err)
	}
	return err
}
