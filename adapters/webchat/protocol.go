package webchat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldbot/herald/platform"
)

// Client frame types.
const (
	frameHello    = "hello"
	frameMessage  = "message"
	frameCallback = "callback"
	frameName     = "name"
	frameFile     = "file"
)

// Server frame types.
const (
	frameHistory = "history"
	frameEcho    = "echo"
	frameEdit    = "edit"
	frameDelete  = "delete"
	frameErr     = "error"
)

// Error codes of error frames; the package doc lists what each means.
const (
	codeBadJSON       = "bad_json"
	codeBadFrame      = "bad_frame"
	codeUnknownType   = "unknown_type"
	codeNotJoined     = "not_joined"
	codeAlreadyJoined = "already_joined"
	codeUnknownButton = "unknown_button"
	codeBusy          = "busy"
	codeStopping      = "stopping"
)

// Limits of the wire protocol.
const (
	maxIDLen       = 64       // chat, user and room IDs, in bytes or runes
	maxNameRunes   = 64       // display names
	maxTextBytes   = 16 << 10 // the text of a user's message
	maxDataBytes   = 256      // a callback's data
	maxMessageID   = 20       // digits of a message ID (a uint64)
	maxRefBytes    = 64       // a frame's ref
	roomPrefix     = "room:"  // prefix of group chat IDs
	defaultName    = "Guest"  // name of a user who gave none
	botUserID      = "bot"    // From.ID of the bot's messages
	errorTextLimit = 200      // bytes of detail echoed in an error frame
	maxKeyboard    = 16 << 10 // bytes of an encoded reply keyboard
	maxFileName    = 255      // runes of an uploaded file's name
	maxMIME        = 127      // bytes of an uploaded file's media type
)

// uploadKinds are the attachment kinds a tab may send a file as.
var uploadKinds = map[string]bool{
	string(platform.AttachPhoto): true, string(platform.AttachDocument): true, string(platform.AttachVideo): true,
	string(platform.AttachAudio): true, string(platform.AttachVoice): true, string(platform.AttachAnimation): true,
}

// clientFrame is one decoded frame from the page. Which fields are set
// depends on Type; decodeClientFrame has checked and normalised them.
type clientFrame struct {
	Type      string `json:"type"`
	ChatID    string `json:"chat_id"`
	UserID    string `json:"user_id"`
	Name      string `json:"name"`
	Room      string `json:"room"`
	Text      string `json:"text"`
	Data      string `json:"data"`
	MessageID string `json:"message_id"`
	Ref       string `json:"ref"`

	// A file frame's file: its kind, name, media type, bytes (base64 on
	// the wire) and caption.
	Kind     string `json:"kind"`
	FileName string `json:"file_name"`
	MIME     string `json:"mime"`
	Content  []byte `json:"content"`
	Caption  string `json:"caption"`
}

// frameError is why a client frame was refused; it becomes an error frame.
type frameError struct {
	Code string
	Text string
	Ref  string // the refused frame's ref, if it had a valid one
}

func (e *frameError) Error() string { return "webchat: " + e.Code + ": " + e.Text }

func badFrame(format string, args ...any) *frameError {
	return &frameError{Code: codeBadFrame, Text: fmt.Sprintf(format, args...)}
}

// decodeClientFrame parses and checks one text frame from the page. The
// frame must be a single JSON object whose "type" is a known frame type and
// whose fields are valid for that type (see the package doc); the result is
// normalised (a hello's name is cleaned, its chat_id dropped for a room). A
// refused frame gives a *frameError, which carries the frame's ref when it
// had a valid one.
func decodeClientFrame(data []byte) (clientFrame, error) { return decodeFrame(data, nil) }

// decodeFrame is decodeClientFrame for a frame whose file content, when
// content is not nil, was taken out of data and decoded already (see
// parseLargeFrame): *content is the frame's content.
func decodeFrame(data []byte, content *[]byte) (clientFrame, error) {
	var f clientFrame
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return clientFrame{}, &frameError{Code: codeBadJSON, Text: "a frame must be a JSON object"}
			}
			return clientFrame{}, badFrame("field %q must be a string", te.Field)
		}
		return clientFrame{}, &frameError{Code: codeBadJSON, Text: "invalid JSON: " + truncate(err.Error(), errorTextLimit)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return clientFrame{}, &frameError{Code: codeBadJSON, Text: "data after the JSON object"}
	}
	if content != nil {
		f.Content = *content
	}
	if len(f.Ref) > maxRefBytes {
		return clientFrame{}, badFrame("ref longer than %d bytes", maxRefBytes)
	}
	out, err := checkFrame(f)
	if err != nil {
		err.Ref = f.Ref
		return clientFrame{}, err
	}
	out.Ref = f.Ref
	return out, nil
}

// checkFrame checks and normalises a decoded frame by its type.
func checkFrame(f clientFrame) (clientFrame, *frameError) {
	switch f.Type {
	case frameHello:
		if err := checkHello(&f); err != nil {
			return clientFrame{}, err
		}
		return f, nil
	case frameMessage:
		if strings.TrimSpace(f.Text) == "" {
			return clientFrame{}, badFrame("message: empty text")
		}
		if len(f.Text) > maxTextBytes {
			return clientFrame{}, badFrame("message: text longer than %d bytes", maxTextBytes)
		}
		return clientFrame{Type: f.Type, Text: f.Text}, nil
	case frameCallback:
		if f.Data == "" || len(f.Data) > maxDataBytes {
			return clientFrame{}, badFrame("callback: data must be 1 to %d bytes", maxDataBytes)
		}
		if !validMessageID(f.MessageID) {
			return clientFrame{}, badFrame("callback: invalid message_id")
		}
		return clientFrame{Type: f.Type, Data: f.Data, MessageID: f.MessageID}, nil
	case frameName:
		return clientFrame{Type: f.Type, Name: cleanName(f.Name)}, nil
	case frameFile:
		return checkFile(f)
	case "":
		return clientFrame{}, badFrame("missing type")
	default:
		return clientFrame{}, &frameError{Code: codeUnknownType, Text: "unknown frame type " + quoteLimited(f.Type)}
	}
}

// checkFile checks and normalises a file frame: a known kind, bytes, a
// caption no longer than a message's text; the name is cut to its last
// path element and cleaned like a display name, and a media type that
// does not parse is dropped (the bytes tell). The size limit, which is
// the adapter's configuration, is checked by the connection.
func checkFile(f clientFrame) (clientFrame, *frameError) {
	switch {
	case !uploadKinds[f.Kind]:
		return clientFrame{}, badFrame("file: kind must be photo, document, video, audio, voice or animation")
	case len(f.Content) == 0:
		return clientFrame{}, badFrame("file: empty content")
	case len(f.Caption) > maxTextBytes:
		return clientFrame{}, badFrame("file: caption longer than %d bytes", maxTextBytes)
	}
	out := clientFrame{Type: f.Type, Kind: f.Kind, Content: f.Content, Caption: strings.TrimSpace(f.Caption)}
	out.FileName = cleanFileName(f.FileName)
	if mt, _, err := mime.ParseMediaType(f.MIME); err == nil && len(mt) <= maxMIME && strings.Count(mt, "/") == 1 {
		out.MIME = mt
	}
	return out, nil
}

// cleanFileName returns the last element of a file's path (after the last
// "/" or "\\"), cleaned as a display name is and cut to maxFileName
// characters; "." and ".." become "".
func cleanFileName(s string) string {
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		s = s[i+1:]
	}
	if name := cleanText(s, maxFileName); name != "." && name != ".." {
		return name
	}
	return ""
}

// checkHello validates and normalises a hello frame in place.
func checkHello(f *clientFrame) *frameError {
	if f.Room != "" {
		if !validRoom(f.Room) {
			return badFrame("hello: invalid room name")
		}
		f.ChatID = ""
	} else if f.ChatID != "" && !validID(f.ChatID) {
		return badFrame("hello: invalid chat_id")
	}
	if f.UserID != "" && !validID(f.UserID) {
		return badFrame("hello: invalid user_id")
	}
	f.Name = cleanName(f.Name)
	f.Text, f.Data, f.MessageID = "", "", ""
	return nil
}

// validID reports whether s is a private chat or user ID: 1 to 64 ASCII
// letters, digits, '-' or '_'.
func validID(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// validRoom reports whether s is a room name: 1 to 64 letters, digits, '-',
// '_' or '.'.
func validRoom(s string) bool {
	if s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxIDLen {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' && r != '.' {
			return false
		}
	}
	return true
}

// validChatID reports whether id names a chat this adapter can have: a
// private chat ID or "room:" and a room name.
func validChatID(id string) bool {
	if room, ok := strings.CutPrefix(id, roomPrefix); ok {
		return validRoom(room)
	}
	return validID(id)
}

// validMessageID reports whether s is a decimal message ID.
func validMessageID(s string) bool {
	if s == "" || len(s) > maxMessageID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cleanName removes control and formatting characters (which could reorder
// or hide text), trims spaces and cuts the result to 64 characters. An
// empty result stays empty; callers substitute defaultName.
func cleanName(s string) string { return cleanText(s, maxNameRunes) }

// cleanText removes control and formatting characters from s, trims
// spaces and cuts the result to max characters.
func cleanText(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.TrimSpace(s) {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		if n == max {
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func quoteLimited(s string) string { return fmt.Sprintf("%q", truncate(s, 40)) }

// wireUser is a user as the page sees it.
type wireUser struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// wireChat is a chat as the page sees it.
type wireChat struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title"`
}

// wireButton is an inline button.
type wireButton struct {
	Text string `json:"text"`
	Data string `json:"data,omitempty"`
	URL  string `json:"url,omitempty"`
}

// wireAttachment is a file of any kind: by URL, inline (Data, sent as
// base64, for files of at most largeFile bytes) or by reference (File,
// the ID of a file kept in the adapter's file store, which the page
// fetches, see serveFile, with its Size in bytes). MIME is the type of
// the data inline or by reference, for the data: URL or the fetch the
// page shows it by.
type wireAttachment struct {
	Kind     string `json:"kind"`
	URL      string `json:"url,omitempty"`
	Data     []byte `json:"data,omitempty"`
	File     string `json:"file,omitempty"`
	Size     int64  `json:"size,omitempty"`
	MIME     string `json:"mime,omitempty"`
	FileName string `json:"file_name,omitempty"`
	Caption  string `json:"caption,omitempty"`
}

// wireMessage is a message in the conversation, the bot's or a user's.
type wireMessage struct {
	ID          string           `json:"id"`
	Bot         bool             `json:"bot"`
	From        wireUser         `json:"from"`
	Text        string           `json:"text,omitempty"`
	ParseMode   string           `json:"parse_mode,omitempty"`
	ReplyTo     string           `json:"reply_to,omitempty"`
	Attachments []wireAttachment `json:"attachments,omitempty"`
	Buttons     [][]wireButton   `json:"buttons,omitempty"`
	Keyboard    *wireKeyboard    `json:"keyboard,omitempty"` // a reply keyboard the message shows or removes
	Time        time.Time        `json:"time"`
	Edited      time.Time        `json:"edited,omitzero"` // the last edit, if any
}

// wireKeyboard is a reply keyboard: rows of buttons shown under the
// page's message box, each sending its text, or, with Remove, the
// removal of the keyboard shown.
type wireKeyboard struct {
	Rows        [][]string `json:"rows,omitempty"`
	Remove      bool       `json:"remove,omitempty"`
	OneTime     bool       `json:"one_time,omitempty"`
	Placeholder string     `json:"placeholder,omitempty"`
}

// wireDelete is the message object of a delete frame.
type wireDelete struct {
	ID string `json:"id"`
}

// keptMessage is a kept bot message decoded to be edited: the fields an
// edit changes are wireMessage's, while its attachments, which an edit
// never changes, stay encoded (this field hides wireMessage's), so an edit
// of a photo does not decode and re-encode its bytes.
type keptMessage struct {
	wireMessage
	Attachments json.RawMessage `json:"attachments,omitempty"`
}

// wireEdit is the message object of an edit frame: the message's ID and
// what the edit replaced. Empty fields are left out and mean empty: no
// parse_mode is plain text, no buttons removes the message's buttons.
type wireEdit struct {
	ID        string         `json:"id"`
	Text      string         `json:"text"`
	ParseMode string         `json:"parse_mode,omitempty"`
	Buttons   [][]wireButton `json:"buttons,omitempty"`
	Edited    time.Time      `json:"edited"`
}

// historyHead is a history frame without its messages, which are spliced
// in already encoded (see newHistoryFrame).
type historyHead struct {
	Type    string   `json:"type"`
	Chat    wireChat `json:"chat"`
	User    wireUser `json:"user"`
	Bot     wireUser `json:"bot"`
	MaxText int      `json:"max_text"`
	// MaxUpload is the largest file, in bytes, a tab may send; 0 means
	// none (uploads are off).
	MaxUpload int `json:"max_upload,omitempty"`
	// Keyboard is the chat's reply keyboard, if one is up.
	Keyboard *wireKeyboard `json:"keyboard,omitempty"`
	// FileKey is the key the tab fetches the chat's files by reference
	// with, for as long as its connection is open (see serveFile).
	FileKey string `json:"file_key,omitempty"`
}

// errorFrame reports a refused frame.
type errorFrame struct {
	Type string `json:"type"`
	Code string `json:"code"`
	Text string `json:"text"`
	Ref  string `json:"ref,omitempty"`
}

// marshal returns the JSON encoding of v, like json.Marshal but leaving
// '<', '>' and '&' as they are. The page never parses frames as HTML, and
// json.Marshal's escapes (\u003c) would make a text of '<' six times its
// size in every frame and in the history.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// encodeError returns an error frame. Strings always encode, so it cannot
// fail.
func encodeError(code, text, ref string) []byte {
	b, _ := marshal(errorFrame{Type: frameErr, Code: code, Text: text, Ref: ref})
	return b
}

// encodeMessageFrame wraps an encoded message object in a frame of type typ
// ("message", "echo", with a wireEdit "edit", or with a wireDelete
// "delete").
func encodeMessageFrame(typ string, msg []byte) []byte {
	b := make([]byte, 0, len(msg)+len(typ)+24)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","message":`...)
	b = append(b, msg...)
	return append(b, '}')
}

// historyFrame is a history frame kept in pieces until a tab's writer
// writes it: its head, then the encoded message objects, oldest first and
// separated by commas, then historyTail. The messages are the chat's kept
// ones, shared, not copied (the adapter never changes an encoded message
// in place; an edit keeps a new one), so a long history sent to many tabs
// is held in memory once.
type historyFrame struct {
	head []byte   // the frame up to and including `"messages":[`
	msgs [][]byte // the message objects, oldest first
	size int      // the bytes of the whole frame
}

// historyTail ends a history frame.
var historyTail = []byte("]}")

// newHistoryFrame returns a history frame with the given encoded message
// objects, oldest first. The head holds only strings and an int, so it
// cannot fail to encode.
func newHistoryFrame(head historyHead, msgs [][]byte) *historyFrame {
	head.Type = frameHistory
	h, _ := marshal(head)
	b := append(h[:len(h)-1:len(h)-1], `,"messages":[`...) // drop the closing brace
	size := len(b) + len(historyTail)
	for i, m := range msgs {
		if i > 0 {
			size++
		}
		size += len(m)
	}
	return &historyFrame{head: b, msgs: msgs, size: size}
}

// each calls write with the frame's pieces in order, until write fails,
// and returns write's error.
func (h *historyFrame) each(write func([]byte) error) error {
	if err := write(h.head); err != nil {
		return err
	}
	for i, m := range h.msgs {
		if i > 0 {
			if err := write(comma); err != nil {
				return err
			}
		}
		if err := write(m); err != nil {
			return err
		}
	}
	return write(historyTail)
}

var comma = []byte(",")
