package platform

import (
	"errors"
	"fmt"
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

// The kinds of attachment.
const (
	AttachPhoto    AttachmentKind = "photo"
	AttachDocument AttachmentKind = "document"
)

// Attachment is a photo or document sent with a message, either by URL (the
// platform fetches it) or as bytes (uploaded). Exactly one of URL and Data
// is set. FileName names uploaded bytes; Caption is shown with the file.
type Attachment struct {
	Kind     AttachmentKind `json:"kind"`
	URL      string         `json:"url,omitempty"`
	Data     []byte         `json:"data,omitempty"`
	FileName string         `json:"file_name,omitempty"`
	Caption  string         `json:"caption,omitempty"`
}

// Button is an inline button under a message. Pressing a button with Data
// sends an [EventCallback] whose Text is Data; a button with URL opens it.
// Exactly one of Data and URL is set.
type Button struct {
	Text string `json:"text"`
	Data string `json:"data,omitempty"`
	URL  string `json:"url,omitempty"`
}

// OutboundMessage is what a handler sends: text in a [ParseMode], optionally
// as a reply to a message, with attachments and rows of inline buttons.
// The zero value is an empty message, which [OutboundMessage.Validate]
// refuses.
//
// With EditID set, the message is an edit instead: it replaces the text and
// the buttons of the bot's earlier message EditID in the target chat (a nil
// Buttons removes the old ones), and the send's result names that message.
// An edit has text, and no attachments and no ReplyToID. Adapters of
// platforms that cannot edit messages refuse it with a [Permanent] error
// wrapping [ErrUnsupported].
type OutboundMessage struct {
	Text        string       `json:"text,omitempty"`
	ParseMode   ParseMode    `json:"parse_mode,omitempty"`
	ReplyToID   string       `json:"reply_to_id,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Buttons     [][]Button   `json:"buttons,omitempty"`
	EditID      string       `json:"edit_id,omitempty"`
}

// EditMessage returns a plain-text edit of the bot's message id: sent, it
// replaces that message's text, and removes its buttons.
func EditMessage(id, text string) OutboundMessage { return OutboundMessage{Text: text, EditID: id} }

// TextMessage returns a plain-text message.
func TextMessage(text string) OutboundMessage { return OutboundMessage{Text: text} }

// ErrInvalidMessage is wrapped by [OutboundMessage.Validate]'s errors.
var ErrInvalidMessage = errors.New("platform: invalid message")

// Validate reports whether m can be sent: it has text or an attachment, each
// attachment has a known kind and exactly one of URL and Data, each button
// has text and exactly one of Data and URL, and an edit (EditID set) has
// text and no attachment or ReplyToID. The error wraps
// [ErrInvalidMessage]. Adapters return it as a [Permanent] error: sending the
// same message again cannot succeed.
func (m OutboundMessage) Validate() error {
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
		}
	}
	switch m.ParseMode {
	case ParsePlain, ParseMarkdown, ParseHTML:
	default:
		return fmt.Errorf("%w: unknown parse mode %q", ErrInvalidMessage, m.ParseMode)
	}
	for i, a := range m.Attachments {
		if a.Kind != AttachPhoto && a.Kind != AttachDocument {
			return fmt.Errorf("%w: attachment %d: unknown kind %q", ErrInvalidMessage, i, a.Kind)
		}
		if (a.URL == "") == (len(a.Data) == 0) {
			return fmt.Errorf("%w: attachment %d: want exactly one of URL and Data", ErrInvalidMessage, i)
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
	return nil
}
