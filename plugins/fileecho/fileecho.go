// Package fileecho sends back every file a user sends — a photo, a
// document, a voice note, a video, a sticker — with its size: it shows
// media in and out, downloads within a size limit and chat actions working
// together. The bot downloads the file (showing "upload_photo" or
// "upload_document" meanwhile) and sends the bytes back, captioned with
// the file's name, kind and size. Where the platform cannot download, or
// the file is over the limit, it sends the file back by its ID with the
// size the platform reported.
package fileecho

import (
	"errors"
	"fmt"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// DefaultMaxBytes is the largest file the plugin downloads when
// Plugin.MaxBytes is zero: 10 MiB.
const DefaultMaxBytes = 10 << 20

// DefaultHeld is how many files the plugin holds at once when Plugin.Held
// is zero: 4.
const DefaultHeld = 4

// Plugin echoes files. Its zero value is ready to use; it holds no state
// once registered, so one Plugin may serve any number of engines at once.
type Plugin struct {
	// MaxBytes is the largest file downloaded and sent back as bytes;
	// larger ones go back by their ID. Zero or less means DefaultMaxBytes.
	MaxBytes int64
	// Held is how many files an engine's handlers hold at once, from
	// their download until their echo is sent, over every chat: a flood
	// of large files waits its turn rather than piling copies on the heap
	// (at most Held × MaxBytes held). Zero or less means DefaultHeld.
	Held int
}

// New returns the file echo plugin with the default limit.
func New() *Plugin { return &Plugin{} }

// Name returns "fileecho".
func (*Plugin) Name() string { return "fileecho" }

// Register adds the handler of messages carrying files to e.
func (p *Plugin) Register(e *engine.Engine) error {
	limit := p.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	held := p.Held
	if held <= 0 {
		held = DefaultHeld
	}
	room := make(chan struct{}, held) // a token per file held
	e.On(hasFile, func(c *engine.Context) error { return echo(c, limit, room) },
		engine.Description("send a photo or a file: I send it back with its size"))
	return nil
}

// hasFile accepts messages that carry a file.
func hasFile(c *engine.Context) bool {
	return c.Event().Kind == platform.EventMessage && len(c.Attachments()) > 0
}

// Caption returns the caption of a file sent back: its name if it has
// one, its kind and its size in bytes (or "size unknown" for 0 bytes
// from a platform that did not say).
func Caption(at platform.Attachment, size int64) string {
	s := fmt.Sprintf("%s, %d bytes", at.Kind, size)
	if size <= 0 {
		s = string(at.Kind) + ", size unknown"
	}
	if at.FileName != "" {
		s = at.FileName + ": " + s
	}
	return s
}

// hasCaption reports whether a file of kind can carry a caption: stickers
// and video notes cannot, on Telegram.
func hasCaption(kind platform.AttachmentKind) bool {
	return kind != platform.AttachSticker && kind != platform.AttachVideoNote
}

// echo sends each file of the message back, holding one of room's tokens
// for each from its download until it is sent.
func echo(c *engine.Context, limit int64, room chan struct{}) error {
	for _, at := range c.Attachments() {
		select {
		case room <- struct{}{}:
		case <-c.Context().Done():
			return fmt.Errorf("fileecho: waiting for room: %w", c.Context().Err())
		}
		err := echoOne(c, at, limit)
		<-room
		if err != nil {
			return err
		}
	}
	return nil
}

// echoOne sends the file at back.
func echoOne(c *engine.Context, at platform.Attachment, limit int64) error {
	action := platform.ActionUploadDocument
	if at.Kind == platform.AttachPhoto {
		action = platform.ActionUploadPhoto
	}
	_ = c.ChatAction(action) // best effort: many platforms show none
	back := platform.Attachment{Kind: at.Kind, FileName: at.FileName, MIMEType: at.MIMEType}
	size := at.Size
	data, err := c.Download(c.Context(), at, limit)
	switch {
	case err == nil:
		back.Data, size = data, int64(len(data))
	case errors.Is(err, platform.ErrUnsupported) || errors.Is(err, platform.ErrFileTooLarge) || errors.Is(err, platform.ErrInvalidMessage):
		// Back by reference, with the size the platform reported.
		back.FileID, back.URL = at.FileID, at.URL
		if back.FileID != "" {
			back.URL = ""
		}
		if back.FileID == "" && back.URL == "" {
			c.ReplyText("I cannot fetch that file, and it has no ID to send back.")
			return nil
		}
	default:
		return fmt.Errorf("fileecho: download: %w", err)
	}
	caption := Caption(at, size)
	if errors.Is(err, platform.ErrFileTooLarge) {
		caption += fmt.Sprintf(" (over the %d bytes I download)", limit)
	}
	msg := platform.OutboundMessage{ReplyToID: c.Event().MessageID, Attachments: []platform.Attachment{back}}
	if hasCaption(at.Kind) {
		msg.Attachments[0].Caption = caption
	}
	byRef := back.Data == nil
	_, err = c.Reply(msg).Wait(c.Context())
	switch {
	case byRef && errors.Is(err, platform.ErrInvalidMessage):
		// Neither fetched nor sent by reference: the platform no longer
		// keeps the file (a browser chat's store full of newer ones).
		c.ReplyText(caption + " (the chat no longer keeps it: send it again)")
	case errors.Is(err, platform.ErrUnsupported):
		// The platform cannot send this kind: the size alone.
		c.ReplyText(caption + " (I cannot send this kind of file back here)")
	case err != nil:
		return fmt.Errorf("fileecho: sending the %s back: %w", at.Kind, err)
	case !hasCaption(at.Kind):
		c.ReplyText(caption)
	}
	return nil
}
