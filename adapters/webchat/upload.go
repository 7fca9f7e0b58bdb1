package webchat

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// uploadPrefix starts the FileID of a file a user sent: "upload-" and the
// ID of the message that carried it.
const uploadPrefix = "upload-"

// uploadOverhead is what a file frame may hold besides the file's base64:
// its other fields, the caption escaped at worst.
const uploadOverhead = 128 << 10

// errSlotWait ends a tab's connection when its file waited too long for
// an upload slot.
var errSlotWait = errors.New("webchat: a file waited too long for an upload slot")

// readLimit returns the largest frame the library is to read: ReadLimit,
// or a file frame's largest size when users may send files.
func (c Config) readLimit() int64 {
	if c.NoUploads {
		return c.ReadLimit
	}
	return max(c.ReadLimit, int64(base64.StdEncoding.EncodedLen(c.MaxUpload))+uploadOverhead)
}

// inFrame is a frame read from a tab.
type inFrame struct {
	typ  int
	data []byte // a frame of at most ReadLimit bytes
	// tooBig is a frame over ReadLimit that cannot be a file (a binary
	// one); the rest of it is unread.
	tooBig bool

	// A frame over ReadLimit (a file), parsed as it came (see
	// parseLargeFrame). It holds an upload slot, which the caller gives
	// back with a.releaseSlot, and room in the file store, up, which
	// holds the file's bytes and which the caller commits or releases.
	large  bool
	frame  clientFrame
	over   bool  // the file is larger than MaxUpload
	perr   error // why the frame was refused, nil if it was not
	unread bool  // the refused frame was not read to its end
	up     *reservation
}

// readFrame reads the tab's next frame. One of at most ReadLimit bytes is
// read as it comes. A larger text frame (a file) first waits for one of
// the adapter's upload slots and then for room for the largest file in
// the file store, both within PongWait (or the tab's end), failing with
// errSlotWait or errFileWait; it is then parsed as it arrives, its file
// decoded into that room, while each read must bring data within
// UploadStall and the whole frame arrive within PongWait. An error is
// the connection's: a read failed, the tab stalled, or the library
// refused a frame over its limit (websocket.ErrReadLimit).
func (c *conn) readFrame() (inFrame, error) {
	typ, r, err := c.ws.NextReader()
	if err != nil {
		return inFrame{}, err
	}
	cfg := &c.a.cfg
	limit := cfg.ReadLimit
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil || int64(len(data)) <= limit {
		return inFrame{typ: typ, data: data}, err
	}
	if typ != websocket.TextMessage {
		return inFrame{typ: typ, tooBig: true}, nil
	}
	t := time.NewTimer(cfg.PongWait)
	defer t.Stop()
	select {
	case c.a.slots <- struct{}{}:
	case <-c.done:
		return inFrame{}, errSlotWait
	case <-t.C:
		return inFrame{}, errSlotWait
	}
	up, err := c.a.files.reserve(int64(cfg.MaxUpload), c.done, t.C)
	if err != nil {
		c.a.releaseSlot()
		return inFrame{}, err
	}
	fr := &fileReader{c: c, r: r, end: time.Now().Add(cfg.PongWait)}
	sink := &contentSink{buf: up.buf, limit: cfg.MaxUpload}
	in := inFrame{typ: typ, large: true, up: up}
	in.frame, in.over, in.perr = parseLargeFrame(io.MultiReader(bytes.NewReader(data), fr), sink, uploadOverhead)
	c.fileDeadline = time.Time{}
	if fr.err != nil { // the connection's failure, not the frame's
		up.release()
		c.a.releaseSlot()
		return inFrame{}, fr.err
	}
	in.unread = !fr.eof
	return in, nil
}

// fileReader reads the rest of a frame over ReadLimit, giving each read
// UploadStall to bring data, and all of them together until end. It
// notes the first error of the connection, and whether the frame was
// read to its end.
type fileReader struct {
	c   *conn
	r   io.Reader
	end time.Time
	err error
	eof bool
}

func (f *fileReader) Read(p []byte) (int, error) {
	c := f.c
	c.fileDeadline = time.Now().Add(c.a.cfg.UploadStall)
	if f.end.Before(c.fileDeadline) {
		c.fileDeadline = f.end
	}
	c.ws.SetReadDeadline(c.fileDeadline)
	n, err := f.r.Read(p)
	switch {
	case err == io.EOF:
		f.eof = true
	case err != nil && f.err == nil:
		f.err = err
	}
	return n, err
}

// releaseSlot gives back an upload slot readFrame took.
func (a *Adapter) releaseSlot() { <-a.slots }

// overReadLimit closes a tab that sent a frame larger than ReadLimit that
// is not a file, with status 1009 as the library does for a frame over
// its own limit. When the rest of the frame is unread, it discards what
// the tab still sends for a moment, so that closing the socket does not
// reset the connection and lose the close frame.
func (c *conn) overReadLimit(unread bool) {
	c.a.rlog.Info("webchat: tab sent a frame over the read limit that is not a file; closing it",
		zap.String("remote", c.remote), zap.Int64("limit", c.a.cfg.ReadLimit))
	c.a.mu.Lock()
	c.a.dropLocked(c)
	c.a.mu.Unlock()
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseMessageTooBig, "frame over the read limit"),
		time.Now().Add(c.a.cfg.WriteTimeout))
	if unread {
		c.linger()
	}
	c.shut(websocket.CloseMessageTooBig, "", true)
}

// file passes a user's file to the bot, keeps it for Download, and
// echoes it to every tab of the chat, as message does for a text. up,
// if not nil, is the room in the file store that f's content was read
// into (a frame over ReadLimit), and over says the file was larger than
// MaxUpload. A file of at most largeFile bytes is echoed inline, a
// larger one by reference.
func (c *conn) file(f clientFrame, up *reservation, over bool) {
	a := c.a
	switch {
	case a.cfg.NoUploads:
		c.sendError(&frameError{Code: codeBadFrame, Text: "file: this chat takes no files", Ref: f.Ref})
		return
	case over || len(f.Content) > a.cfg.MaxUpload:
		c.sendError(&frameError{Code: codeBadFrame, Text: fmt.Sprintf("file: larger than %d bytes", a.cfg.MaxUpload), Ref: f.Ref})
		return
	}
	a.mu.Lock()
	if c.notJoinedLocked(f.Ref) {
		a.mu.Unlock()
		return
	}
	ch, user := c.chat, c.user
	a.mu.Unlock()

	id := a.nextMessageID()
	t := time.Now()
	kind := platform.AttachmentKind(f.Kind)
	mt := mimeOf(platform.Attachment{Kind: kind, MIMEType: f.MIME, Data: f.Content})
	fileID := uploadPrefix + id
	n := len(f.Content)
	// Kept before the event is queued: its handler may download it at
	// once. After this, f.Content belongs to the store.
	var kept keptUpload
	if up != nil {
		kept = a.files.commitUpload(up, n, fileID, f.FileName, mt, ch.chat.ID)
	} else {
		var ok bool
		if kept, ok = a.files.putUpload(f.Content, fileID, f.FileName, mt, ch.chat.ID); !ok {
			a.rlog.Warn("webchat: no room in the file store for a user's file; refused it", zap.Int("upload_bytes", a.cfg.UploadBytes))
			c.sendError(&frameError{Code: codeBusy, Text: "the bot is busy with other files; your file was not delivered, try again", Ref: f.Ref})
			return
		}
	}
	wa := wireAttachment{Kind: f.Kind, Data: kept.inline, File: kept.ref, MIME: mt, FileName: f.FileName, Caption: f.Caption}
	if kept.ref != "" {
		wa.Size = int64(n)
	}
	msg, err := marshal(wireMessage{ID: id, From: wireUser{ID: user.ID, Name: user.Name}, Time: t, Attachments: []wireAttachment{wa}})
	if err != nil { // unreachable: strings, bytes and a current time always encode
		a.files.removeUpload(fileID)
		a.log.Error("webchat: encoding a file message", zap.Error(err))
		return
	}
	ev := platform.Event{
		Platform:  DefaultName,
		Kind:      platform.EventMessage,
		Chat:      ch.chat,
		From:      user,
		Text:      f.Caption,
		MessageID: id,
		Time:      t,
		Attachments: []platform.Attachment{{Kind: kind, FileID: fileID, FileName: f.FileName, MIMEType: mt,
			Size: int64(n), Caption: f.Caption}},
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.queueEventLocked(c, ev, f.Ref) {
		a.files.removeUpload(fileID)
		return
	}
	e := entry{id: id, msg: msg}
	if kept.ref != "" {
		e.files = []string{kept.ref}
	}
	a.chats.pushLocked(ch, e)
	a.fanoutLocked(ch, encodeMessageFrame(frameEcho, msg))
}

var _ platform.Downloader = (*Adapter)(nil)

// Download returns the bytes of a file a user sent from the page (an
// attachment of one of the adapter's events, by its FileID), and
// implements platform.Downloader. maxBytes zero or less means
// platform.DefaultMaxDownload. A file over maxBytes is refused with a
// permanent error wrapping platform.ErrFileTooLarge; an attachment that
// names no such file (none, another platform's, or one the adapter has
// forgotten: see [Config.UploadBytes]) with a permanent error wrapping
// platform.ErrInvalidMessage. The bytes are a copy.
func (a *Adapter) Download(ctx context.Context, att platform.Attachment, maxBytes int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("webchat: download: %w", err)
	}
	if maxBytes <= 0 {
		maxBytes = platform.DefaultMaxDownload
	}
	f, err := a.uploaded(att.FileID)
	if err != nil {
		return nil, fmt.Errorf("webchat: download: %w", err)
	}
	defer a.files.unpin(f)
	if f.size > maxBytes {
		return nil, platform.Permanent(fmt.Errorf("webchat: download of %s: %w: %d bytes, over the limit of %d",
			att.FileID, platform.ErrFileTooLarge, f.size, maxBytes))
	}
	return f.read()
}

// uploaded returns the kept file id, pinned (the caller unpins it), or a
// permanent error wrapping platform.ErrInvalidMessage.
func (a *Adapter) uploaded(id string) (*storedFile, error) {
	if !strings.HasPrefix(id, uploadPrefix) {
		return nil, platform.Permanent(fmt.Errorf("%w: %q names no file a user sent here", platform.ErrInvalidMessage, id))
	}
	f, err := a.files.upload(id)
	if err != nil {
		return nil, platform.Permanent(err)
	}
	return f, nil
}

// wireAttachments converts the validated attachments of a bot message to
// chatID for the page: a file sent as Data of at most largeFile bytes,
// or by the FileID of such a file a user sent, goes inline; a larger one
// is kept in the file store (once per content) and goes by reference.
// It returns the references it made, which the caller revokes if the
// message is not sent, and fails with the file store's errors (see
// fileStore.share) or, for a FileID that names no kept file, with a
// permanent error wrapping platform.ErrInvalidMessage.
func (a *Adapter) wireAttachments(chatID string, atts []platform.Attachment) ([]wireAttachment, []string, error) {
	var (
		out  []wireAttachment
		refs []string
	)
	fail := func(i int, err error) ([]wireAttachment, []string, error) {
		a.files.revoke(refs...)
		return nil, nil, fmt.Errorf("attachment %d: %w", i, err)
	}
	for i, at := range atts {
		wa := wireAttachment{Kind: string(at.Kind), URL: at.URL, FileName: at.FileName, Caption: at.Caption}
		switch {
		case at.FileID != "":
			f, err := a.uploaded(at.FileID)
			if err != nil {
				return fail(i, err)
			}
			if wa.FileName == "" {
				wa.FileName = f.fileName
			}
			wa.MIME = f.mime
			if mt, _, err := mime.ParseMediaType(at.MIMEType); err == nil && strings.Count(mt, "/") == 1 {
				wa.MIME = mt
			}
			if f.size <= largeFile {
				wa.Data = f.data // small files are on the heap, and never change
			} else if wa.File = a.files.ref(f, chatID, wa.FileName, wa.MIME); wa.File != "" {
				wa.Size = f.size
				refs = append(refs, wa.File)
			}
			a.files.unpin(f)
			if wa.Data == nil && wa.File == "" {
				return fail(i, platform.Permanent(fmt.Errorf("%w: file %s is no longer kept", platform.ErrInvalidMessage, at.FileID)))
			}
		case len(at.Data) > largeFile:
			wa.MIME = mimeOf(at)
			ref, err := a.files.share(at.Data, chatID, at.FileName, wa.MIME)
			if err != nil {
				return fail(i, err)
			}
			wa.File, wa.Size = ref, int64(len(at.Data))
			refs = append(refs, ref)
		case len(at.Data) > 0:
			wa.Data, wa.MIME = at.Data, mimeOf(at)
		}
		out = append(out, wa)
	}
	return out, refs, nil
}

// maxUpload returns the largest file a tab may send, 0 when none.
func (a *Adapter) maxUpload() int {
	if a.cfg.NoUploads {
		return 0
	}
	return a.cfg.MaxUpload
}
