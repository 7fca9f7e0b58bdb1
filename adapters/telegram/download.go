package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/internal/fetch"
	"github.com/heraldbot/herald/platform"
)

// descFileTooBig is the 400 getFile answers for a file over the Bot API's
// download limit of 20 MB: "Bad Request: file is too big".
const descFileTooBig = "file is too big"

// Download fetches the file att (an attachment of one of the adapter's
// events, by its FileID) and implements platform.Downloader: getFile,
// then a GET of the file from [Config.FileEndpoint], both bound to ctx.
// maxBytes zero or less means platform.DefaultMaxDownload (20 MiB, about
// the Bot API's own limit of 20 MB).
//
// A file over maxBytes is refused with a permanent error wrapping
// platform.ErrFileTooLarge: before any request when att.Size says so,
// before the download when getFile's file_size or the download's
// Content-Length says so, and once maxBytes+1 bytes were read otherwise,
// so Download never holds more than that; Telegram's own refusal of a
// file over 20 MB ("file is too big") is that error too. An attachment
// without a FileID is refused with a permanent error wrapping
// platform.ErrInvalidMessage, as is every download without a FileEndpoint.
// Telegram's answers map as for sends (4xx permanent, 429 retry-after,
// 5xx and network failures retryable), and a download answered 4xx is
// permanent; errors never contain the token.
func (a *Adapter) Download(ctx context.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	data, err := a.download(ctx, att, maxBytes)
	return data, a.red.Error(err)
}

func (a *Adapter) download(ctx context.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("telegram: download: %w", err)
	}
	if maxBytes <= 0 {
		maxBytes = platform.DefaultMaxDownload
	}
	tooLarge := func(size int64, by string) error {
		return platform.Permanent(fmt.Errorf("telegram: download of %s: %w: %d bytes (%s), over the limit of %d",
			att.FileID, platform.ErrFileTooLarge, size, by, maxBytes))
	}
	switch {
	case att.FileID == "":
		return nil, platform.Permanent(fmt.Errorf("telegram: download: %w: the attachment has no FileID", platform.ErrInvalidMessage))
	case a.cfg.FileEndpoint == "":
		return nil, platform.Permanent(fmt.Errorf("telegram: download: %w: no FileEndpoint (APIEndpoint has no /bot%%s/ to derive it from)", platform.ErrInvalidMessage))
	case att.Size > maxBytes:
		return nil, tooLarge(att.Size, "the attachment's size")
	}
	raw, err := a.request(ctx, "getFile", tgbotapi.FileConfig{FileID: att.FileID})
	if isAPIError(err, http.StatusBadRequest, descFileTooBig) {
		return nil, platform.Permanent(fmt.Errorf("telegram: download of %s: %w: %w", att.FileID, platform.ErrFileTooLarge, err))
	}
	if err != nil {
		return nil, err
	}
	var f tgbotapi.File
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("telegram: getFile: unreadable result: %w", err)
	}
	switch {
	case f.FilePath == "":
		return nil, fmt.Errorf("telegram: getFile of %s gave no file_path", att.FileID)
	case int64(f.FileSize) > maxBytes:
		return nil, tooLarge(int64(f.FileSize), "getFile's file_size")
	}
	return a.fetchFile(ctx, f.FilePath, maxBytes, tooLarge)
}

// fetchFile downloads the file at path, of at most maxBytes bytes.
func (a *Adapter) fetchFile(ctx context.Context, path string, maxBytes int64, tooLarge fetch.TooLarge) ([]byte, error) {
	escaped := (&url.URL{Path: path}).EscapedPath()
	_, bc := a.bot(ctx)
	data, err := fetch.Get(ctx, bc, fmt.Sprintf(a.cfg.FileEndpoint, a.cfg.Token, strings.TrimPrefix(escaped, "/")), maxBytes, tooLarge)
	if err != nil {
		return nil, fmt.Errorf("telegram: download: %w", a.red.URLError(err))
	}
	return data, nil
}
