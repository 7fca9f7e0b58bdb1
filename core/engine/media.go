package engine

import (
	"context"
	"fmt"

	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Attachments returns the files the event's message carries, in the
// platform's order (see platform.Attachment): photos with their sizes,
// documents, videos, voice notes and the rest; nil when it has none. The
// slice is the event's: do not change it.
func (c *Context) Attachments() []platform.Attachment { return c.ev.event.Attachments }

// Download fetches the file att, one of the attachments of an event of
// this Context's platform (the handler's own, or one Next returned), if
// it has at most maxBytes bytes (zero or less means
// platform.DefaultMaxDownload, 20 MiB). A file over the limit is refused
// before it is fetched whole (before any byte of it, when its size is
// known), with a permanent error wrapping platform.ErrFileTooLarge.
//
// It returns a permanent error wrapping platform.ErrUnsupported on a
// platform whose adapter cannot fetch files (it is no
// platform.Downloader), ctx's error (possibly wrapped) when ctx ends
// first, and otherwise the adapter's error: see platform.Downloader.
// Downloads do not go through the sender chain: they are not retried;
// check with platform.IsPermanent whether trying again may help.
func (c *Context) Download(ctx context.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	name := c.ev.event.Platform
	if _, ok := c.ev.e.adapter(name).(platform.Downloader); !ok {
		return nil, platform.Permanent(fmt.Errorf("engine: downloading a file on %s: %w", name, platform.ErrUnsupported))
	}
	return c.ev.e.download(ctx, name, att, maxBytes)
}

// Delete queues the deletion of the message messageID (the bot's own, or,
// where the platform lets it, a user's) from the event's chat: it is
// shorthand for Reply(platform.DeleteMessage(messageID)), with Reply's
// guarantees. It is made after every send queued before it for the chat,
// and the Future is always resolved: with a result naming the deleted
// message, or an error — a permanent one wrapping platform.ErrUnsupported
// on a platform that cannot delete messages, or wrapping
// platform.ErrInvalidMessage for an empty messageID.
func (c *Context) Delete(messageID string) *future.Future[platform.SendResult] {
	if messageID == "" {
		return future.Resolved(platform.SendResult{}, platform.Permanent(fmt.Errorf("%w: Delete without a message ID", platform.ErrInvalidMessage)))
	}
	return c.Reply(platform.DeleteMessage(messageID))
}
