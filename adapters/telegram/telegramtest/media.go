package telegramtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// MaxDownload is the largest file getFile lets a bot download, as on
// Telegram (20 MB): a larger one is answered 400 "Bad Request: file is
// too big".
const MaxDownload = 20 << 20

// storedFile is a file the server holds: one a user sent, or one the bot
// sent (uploaded, or by URL, whose bytes the server never has).
type storedFile struct {
	kind string
	name string
	mime string
	data []byte
	url  string
	path string // file_path, for getFile and the download
}

// storeFileLocked keeps f under a new file ID and file_path and returns
// the ID; s.mu must be held. f.data becomes the server's, never changed:
// a caller's bytes are cloned before.
func (s *Server) storeFileLocked(f storedFile) string {
	s.fileSeq++
	id := "file" + strconv.Itoa(s.fileSeq)
	ext := path.Ext(f.name)
	if ext == "" {
		ext = map[string]string{"photo": ".jpg", "voice": ".oga", "sticker": ".webp"}[f.kind]
	}
	f.path = f.kind + "s/file_" + strconv.Itoa(s.fileSeq) + ext
	s.files[id] = f
	s.filePaths[f.path] = id
	return id
}

// AddFile makes the server hold data as a file of kind ("photo",
// "document", "video", …) named name, as if a user had sent it, and
// returns its file ID: a bot may send it by that ID, or download it with
// getFile.
func (s *Server) AddFile(kind, name string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storeFileLocked(storedFile{kind: kind, name: name, data: bytes.Clone(data)})
}

// FileData returns the bytes of the file fileID, and whether the server
// holds them (a file the bot sent by URL has none).
func (s *Server) FileData(fileID string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[fileID]
	if !ok || f.url != "" {
		return nil, false
	}
	return bytes.Clone(f.data), true
}

// UserFile is a file a user sends with [Server.SendUserFile]. Only Kind
// and Data are needed.
type UserFile struct {
	// Kind is "photo", "document", "video", "audio", "voice",
	// "animation", "sticker" or "video_note".
	Kind string
	// Name and MIMEType are the file's name and type, as the user's
	// client gives them (Telegram gives no name for photos, voice notes,
	// stickers and video notes, and they are dropped).
	Name, MIMEType string
	// Data is the file's content.
	Data []byte
	// Caption is the message's caption (not for stickers and video
	// notes).
	Caption string
	// Width, Height and Duration describe photos, videos and audio; zero
	// means 640×480 for a photo, and not given otherwise.
	Width, Height int
	Duration      time.Duration
}

// SendUserFile makes from send f to the chat chatID, and queues the
// update for getUpdates, with the file as Telegram describes it: a photo
// in its sizes, smallest first (a thumbnail whose longer side is 90
// pixels, for a photo larger than that, then the whole; both hold f.Data),
// an animation also as a document, each with a file ID the bot can
// download with getFile or send again. It returns the update's ID.
func (s *Server) SendUserFile(chatID int64, from tgbotapi.User, f UserFile) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushLocked(s.userFileUpdateLocked(chatID, from, f))
}

// UserFileUpdate is [Server.SendUserFile] without the queueing: the server
// holds the file, and the caller delivers the update (to a webhook, say).
// Its UpdateID is 0.
func (s *Server) UserFileUpdate(chatID int64, from tgbotapi.User, f UserFile) tgbotapi.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userFileUpdateLocked(chatID, from, f)
}

func (s *Server) userFileUpdateLocked(chatID int64, from tgbotapi.User, f UserFile) tgbotapi.Update {
	msg := &tgbotapi.Message{
		MessageID: s.nextMessageIDLocked(chatID),
		From:      &from,
		Date:      int(time.Now().Unix()),
		Chat:      s.chat(chatID),
		Caption:   f.Caption,
	}
	name := f.Name
	switch f.Kind {
	case "photo", "voice", "sticker", "video_note":
		name = ""
	}
	if f.Kind == "sticker" || f.Kind == "video_note" {
		msg.Caption = ""
	}
	data := bytes.Clone(f.Data) // the server's, shared by the file and its thumbnail
	id := s.storeFileLocked(storedFile{kind: f.Kind, name: name, mime: f.MIMEType, data: data})
	secs := int(f.Duration / time.Second)
	switch f.Kind {
	case "photo":
		w, h := f.Width, f.Height
		if w == 0 || h == 0 {
			w, h = 640, 480
		}
		whole := tgbotapi.PhotoSize{FileID: id, FileUniqueID: "u" + id, Width: w, Height: h, FileSize: len(f.Data)}
		msg.Photo = []tgbotapi.PhotoSize{whole}
		if tw, th, ok := thumbnailSize(w, h); ok {
			thumb := s.storeFileLocked(storedFile{kind: f.Kind, data: data})
			msg.Photo = []tgbotapi.PhotoSize{{FileID: thumb, FileUniqueID: "u" + thumb, Width: tw, Height: th, FileSize: len(f.Data)}, whole}
		}
	default:
		setMedia(msg, f.Kind, id, name, f.MIMEType, len(f.Data), f.Width, f.Height, secs)
	}
	s.userMsgs[msgKey{chatID, msg.MessageID}] = true
	return tgbotapi.Update{Message: msg}
}

// thumbnailSize returns the size of the thumbnail Telegram makes of a w×h
// photo — its longer side 90 pixels — and false when the photo is no
// larger than that (Telegram never makes a size larger than the photo).
func thumbnailSize(w, h int) (tw, th int, ok bool) {
	const side = 90
	if max(w, h) <= side {
		return 0, 0, false
	}
	if w >= h {
		return side, max(1, side*h/w), true
	}
	return max(1, side*w/h), side, true
}

// getFile answers getFile for a file the server holds: its file_path for
// the download, or 400 "file is too big" over [MaxDownload].
func (s *Server) getFile(w http.ResponseWriter, p url.Values) {
	id := p.Get("file_id")
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	switch {
	case !ok:
		badRequest(w, "invalid file_id")
		return
	case f.url != "":
		badRequest(w, "wrong file_id or the file is temporarily unavailable")
		return
	case len(f.data) > MaxDownload:
		badRequest(w, "file is too big")
		return
	}
	writeResult(w, tgbotapi.File{FileID: id, FileUniqueID: "u" + id, FileSize: len(f.data), FilePath: f.path})
}

// serveFile answers a download, GET /file/bot<token>/<file_path>, with the
// file's bytes, as Telegram's file server does. rest is the path after
// "/file/bot". Faults match it as the method "downloadFile".
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) (hangUp bool) {
	token, filePath, ok := strings.Cut(rest, "/")
	s.mu.Lock()
	s.requests["downloadFile"]++
	s.notifyLocked()
	s.mu.Unlock()
	if !ok || token == "" || (s.token != "" && token != s.token) {
		writeError(w, http.StatusUnauthorized, "Unauthorized", nil)
		return false
	}
	if f := s.matchFault(Request{Method: "downloadFile", Params: url.Values{"file_path": {filePath}}}); f != nil {
		if f.Delay > 0 && !s.sleep(r.Context(), f.Delay) {
			return false
		}
		switch {
		case f.Drop || f.Reset:
			return true
		case f.Status != 0 || f.HTML:
			writeFault(w, *f)
			return false
		}
	}
	s.mu.Lock()
	id, ok := s.filePaths[filePath]
	f := s.files[id]
	s.mu.Unlock()
	if !ok || f.url != "" {
		writeError(w, http.StatusNotFound, "Not Found", nil)
		return false
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	_, _ = w.Write(f.data)
	return false
}

// mediaGroupKinds are the InputMedia types an album holds, and which go
// together.
var mediaGroupKinds = map[string]string{"photo": "visual", "video": "visual", "document": "document", "audio": "audio"}

// sendMediaGroup handles sendMediaGroup: 2 to 10 photos and videos, or
// documents, or audio, each by attach://name of an upload, URL or file ID,
// recorded as one message each with one MediaGroupID; the result is their
// Messages.
func (s *Server) sendMediaGroup(w http.ResponseWriter, p url.Values, files map[string]upload) {
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	var media []struct {
		Type      string `json:"type"`
		Media     string `json:"media"`
		Caption   string `json:"caption"`
		ParseMode string `json:"parse_mode"`
	}
	if json.Unmarshal([]byte(p.Get("media")), &media) != nil {
		badRequest(w, "can't parse media JSON object")
		return
	}
	if len(media) < 2 || len(media) > 10 {
		badRequest(w, "wrong number of media specified: must include 2-10 items")
		return
	}
	var opts SentMessage
	if desc := s.readSendOptions(&opts, p); desc != "" {
		badRequest(w, desc)
		return
	}
	msgs := make([]SentMessage, len(media))
	for i, m := range media {
		group, ok := mediaGroupKinds[m.Type]
		if !ok || group != mediaGroupKinds[media[0].Type] {
			badRequest(w, "wrong file type in the media group")
			return
		}
		if !validParseMode(m.ParseMode) {
			badRequest(w, "unsupported parse_mode")
			return
		}
		if utf16Len(m.Caption) > maxCaptionLen {
			badRequest(w, "message caption is too long")
			return
		}
		sm := opts
		sm.Method, sm.Kind, sm.ChatID, sm.Text, sm.ParseMode, sm.Entities = "sendMediaGroup", m.Type, chatID, m.Caption, m.ParseMode, nil
		if i > 0 {
			sm.ReplyToMessageID, sm.ReplyChatID, sm.Quote, sm.EffectID = 0, "", "", ""
		}
		if name, ok := strings.CutPrefix(m.Media, "attach://"); ok {
			f, ok := files[name]
			if !ok {
				badRequest(w, "wrong HTTP URL specified") // Telegram's words for a missing attachment
				return
			}
			sm.FileName, sm.FileData = f.name, f.data
		} else if desc := s.attachRef(&sm, m.Media, "media is empty"); desc != "" {
			badRequest(w, desc)
			return
		}
		msgs[i] = sm
	}
	s.mu.Lock()
	group := "album" + strconv.FormatInt(chatID, 10) + "-" + strconv.Itoa(s.messageIDs[chatID]+1)
	results := make([]messageJSON, len(msgs))
	for i := range msgs {
		msgs[i].MediaGroupID = group
		s.recordLocked(&msgs[i])
	}
	s.mu.Unlock()
	for i, m := range msgs {
		results[i] = s.messageResult(m)
	}
	writeResult(w, results)
}
