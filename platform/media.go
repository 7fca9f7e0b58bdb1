package platform

import (
	"context"
	"errors"
)

// ErrFileTooLarge is wrapped by the [Permanent] error of a download whose
// file is larger than the limit asked for, or than the platform lets a bot
// download (Telegram's Bot API: 20 MB).
var ErrFileTooLarge = errors.New("platform: file too large")

// DefaultMaxDownload is the limit, in bytes, of a download asked for with
// a limit of zero or less: 20 MiB.
const DefaultMaxDownload = 20 << 20

// Downloader is implemented by an [Adapter] that can fetch the files its
// events carry ([Event] Attachments).
//
// Download returns the bytes of att, an attachment of one of the adapter's
// events (its FileID, or its URL where the platform gives one), if the
// file has at most maxBytes bytes (zero or less means
// [DefaultMaxDownload]). A file known to be larger, from att.Size or from
// what the platform says before sending it, is refused before it is
// fetched, and one that turns out larger is refused as soon as maxBytes+1
// bytes were read: either way with a [Permanent] error wrapping
// [ErrFileTooLarge], and Download never holds more than maxBytes+1 bytes
// of it. An attachment the adapter cannot fetch (no FileID, another
// platform's) is refused with a permanent error wrapping
// [ErrInvalidMessage]. Other errors follow [Sender]'s kinds (permanent,
// retry-after, or retryable), and the end of ctx aborts the download with
// ctx's error. Download is safe for concurrent use and works whether Run
// is running or not.
type Downloader interface {
	Adapter
	Download(ctx context.Context, att Attachment, maxBytes int64) ([]byte, error)
}
