package onebot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldbot/herald/internal/fetch"
	"github.com/heraldbot/herald/platform"
)

var _ platform.Downloader = (*Adapter)(nil)

// Download fetches the file of att, an attachment of one of the adapter's
// events, from its URL, and implements platform.Downloader. The OneBot
// implementation reports that URL with each image, record and video
// segment (QQ's servers, or its own), and NapCat and Lagrange with file
// segments too; the GET goes through [Config.HTTPClient], bound to ctx.
// maxBytes zero or less means platform.DefaultMaxDownload (20 MiB).
//
// A file over maxBytes is refused with a permanent error wrapping
// platform.ErrFileTooLarge: before the request when att.Size says so,
// before reading when the Content-Length says so, and once maxBytes+1
// bytes were read otherwise, so Download never holds more than that. An
// attachment without a URL (one whose file the implementation keeps to
// itself, named by FileID only), or whose URL is not http or https (a
// file:// path on the implementation's machine), is refused with a
// permanent error wrapping platform.ErrInvalidMessage. A 4xx answer is
// permanent (QQ's links expire), a 429 retry-after when it says how long
// to wait, other failures retryable. Errors show the URL without its
// query, where QQ puts the link's key.
func (a *Adapter) Download(ctx context.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("onebot: download: %w", err)
	}
	if maxBytes <= 0 {
		maxBytes = platform.DefaultMaxDownload
	}
	switch {
	case att.URL == "" && att.FileID == "":
		return nil, platform.Permanent(fmt.Errorf("onebot: download: %w: the attachment names no file", platform.ErrInvalidMessage))
	case att.URL == "":
		return nil, platform.Permanent(fmt.Errorf("onebot: download of %q: %w: the implementation gave no URL for it", att.FileID, platform.ErrInvalidMessage))
	case !isWebURL(att.URL):
		return nil, platform.Permanent(fmt.Errorf("onebot: download of %s: %w: not an http or https URL", shownURL(att.URL), platform.ErrInvalidMessage))
	}
	shown := shownURL(att.URL)
	tooLarge := func(size int64, by string) error {
		return platform.Permanent(fmt.Errorf("onebot: download of %s: %w: %d bytes (%s), over the limit of %d",
			shown, platform.ErrFileTooLarge, size, by, maxBytes))
	}
	if att.Size > maxBytes {
		return nil, tooLarge(att.Size, "the attachment's size")
	}
	data, err := fetch.Get(ctx, a.cfg.HTTPClient, att.URL, maxBytes, tooLarge)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = shown
		}
		if errors.Is(err, platform.ErrFileTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("onebot: download of %s: %w", shown, a.red.Error(err))
	}
	return data, nil
}

// shownURL returns raw as errors show it: without user info, query and
// fragment.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// maxRedirects is how many redirects the default HTTP client follows.
const maxRedirects = 5

// defaultHTTPClient returns the client of a Config without HTTPClient.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{
		Transport: tr,
		Timeout:   2 * time.Minute,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			switch {
			case len(via) >= maxRedirects:
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			case req.URL.Scheme != "http" && req.URL.Scheme != "https":
				return fmt.Errorf("redirected to a %q URL", req.URL.Scheme)
			}
			return nil
		},
	}
}
