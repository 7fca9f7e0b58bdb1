package platform

import (
	"errors"
	"fmt"
	"reflect"
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

	// Reply makes the message a reply, as ReplyToID does, and says more:
	// the message replied to may be in another chat, and a part of it
	// may be quoted. ReplyToID, if also set, must name the same message.
	Reply *Reply `json:"reply,omitempty"`
	// LinkPreview sets how the preview of a link in the text is shown,
	// or turns it off; nil leaves it to the platform.
	LinkPreview *LinkPreview `json:"link_preview,omitempty"`
	// Silent delivers the message without a notification sound.
	Silent bool `json:"silent,omitempty"`
	// Protected keeps the message from being forwarded and saved.
	Protected bool `json:"protected,omitempty"`
	// EffectID is a message effect shown with the message (Telegram: in
	// private chats only).
	EffectID string `json:"effect_id,omitempty"`
	// PaidBroadcast lets the message past the platform's free broadcast
	// limits, at a cost (Telegram: 0.1 Stars a message over 30 a second).
	PaidBroadcast bool `json:"paid_broadcast,omitempty"`
	// Entities mark up Text instead of a ParseMode (which must then be
	// plain): bold spans, links, mentions, custom emoji.
	Entities []Entity `json:"entities,omitempty"`

	// ReactID makes the message the setting of the bot's reaction to the
	// message ReactID in the target chat instead: to Reactions, or none
	// when Reactions is empty; BigReaction shows it with a big animation.
	// It has no other field set. The result names the message reacted
	// to. Adapters of platforms without reactions refuse it with a
	// [Permanent] error wrapping [ErrUnsupported].
	ReactID     string     `json:"react_id,omitempty"`
	Reactions   []Reaction `json:"reactions,omitempty"`
	BigReaction bool       `json:"big_reaction,omitempty"`

	// Invoice makes the message an invoice (see [Invoice]), with Buttons
	// (the first being the pay button, where the platform lets a bot
	// choose) and the send options above; it has no Text, Attachments or
	// Keyboard. Adapters of platforms without payments refuse it as
	// unsupported.
	Invoice *Invoice `json:"invoice,omitempty"`

	// Call makes the message a call of a platform method by its name
	// instead (see [MethodCall] and [CallMethod]): for what Herald has no
	// field for. It has no other field set. It goes through the sender
	// chain like any message, so it is rate-limited, retried and logged;
	// the result's Raw holds the platform's answer.
	Call *MethodCall `json:"call,omitempty"`

	// Stream makes the message one step of a streamed reply (see
	// [StreamPart] and [Stream]): Text is the whole text so far.
	Stream *StreamPart `json:"stream,omitempty"`
}

// Reply is the message a message replies to (see [OutboundMessage]
// Reply).
type Reply struct {
	// MessageID is the message replied to.
	MessageID string `json:"message_id"`
	// ChatID is the chat of MessageID when it is not the target chat.
	ChatID string `json:"chat_id,omitempty"`
	// Quote is a part of the message replied to, exactly as it appears
	// there, shown quoted in the reply; QuotePosition is its offset in
	// that message, in UTF-16 code units, when it appears more than once,
	// and QuoteParseMode the parse mode of Quote's markup.
	Quote          string    `json:"quote,omitempty"`
	QuoteParseMode ParseMode `json:"quote_parse_mode,omitempty"`
	QuotePosition  int       `json:"quote_position,omitempty"`
	// Required fails the send when the message replied to is gone;
	// otherwise the message is sent as no reply then.
	Required bool `json:"required,omitempty"`
}

// LinkPreview sets the preview of a link in a message's text (see
// [OutboundMessage] LinkPreview). The zero value shows the platform's
// default preview.
type LinkPreview struct {
	// Disabled shows no preview.
	Disabled bool `json:"disabled,omitempty"`
	// URL is the link to preview; empty means the text's first.
	URL string `json:"url,omitempty"`
	// PreferSmallMedia and PreferLargeMedia choose the size of the
	// preview's picture; AboveText shows the preview above the text.
	PreferSmallMedia bool `json:"prefer_small_media,omitempty"`
	PreferLargeMedia bool `json:"prefer_large_media,omitempty"`
	AboveText        bool `json:"above_text,omitempty"`
}

// Entity is a span of a message's text with a meaning, as Telegram's
// MessageEntity: bold, a link, a mention. Offset and Length count UTF-16
// code units. Type is Telegram's name: "bold", "italic", "underline",
// "strikethrough", "spoiler", "code", "pre" (with Language),
// "text_link" (with URL), "text_mention" (with UserID), "custom_emoji"
// (with CustomEmojiID), "blockquote", "expandable_blockquote", and the
// kinds a platform detects itself ("mention", "hashtag", "url", …).
type Entity struct {
	Type          string `json:"type"`
	Offset        int    `json:"offset"`
	Length        int    `json:"length"`
	URL           string `json:"url,omitempty"`
	UserID        string `json:"user_id,omitempty"`
	Language      string `json:"language,omitempty"`
	CustomEmojiID string `json:"custom_emoji_id,omitempty"`
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
// (EditID set) has text and no attachment, ReplyToID, Reply or Keyboard,
// and a deletion (DeleteID set) has nothing else. At most one of EditID,
// DeleteID, ReactID, Invoice, Call and Stream is set: a reaction has
// nothing but Reactions (each an Emoji or a CustomEmojiID) and
// BigReaction, a call nothing but Call (see [MethodCall]), an invoice
// ([Invoice]) no Text, Attachments or Keyboard, and a stream part
// ([StreamPart]) text and no attachments or Keyboard. Reply names a
// message (the one ReplyToID names, if that is set too), and Entities
// need a plain ParseMode. The error wraps [ErrInvalidMessage]. Adapters
// return it as a [Permanent] error: sending the same message again cannot
// succeed.
func (m OutboundMessage) Validate() error {
	ops := 0
	for _, set := range []bool{m.EditID != "", m.DeleteID != "", m.ReactID != "", m.Invoice != nil, m.Call != nil, m.Stream != nil} {
		if set {
			ops++
		}
	}
	if ops > 1 {
		return fmt.Errorf("%w: at most one of EditID, DeleteID, ReactID, Invoice, Call and Stream", ErrInvalidMessage)
	}
	if len(m.Reactions) > 0 || m.BigReaction {
		if m.ReactID == "" {
			return fmt.Errorf("%w: Reactions without a ReactID", ErrInvalidMessage)
		}
	}
	switch {
	case m.DeleteID != "":
		c := m
		c.DeleteID = ""
		if !reflect.ValueOf(c).IsZero() {
			return fmt.Errorf("%w: a deletion has nothing but DeleteID", ErrInvalidMessage)
		}
		return nil
	case m.ReactID != "":
		c := m
		c.ReactID, c.Reactions, c.BigReaction = "", nil, false
		if !reflect.ValueOf(c).IsZero() {
			return fmt.Errorf("%w: a reaction has nothing but ReactID, Reactions and BigReaction", ErrInvalidMessage)
		}
		for i, r := range m.Reactions {
			if r.Paid || (r.Emoji == "") == (r.CustomEmojiID == "") {
				return fmt.Errorf("%w: reaction %d: want exactly one of Emoji and CustomEmojiID", ErrInvalidMessage, i)
			}
		}
		return nil
	case m.Call != nil:
		c := m
		c.Call = nil
		if !reflect.ValueOf(c).IsZero() {
			return fmt.Errorf("%w: a call has nothing but Call", ErrInvalidMessage)
		}
		return m.Call.validate()
	}
	if err := m.validateOptions(); err != nil {
		return err
	}
	switch {
	case m.Invoice != nil:
		if m.Text != "" || len(m.Attachments) > 0 || m.Keyboard != nil || m.Album || len(m.Entities) > 0 || m.LinkPreview != nil || m.ParseMode != ParsePlain {
			return fmt.Errorf("%w: an invoice has no Text, ParseMode, Entities, LinkPreview, Attachments or Keyboard", ErrInvalidMessage)
		}
		if err := m.Invoice.validate(); err != nil {
			return err
		}
		return validateButtons(m.Buttons)
	case m.Stream != nil:
		switch {
		case m.Stream.ID == "":
			return fmt.Errorf("%w: a stream part without a stream ID", ErrInvalidMessage)
		case m.Text == "":
			return fmt.Errorf("%w: a stream part without text", ErrInvalidMessage)
		case len(m.Attachments) > 0 || m.Album || m.Keyboard != nil:
			return fmt.Errorf("%w: a stream part has no attachments or reply keyboard", ErrInvalidMessage)
		}
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
		case m.ReplyToID != "" || m.Reply != nil:
			return fmt.Errorf("%w: an edit cannot reply", ErrInvalidMessage)
		case m.Keyboard != nil:
			return fmt.Errorf("%w: an edit cannot change the reply keyboard", ErrInvalidMessage)
		}
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
	if err := validateButtons(m.Buttons); err != nil {
		return err
	}
	if k := m.Keyboard; k != nil {
		if err := k.validate(); err != nil {
			return err
		}
	}
	return nil
}

// validateOptions checks m's parse mode and send options for Validate.
func (m OutboundMessage) validateOptions() error {
	switch m.ParseMode {
	case ParsePlain, ParseMarkdown, ParseHTML:
	default:
		return fmt.Errorf("%w: unknown parse mode %q", ErrInvalidMessage, m.ParseMode)
	}
	if r := m.Reply; r != nil {
		switch {
		case r.MessageID == "":
			return fmt.Errorf("%w: a Reply without a MessageID", ErrInvalidMessage)
		case m.ReplyToID != "" && m.ReplyToID != r.MessageID:
			return fmt.Errorf("%w: ReplyToID %q and Reply.MessageID %q differ", ErrInvalidMessage, m.ReplyToID, r.MessageID)
		case r.QuotePosition < 0:
			return fmt.Errorf("%w: a negative QuotePosition", ErrInvalidMessage)
		}
		switch r.QuoteParseMode {
		case ParsePlain, ParseMarkdown, ParseHTML:
		default:
			return fmt.Errorf("%w: unknown quote parse mode %q", ErrInvalidMessage, r.QuoteParseMode)
		}
	}
	if len(m.Entities) > 0 && m.ParseMode != ParsePlain {
		return fmt.Errorf("%w: Entities and a ParseMode both mark the text up; choose one", ErrInvalidMessage)
	}
	for i, e := range m.Entities {
		if e.Type == "" || e.Offset < 0 || e.Length <= 0 {
			return fmt.Errorf("%w: entity %d: want a Type, an Offset of 0 or more and a positive Length", ErrInvalidMessage, i)
		}
	}
	return nil
}

// validateButtons checks inline buttons for Validate.
func validateButtons(rows [][]Button) error {
	for r, row := range rows {
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
