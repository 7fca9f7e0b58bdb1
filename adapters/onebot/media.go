package onebot

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/heraldbot/herald/platform"
)

// stickerSubType is the image sub type of a sticker: go-cqhttp's subType
// and NapCat's sub_type 1 ("表情包"), which QQ shows scaled down and files
// among the user's stickers. Implementations that do not know the
// parameter ignore it and show an ordinary image.
const stickerSubType = "1"

// fileParam returns the file parameter of a media segment for at: its URL,
// its bytes as base64://, or its FileID (a file an event carried, which
// OneBot v11 lets a bot send again by its file name). Validate has checked
// that exactly one of them is set.
func fileParam(at platform.Attachment) string {
	switch {
	case at.URL != "":
		return at.URL
	case len(at.Data) > 0:
		return Base64(at.Data)
	}
	return at.FileID
}

// mediaSegment returns the segment that carries at, the i-th attachment of
// a message and of any kind but a document (see Adapter.Sender), or an
// error wrapping ErrUnsupported for a kind OneBot v11 cannot carry.
func mediaSegment(i int, at platform.Attachment) (Segment, error) {
	file := fileParam(at)
	switch at.Kind {
	case platform.AttachPhoto:
		return Image(file), nil
	case platform.AttachSticker:
		seg := Image(file)
		seg.Data["subType"], seg.Data["sub_type"] = stickerSubType, stickerSubType
		return seg, nil
	case platform.AttachAnimation:
		// QQ plays GIFs sent as images; an MPEG-4 or WebM loop goes as a
		// video instead, which an image segment cannot carry.
		if isVideoFile(at) {
			return Video(file), nil
		}
		return Image(file), nil
	case platform.AttachVideo:
		return Video(file), nil
	case platform.AttachAudio, platform.AttachVoice:
		// QQ has one kind of audio message, the voice message: music goes
		// as one too.
		return Record(file), nil
	case platform.AttachVideoNote:
		return Segment{}, fmt.Errorf("%w: attachment %d: a video note (QQ has no round video messages; send it as a video)", ErrUnsupported, i)
	}
	return Segment{}, fmt.Errorf("%w: attachment %d: of kind %q", ErrUnsupported, i, at.Kind)
}

// videoExts are the file name extensions of video files.
var videoExts = map[string]bool{".mp4": true, ".m4v": true, ".mov": true, ".webm": true, ".mkv": true}

// isVideoFile reports whether at holds a video rather than an image, by
// its MIME type, the extension of its file name or URL, or its bytes.
func isVideoFile(at platform.Attachment) bool {
	if at.MIMEType != "" {
		return strings.HasPrefix(at.MIMEType, "video/")
	}
	if videoExts[strings.ToLower(path.Ext(at.FileName))] {
		return true
	}
	if at.URL != "" {
		if u, err := url.Parse(at.URL); err == nil && videoExts[strings.ToLower(path.Ext(u.Path))] {
			return true
		}
	}
	return len(at.Data) > 0 && strings.HasPrefix(http.DetectContentType(at.Data), "video/")
}

// documentLine returns the text line that stands for a document sent by
// URL: its name (FileName, else Caption) and its URL.
func documentLine(at platform.Attachment) string {
	name := at.FileName
	if name == "" {
		name = at.Caption
	}
	if name == "" {
		return at.URL
	}
	return name + ": " + at.URL
}

// segmentKinds maps the media segment types of received messages to the
// attachment kinds they become. "file" is not in OneBot v11 but NapCat,
// Lagrange and LLOneBot report received files with it.
var segmentKinds = map[string]platform.AttachmentKind{
	"image":  platform.AttachPhoto,
	"record": platform.AttachVoice,
	"video":  platform.AttachVideo,
	"file":   platform.AttachDocument,
}

// attachmentsOf returns the attachments of a received message, one per
// image, record, video and file segment, in order, or nil when it has
// none. See toPlatform for how each is read.
func attachmentsOf(m Message) []platform.Attachment {
	var out []platform.Attachment
	for _, s := range m {
		kind, ok := segmentKinds[s.Type]
		if !ok {
			continue
		}
		out = append(out, attachmentOf(kind, s.Data))
	}
	return out
}

// attachmentOf reads the data of a media segment of the given kind.
func attachmentOf(kind platform.AttachmentKind, d map[string]string) platform.Attachment {
	at := platform.Attachment{Kind: kind, URL: d["url"]}
	file := d["file"]
	if kind == platform.AttachPhoto && (d["subType"] == stickerSubType || d["sub_type"] == stickerSubType) {
		at.Kind = platform.AttachSticker
	}
	at.FileName = firstOf(d, "name", "file_name")
	if id := d["file_id"]; kind == platform.AttachDocument && id != "" {
		// NapCat and Lagrange name a file with "file" and identify it
		// with "file_id".
		if at.FileName == "" {
			at.FileName = file
		}
		file = id
	}
	switch {
	case strings.HasPrefix(file, "base64://"):
		// The file itself, not a name to send it again with: rare in
		// events, and too large to pass on as an ID.
	case isWebURL(file):
		if at.URL == "" {
			at.URL = file
		}
		at.FileID = file
	default:
		at.FileID = file
	}
	if n, err := strconv.ParseInt(firstOf(d, "file_size", "size"), 10, 64); err == nil && n > 0 {
		at.Size = n
	}
	return at
}

// firstOf returns the first non-empty value of d among keys, or "".
func firstOf(d map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := d[k]; v != "" {
			return v
		}
	}
	return ""
}

// isWebURL reports whether s is an http:// or https:// URL.
func isWebURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}
