package onebot

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Segment is one part of a OneBot v11 message: a piece of text, an image, an
// @mention, a reply marker and so on. Type is the segment type ("text",
// "image", "at", "reply", "face", …) and Data its parameters.
//
// The specification makes every data value a string; some implementations
// send numbers or booleans instead, which decoding turns into their JSON text
// (123 becomes "123"), so Data is always a map of strings. Segments are plain
// values, safe to copy and to share for reading.
type Segment struct {
	Type string            `json:"type"`
	Data map[string]string `json:"data"`
}

// Text returns a text segment.
func Text(s string) Segment { return Segment{Type: "text", Data: map[string]string{"text": s}} }

// At returns an @mention segment for the QQ user userID. Send it with
// [Config.CQCodeText] and [CQ], or read it in an inbound [Message].
func At(userID int64) Segment {
	return Segment{Type: "at", Data: map[string]string{"qq": strconv.FormatInt(userID, 10)}}
}

// AtAll returns the segment that mentions every member of a group.
func AtAll() Segment { return Segment{Type: "at", Data: map[string]string{"qq": "all"}} }

// Reply returns the segment that makes a message a reply to messageID.
func Reply(messageID string) Segment {
	return Segment{Type: "reply", Data: map[string]string{"id": messageID}}
}

// Image returns an image segment whose file parameter is file: a URL the
// implementation downloads (http://, https:// or file://), the image
// itself (see [Base64]), or the file name of an image an event carried
// (an event attachment's FileID), which OneBot v11 lets a bot send again.
func Image(file string) Segment { return fileSegment("image", file) }

// ImageURL returns an image segment the implementation downloads from url
// (http://, https:// or file://). It is shorthand for Image(url).
func ImageURL(url string) Segment { return Image(url) }

// ImageBytes returns an image segment carrying the image itself, encoded as
// a base64:// file parameter. It is shorthand for Image(Base64(b)).
func ImageBytes(b []byte) Segment { return Image(Base64(b)) }

// Record returns a record (voice message) segment whose file parameter is
// file, given as for [Image]. Implementations transcode what they are
// given (MP3, WAV, OGG, …) to QQ's voice format, which some of them can do
// only with ffmpeg installed.
func Record(file string) Segment { return fileSegment("record", file) }

// Video returns a short video segment whose file parameter is file, given
// as for [Image]. Some implementations (go-cqhttp) need ffmpeg to send
// one.
func Video(file string) Segment { return fileSegment("video", file) }

// Base64 returns b as a base64:// file parameter, the form in which a
// segment carries a file's bytes.
func Base64(b []byte) string { return "base64://" + base64.StdEncoding.EncodeToString(b) }

func fileSegment(typ, file string) Segment {
	return Segment{Type: typ, Data: map[string]string{"file": file}}
}

// MarshalJSON encodes s as {"type":…,"data":{…}}, with an empty object for
// nil Data (implementations reject "data":null).
func (s Segment) MarshalJSON() ([]byte, error) {
	data := s.Data
	if data == nil {
		data = map[string]string{}
	}
	return json.Marshal(struct {
		Type string            `json:"type"`
		Data map[string]string `json:"data"`
	}{s.Type, data})
}

// UnmarshalJSON decodes a segment object. Data values that are not strings
// are kept as their JSON text; a null value becomes "".
func (s *Segment) UnmarshalJSON(b []byte) error {
	var raw struct {
		Type string                     `json:"type"`
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("onebot: segment: %w", err)
	}
	seg := Segment{Type: raw.Type, Data: make(map[string]string, len(raw.Data))}
	for k, v := range raw.Data {
		seg.Data[k] = jsonText(v)
	}
	*s = seg
	return nil
}

// jsonText returns a JSON value as text: a string's contents, null as "",
// anything else (numbers, booleans, objects) as its compact JSON.
func jsonText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) == nil {
		return buf.String()
	}
	return string(v)
}

// Message is a OneBot v11 message: a list of segments.
//
// It decodes from every form the specification allows: a CQ-code string
// (parsed with [ParseCQ]), an array of segments, or a single segment object;
// null decodes to an empty Message. It always encodes as an array of
// segments, which needs no escaping. The zero value is an empty message; a
// Message is safe to share for reading.
type Message []Segment

// Text returns the concatenated text of the message's text segments, with
// every other segment left out.
func (m Message) Text() string {
	var b strings.Builder
	for _, s := range m {
		if s.Type == "text" {
			b.WriteString(s.Data["text"])
		}
	}
	return b.String()
}

// ReplyTo returns the message ID of m's first reply segment, or "" when m is
// not a reply.
func (m Message) ReplyTo() string {
	for _, s := range m {
		if s.Type == "reply" {
			return s.Data["id"]
		}
	}
	return ""
}

// Mentions returns the "qq" parameters of m's at segments in order: user
// IDs, or "all".
func (m Message) Mentions() []string {
	var out []string
	for _, s := range m {
		if s.Type == "at" {
			out = append(out, s.Data["qq"])
		}
	}
	return out
}

var errMessageForm = errors.New("onebot: message is neither a string, an array nor a segment")

// UnmarshalJSON decodes a CQ-code string, an array of segments or one
// segment.
func (m *Message) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*m = nil
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("onebot: message: %w", err)
		}
		*m = ParseCQ(s)
		return nil
	case b[0] == '[':
		var segs []Segment
		if err := json.Unmarshal(b, &segs); err != nil {
			return fmt.Errorf("onebot: message: %w", err)
		}
		*m = segs
		return nil
	case b[0] == '{':
		var seg Segment
		if err := json.Unmarshal(b, &seg); err != nil {
			return fmt.Errorf("onebot: message: %w", err)
		}
		*m = Message{seg}
		return nil
	}
	return errMessageForm
}

// sortedKeys returns d's keys in order, so encoding is deterministic.
func sortedKeys(d map[string]string) []string {
	return slices.Sorted(maps.Keys(d))
}
