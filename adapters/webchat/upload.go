package webchat

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
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

// upload is a file a user sent, as the adapter keeps it.
type upload struct {
	data     []byte
	fileName string
	mime     string
}

// maxUploadFiles bounds the number of files kept, whatever their sizes.
const maxUploadFiles = 10_000

// uploads keeps the files users sent, oldest forgotten first once they
// take more than max bytes together, or are more than maxUploadFiles. It
// is safe for concurrent use.
type uploads struct {
	max int

	mu    sync.Mutex
	used  int
	files map[string]upload
	order []string // FileIDs, oldest first; may name forgotten files
}

func newUploads(max int) *uploads { return &uploads{max: max, files: map[string]upload{}} }

// put keeps u under id, forgetting the oldest files to make room.
func (s *uploads) put(id string, u upload) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for (s.used+len(u.data) > s.max || len(s.files) >= maxUploadFiles) && len(s.order) > 0 {
		old := s.order[0]
		s.order = s.order[1:]
		s.used -= len(s.files[old].data)
		delete(s.files, old)
	}
	s.files[id] = u
	s.order = append(s.order, id)
	s.used += len(u.data)
}

// remove forgets the file id, the last one put (an event that was not
// queued).
func (s *uploads) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.files[id]; ok {
		s.used -= len(u.data)
		delete(s.files, id)
		// Its place in order, if not the last, is dropped when reached.
		if n := len(s.order); n > 0 && s.order[n-1] == id {
			s.order = s.order[:n-1]
		}
	}
}

// get returns the file id, if it is still kept.
func (s *uploads) get(id string) (upload, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.files[id]
	return u, ok
}

// readLimit returns the largest frame the library is to read: ReadLimit,
// or a file frame's largest size when users may send files.
func (c Config) readLimit() int64 {
	if c.NoUploads {
		return c.ReadLimit
	}
	return max(c.ReadLimit, int64(base64.StdEncoding.EncodedLen(c.MaxUpload))+uploadOverhead)
}

// readFrame reads the tab's next frame. One of at most ReadLimit bytes is
// read as it comes. A larger one (a file) waits for one of the adapter's
// upload slots before the rest of it is read, and large reports that it
// holds one, which the caller gives back with a.releaseSlot once it has
// handled the frame; waiting longer than PongWait, or past the tab's end,
// fails with errSlotWait.
func (c *conn) readFrame() (typ int, data []byte, large bool, err error) {
	typ, r, err := c.ws.NextReader()
	if err != nil {
		return 0, nil, false, err
	}
	limit := c.a.cfg.ReadLimit
	data, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil || int64(len(data)) <= limit {
		return typ, data, false, err
	}
	t := time.NewTimer(c.a.cfg.PongWait)
	defer t.Stop()
	select {
	case c.a.slots <- struct{}{}:
	case <-c.done:
		return 0, nil, false, errSlotWait
	case <-t.C:
		return 0, nil, false, errSlotWait
	}
	c.ws.SetReadDeadline(time.Now().Add(c.a.cfg.PongWait))
	rest, err := io.ReadAll(r)
	if err != nil {
		c.a.releaseSlot()
		return 0, nil, false, err
	}
	return typ, append(data, rest...), true, nil
}

// releaseSlot gives back an upload slot readFrame took.
func (a *Adapter) releaseSlot() { <-a.slots }

// overReadLimit closes a tab that sent a frame larger than ReadLimit that
// is not a file, with status 1009 as the library does for a frame over
// its own limit.
func (c *conn) overReadLimit() {
	c.a.rlog.Info("webchat: tab sent a frame over the read limit that is not a file; closing it",
		zap.String("remote", c.remote), zap.Int64("limit", c.a.cfg.ReadLimit))
	c.a.mu.Lock()
	c.a.dropLocked(c)
	c.a.mu.Unlock()
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseMessageTooBig, "frame over the read limit"),
		time.Now().Add(c.a.cfg.WriteTimeout))
	c.shut(websocket.CloseMessageTooBig, "", true)
}

// file passes a user's file to the bot, keeps it for Download, and
// echoes it to every tab of the chat, as message does for a text.
func (c *conn) file(f clientFrame) {
	a := c.a
	switch {
	case a.cfg.NoUploads:
		c.sendError(&frameError{Code: codeBadFrame, Text: "file: this chat takes no files", Ref: f.Ref})
		return
	case len(f.Content) > a.cfg.MaxUpload:
		c.sendError(&frameError{Code: codeBadFrame, Text: fmt.Sprintf("file: larger than %d bytes", a.cfg.MaxUpload), Ref: f.Ref})
		return
	}
	id := a.nextMessageID()
	t := time.Now()
	kind := platform.AttachmentKind(f.Kind)
	mt := mimeOf(platform.Attachment{Kind: kind, MIMEType: f.MIME, Data: f.Content})
	fileID := uploadPrefix + id

	a.mu.Lock()
	defer a.mu.Unlock()
	if c.notJoinedLocked(f.Ref) {
		return
	}
	ch, user := c.chat, c.user
	msg, err := marshal(wireMessage{ID: id, From: wireUser{ID: user.ID, Name: user.Name}, Time: t,
		Attachments: []wireAttachment{{Kind: f.Kind, Data: f.Content, MIME: mt, FileName: f.FileName, Caption: f.Caption}}})
	if err != nil { // unreachable: strings, bytes and a current time always encode
		a.log.Error("webchat: encoding a file message", zap.Error(err))
		return
	}
	// Kept before the event is queued: its handler may download it at
	// once.
	a.uploads.put(fileID, upload{data: f.Content, fileName: f.FileName, mime: mt})
	ev := platform.Event{
		Platform:  DefaultName,
		Kind:      platform.EventMessage,
		Chat:      ch.chat,
		From:      user,
		Text:      f.Caption,
		MessageID: id,
		Time:      t,
		Attachments: []platform.Attachment{{Kind: kind, FileID: fileID, FileName: f.FileName, MIMEType: mt,
			Size: int64(len(f.Content)), Caption: f.Caption}},
	}
	if !a.queueEventLocked(c, ev, f.Ref) {
		a.uploads.remove(fileID)
		return
	}
	a.chats.pushLocked(ch, entry{id: id, msg: msg})
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
	u, err := a.uploaded(att.FileID)
	if err != nil {
		return nil, fmt.Errorf("webchat: download: %w", err)
	}
	if int64(len(u.data)) > maxBytes {
		return nil, platform.Permanent(fmt.Errorf("webchat: download of %s: %w: %d bytes, over the limit of %d",
			att.FileID, platform.ErrFileTooLarge, len(u.data), maxBytes))
	}
	return append([]byte(nil), u.data...), nil
}

// uploaded returns the kept file id, or a permanent error wrapping
// platform.ErrInvalidMessage.
func (a *Adapter) uploaded(id string) (upload, error) {
	if !strings.HasPrefix(id, uploadPrefix) {
		return upload{}, platform.Permanent(fmt.Errorf("%w: %q names no file a user sent here", platform.ErrInvalidMessage, id))
	}
	u, ok := a.uploads.get(id)
	if !ok {
		return upload{}, platform.Permanent(fmt.Errorf("%w: file %s is no longer kept", platform.ErrInvalidMessage, id))
	}
	return u, nil
}

// withFiles returns m with every attachment sent by FileID (a file a user
// sent) given its bytes, and its name and type where m has none.
func (a *Adapter) withFiles(m platform.OutboundMessage) (platform.OutboundMessage, error) {
	var out []platform.Attachment
	for i, at := range m.Attachments {
		if at.FileID == "" {
			continue
		}
		u, err := a.uploaded(at.FileID)
		if err != nil {
			return m, fmt.Errorf("attachment %d: %w", i, err)
		}
		if out == nil {
			out = append([]platform.Attachment(nil), m.Attachments...)
		}
		at.FileID, at.Data = "", u.data
		if at.FileName == "" {
			at.FileName = u.fileName
		}
		if at.MIMEType == "" {
			at.MIMEType = u.mime
		}
		out[i] = at
	}
	if out != nil {
		m.Attachments = out
	}
	return m, nil
}

// maxUpload returns the largest file a tab may send, 0 when none.
func (a *Adapter) maxUpload() int {
	if a.cfg.NoUploads {
		return 0
	}
	return a.cfg.MaxUpload
}
