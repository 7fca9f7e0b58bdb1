package platform

import (
	"errors"
	"fmt"
	"time"
)

// ParseMode says how a platform should read an [OutboundMessage]'s text.
type ParseMode string

// The parse modes. Adapters of platforms without rich text send the text as
// it is.
const (
	ParsePlain    ParseMode = ""         // plain text, shown as written
	ParseMarkdown ParseMode = "Markdown" // Markdown markup
	ParseHTML     ParseMode = "HTML"     // HTML markup
)

// AttachmentKind says what an [Attachment] is.
type AttachmentKind string

// The kinds of attachment. An adapter whose platform cannot send a kind
// refuses a message holding one with a [Permanent] error wrapping
// [ErrUnsupported].
const (
	AttachPhoto     AttachmentKind = "photo"
	AttachDocument  AttachmentKind = "document"   // any file, shown as a file
	AttachVideo     AttachmentKind = "video"      // a video, played in the chat
	AttachAudio     AttachmentKind = "audio"      // music, shown with a player
	AttachVoice     AttachmentKind = "voice"      // a voice note (Telegram: OGG/Opus)
	AttachAnimation AttachmentKind = "animation"  // a GIF or a silent MPEG-4 loop
	AttachSticker   AttachmentKind = "sticker"    // a sticker; it has no caption
	AttachVideoNote AttachmentKind = "video_note" // a round video message; no caption
)

// attachmentKinds are the kinds Validate knows.
var attachmentKinds = map[AttachmentKind]bool{
	AttachPhoto: true, AttachDocument: true, AttachVideo: true, AttachAudio: true,
	AttachVoice: true, AttachAnimation: true, AttachSticker: true, AttachVideoNote: true,
}

// Attachment is a file: one a message sends, or one an inbound [Event]
// carries.
//
// To send, set Kind and exactly one source: URL (the platform fetches
// it), FileID (a file the platform already has, such as one an event
// carried: the same platform only) or Data (uploaded, named FileName,
// of type MIMEType when set). Caption is shown with the file, in the
// message's ParseMode. The other fields describe received files and are
// ignored by sends.
//
// On an event, FileID names the file for a [Downloader] and for sending
// it again, and the fields the platform reports are set: FileName,
// MIMEType, Size in bytes, Width and Height of images and videos,
// Duration of audio, voice and video, and the Caption. A photo's FileID
// is its largest size; Sizes lists them all, smallest first. A zero means
// the platform did not say.
type Attachment struct {
	Kind     AttachmentKind `json:"kind"`
	URL      string         `json:"url,omitempty"`
	Data     []byte         `json:"data,omitempty"`
	FileName string         `json:"file_name,omitempty"`
	Caption  string         `json:"caption,omitempty"`

	FileID   string        `json:"file_id,omitempty"`
	MIMEType string        `json:"mime_type,omitempty"`
	Size     int64         `json:"size,omitempty"`
	Width    int           `json:"width,omitempty"`
	Height   int           `json:"height,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	Sizes    []PhotoSize   `json:"sizes,omitempty"`
}

// PhotoSize is one size of a received photo ([Attachment] Sizes): the
// platform's ID of that size, its dimensions and its size in bytes (zero
// when unknown).
type PhotoSize struct {
	FileID string `json:"file_id"`
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
	Size   int64  `json:"size,omitempty"`
}

// Button is an inline button under a message. Pressing a button with Data
// sends an [EventCallback] whose Text is Data; a button with URL opens it.
// Exactly one of Data and URL is set.
type Button struct {
	Text string `json:"text"`
	Data string `json:"data,omitempty"`
	URL  string `json:"url,omitempty"`
}

// ReplyKeyboard is a keyboard that takes the place of the user's own
// until it is removed: rows of buttons, each of which sends its text as
// an ordinary message from the user when pressed (Telegram's reply
// keyboard). Unlike inline [Button]s it belongs to the chat, not to a
// message: it stays up after later messages, until a message removes it
// (Remove) or replaces it. The zero value is invalid.
type ReplyKeyboard struct {
	// Rows are the buttons' texts, row by row.
	Rows [][]string `json:"rows,omitempty"`
	// Remove removes the keyboard shown, instead; Rows must be empty.
	Remove bool `json:"remove,omitempty"`
	// OneTime hides the keyboard once a button was pressed (the user can
	// bring it back).
	OneTime bool `json:"one_time,omitempty"`
	// Placeholder is shown in the input field while the keyboard is up.
	Placeholder string `json:"placeholder,omitempty"`
}

// OutboundMessage is what a handler sends: text in a [ParseMode], optionally
// as a reply to a message, with attachments, rows of inline buttons and a
// reply keyboard. The zero value is an empty message, which
// [OutboundMessage.Validate] refuses.
//
// With Album set, the attachments go as one album (Telegram's media
// group), shown together, after the text if there is one; an album of one
// attachment is that attachment. Adapters of platforms without albums
// refuse one with a [Permanent] error wrapping [ErrUnsupported], as they
// do an attachment kind or a reply keyboard they cannot send (a Keyboard
// that only removes one is ignored where there is none).
//
// With EditID set, the message is an edit instead: it replaces the text and
// the buttons of the bot's earlier message EditID in the target chat (a nil
// Buttons removes the old ones), and the send's result names that message.
// An edit has text, and no attachments, ReplyToID or Keyboard. Adapters
// of platforms that cannot edit messages refuse it with a [Permanent]
// error wrapping [ErrUnsupported].
//
// With DeleteID set, the message is a deletion: it deletes the message
// DeleteID from the target chat (the bot's own, or, where the platform
// lets it, a user's), and has no other field set. The result names the
// deleted message. Adapters of platforms that cannot delete messages
// refuse it as they refuse edits.
type OutboundMessage struct {
	Text        string         `json:"text,omitempty"`
	ParseMode   ParseMode      `json:"parse_mode,omitempty"`
	ReplyToID   string         `json:"reply_to_id,omitempty"`
	Attachments []Attachment   `json:"attachments,omitempty"`
	Buttons     [][]Button     `json:"buttons,omitempty"`
	EditID      string         `json:"edit_id,omitempty"`
	Keyboard    *ReplyKeyboard `json:"keyboard,omitempty"`
	Album       bool           `json:"album,omitempty"`
	DeleteID    string         `json:"delete_id,omitempty"`
}

// EditMessage returns a plain-text edit of the bot's message id: sent, it
// replaces that message's text, and removes its buttons.
func EditMessage(id, text string) OutboundMessage { return OutboundMessage{Text: text, EditID: id} }

// DeleteMessage returns the deletion of message id: sent, it deletes that
// message from the target chat.
func DeleteMessage(id string) OutboundMessage { return OutboundMessage{DeleteID: id} }

// TextMessage returns a plain-text message.
func TextMessage(text string) OutboundMessage { return OutboundMessage{Text: text} }

// Cost returns how many messages m counts as against a platform's rate
// limits: the number of attachments of an album, which arrive at once,
// and 1 for anything else. (The several messages of a long text, or of a
// text with attachments, go one after another, and adapters pace them
// themselves.) Rate-limit middleware takes Cost tokens for a send.
func (m OutboundMessage) Cost() int {
	if m.Album && len(m.Attachments) > 1 {
		return len(m.Attachments)
	}
	return 1
}

// ErrInvalidMessage is wrapped by [OutboundMessage.Validate]'s errors.
var ErrInvalidMessage = errors.New("platform: invalid message")

// Validate reports whether m can be sent: it has text or an attachment, each
// attachment has a known kind and exactly one of URL, FileID and Data,
// each button has text and exactly one of Data and URL, a reply keyboard
// either removes the keyboard or has rows of buttons with text, an edit
// (EditID set) has text and no attachment, ReplyToID or Keyboard, and a
// deletion (DeleteID set) has nothing else. The error wraps
// [ErrInvalidMessage]. Adapters return it as a [Permanent] error: sending the
// same message again cannot succeed.
func (m OutboundMessage) Validate() error {
	if m.DeleteID != "" {
		if m.Text != "" || len(m.Attachments) > 0 || len(m.Buttons) > 0 || m.Keyboard != nil ||
			m.EditID != "" || m.ReplyToID != "" || m.Album || m.ParseMode != ParsePlain {
			return fmt.Errorf("%w: a deletion has nothing but DeleteID", ErrInvalidMessage)
		}
		return nil
	}
	if m.Text == "" && len(m.Attachments) == 0 {
		return fmt.Errorf("%w: no text and no attachment", ErrInvalidMessage)
	}
	if m.EditID != "" {
		switch {
		case m.Text == "":
			return fmt.Errorf("%w: an edit without text", ErrInvalidMessage)
		case len(m.Attachments) > 0:
			return fmt.Errorf("%w: an edit cannot change attachments", ErrInvalidMessage)
		case m.ReplyToID != "":
			return fmt.Errorf("%w: an edit cannot reply", ErrInvalidMessage)
		case m.Keyboard != nil:
			return fmt.Errorf("%w: an edit cannot change the reply keyboard", ErrInvalidMessage)
		}
	}
	switch m.ParseMode {
	case ParsePlain, ParseMarkdown, ParseHTML:
	default:
		return fmt.Errorf("%w: unknown parse mode %q", ErrInvalidMessage, m.ParseMode)
	}
	for i, a := range m.Attachments {
		if !attachmentKinds[a.Kind] {
			return fmt.Errorf("%w: attachment %d: unknown kind %q", ErrInvalidMessage, i, a.Kind)
		}
		sources := 0
		for _, set := range []bool{a.URL != "", a.FileID != "", len(a.Data) > 0} {
			if set {
				sources++
			}
		}
		if sources != 1 {
			return fmt.Errorf("%w: attachment %d: want exactly one of URL, FileID and Data", ErrInvalidMessage, i)
		}
	}
	for r, row := range m.Buttons {
		for c, b := range row {
			if b.Text == "" {
				return fmt.Errorf("%w: button %d,%d: no text", ErrInvalidMessage, r, c)
			}
			if (b.Data == "") == (b.URL == "") {
				return fmt.Errorf("%w: button %d,%d: want exactly one of Data and URL", ErrInvalidMessage, r, c)
			}
		}
	}
	if k := m.Keyboard; k != nil {
		if err := k.validate(); err != nil {
			return err
		}
	}
	return nil
}

// validate checks a reply keyboard for [OutboundMessage.Validate].
func (k *ReplyKeyboard) validate() error {
	if k.Remove {
		if len(k.Rows) > 0 {
			return fmt.Errorf("%w: a keyboard that removes the keyboard has no rows", ErrInvalidMessage)
		}
		return nil
	}
	n := 0
	for r, row := range k.Rows {
		for c, text := range row {
			if text == "" {
				return fmt.Errorf("%w: keyboard button %d,%d: no text", ErrInvalidMessage, r, c)
			}
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("%w: a reply keyboard without buttons (set Remove to remove one)", ErrInvalidMessage)
	}
	return nil
}
