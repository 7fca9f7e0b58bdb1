package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// Telegram's descriptions of the edits it refuses.
const (
	descNotFound    = "message to edit not found"
	descCantEdit    = "message can't be edited"
	descNoText      = "there is no text in the message to edit"
	descNoCaption   = "there is no caption in the message to edit"
	descNotModified = "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
)

// msgKey names a message: its chat and its ID there.
type msgKey struct {
	chatID    int64
	messageID int
}

// Edit is an edit of one of the bot's messages that the server accepted
// (editMessageText or editMessageCaption), as [Server.Edits] and
// [Server.WaitEdits] return it. It is a deep copy: the caller may keep and
// change it (Keyboard included) without affecting the server. The zero
// value describes no edit.
type Edit struct {
	// Method is "editMessageText" or "editMessageCaption".
	Method string
	// ChatID and MessageID name the message edited.
	ChatID    int64
	MessageID int
	// Text is the message's new text, or its new caption.
	Text string
	// ParseMode is the parse_mode sent with the edit: "", "Markdown",
	// "MarkdownV2" or "HTML".
	ParseMode string
	// Keyboard is the inline keyboard the message has after the edit: the
	// one sent with it, or nil when the edit sent none, which, as on
	// Telegram, removes the old one.
	Keyboard [][]tgbotapi.InlineKeyboardButton
	// At is when the server accepted the edit.
	At time.Time
	// BusinessConnectionID is the business_connection_id sent, or empty,
	// Entities the entities (or caption_entities) sent, and LinkPreview
	// the link_preview_options.
	BusinessConnectionID string
	Entities             []tgbotapi.MessageEntity
	LinkPreview          *LinkPreview
}

// Message returns the bot's message messageID in the chat chatID as it is
// now: as sent, with the text or caption, parse mode and keyboard of the
// last edit accepted, and EditedAt set once it was edited. It reports false
// for a message the bot did not send there.
func (s *Server) Message(chatID int64, messageID int) (SentMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.current[msgKey{chatID, messageID}]
	if !ok {
		return SentMessage{}, false
	}
	return m.clone(), true
}

// Edits returns, in the order they were accepted, the edits of the bot's
// messages in chatID. Failed edits (refused, or answered with an injected
// [Fault]) are not among them; [Server.Requests] counts those too.
func (s *Server) Edits(chatID int64) []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofChat(s.edits, chatID, func(e Edit) int64 { return e.ChatID }, func(e Edit) Edit {
		e.Keyboard = cloneKeyboard(e.Keyboard)
		return e
	})
}

// WaitEdits waits until at least n edits in chatID were accepted and
// returns them all, like [Server.WaitSent]: with ctx's error or
// [ErrClosed], and the edits accepted so far, if that ends the wait first.
func (s *Server) WaitEdits(ctx context.Context, chatID int64, n int) ([]Edit, error) {
	var got []Edit
	err := s.WaitUntil(ctx, func() bool {
		got = s.Edits(chatID)
		return len(got) >= n
	})
	return got, err
}

// edit handles editMessageText and editMessageCaption as Telegram does
// for a message in a chat: only the bot's own messages can be edited; a
// text edit needs a message with text and a caption edit one with a file;
// an edit that changes nothing (the same text or caption, parse mode and
// keyboard, compared as sent, not as rendered) is refused as not modified;
// and an edit with no reply_markup removes the keyboard. Messages of
// inline mode (inline_message_id) are unknown here.
func (s *Server) edit(w http.ResponseWriter, method string, p url.Values) {
	if p.Get("inline_message_id") != "" {
		badRequest(w, "MESSAGE_ID_INVALID")
		return
	}
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	id, err := strconv.Atoi(p.Get("message_id"))
	if p.Get("message_id") == "" || id == 0 {
		badRequest(w, "message identifier is not specified")
		return
	}
	if err != nil || id < 0 {
		badRequest(w, descNotFound)
		return
	}
	e := Edit{Method: method, ChatID: chatID, MessageID: id, ParseMode: p.Get("parse_mode"), BusinessConnectionID: p.Get("business_connection_id")}
	if !validParseMode(e.ParseMode) {
		badRequest(w, "unsupported parse_mode")
		return
	}
	var opts SentMessage
	if desc := s.readSendOptions(&opts, p); desc != "" {
		badRequest(w, desc)
		return
	}
	e.Entities, e.LinkPreview = opts.Entities, opts.LinkPreview
	var desc string
	if e.Keyboard, desc = readKeyboard(p); desc != "" {
		badRequest(w, desc)
		return
	}
	if len(e.Keyboard) == 0 {
		e.Keyboard = nil // an empty inline keyboard is none
	}
	if method == "editMessageText" {
		e.Text = p.Get("text")
		if e.Text == "" {
			badRequest(w, "message text is empty")
			return
		}
		if utf16Len(e.Text) > maxTextLen {
			badRequest(w, "MESSAGE_TOO_LONG")
			return
		}
	} else {
		e.Text = p.Get("caption")
		if utf16Len(e.Text) > maxCaptionLen {
			badRequest(w, "message caption is too long")
			return
		}
	}

	s.mu.Lock()
	key := msgKey{chatID, id}
	m, ok := s.current[key]
	switch {
	case !ok && s.deleted[key]:
		desc = descNotFound
	case !ok && id <= s.messageIDs[chatID]:
		desc = descCantEdit // a user's message
	case !ok:
		desc = descNotFound
	case m.BusinessConnectionID != e.BusinessConnectionID:
		desc = descNotFound // a business message is edited through its connection only
	case method == "editMessageText" && m.Kind != "text":
		desc = descNoText
	case method == "editMessageCaption" && m.Kind == "text":
		desc = descNoCaption
	case m.Text == e.Text && m.ParseMode == e.ParseMode && sameKeyboard(m.Keyboard, e.Keyboard) && sameEntities(m.Entities, e.Entities):
		desc = descNotModified
	}
	if desc != "" {
		s.mu.Unlock()
		badRequest(w, desc)
		return
	}
	e.At = time.Now()
	m.Text, m.ParseMode, m.Keyboard, m.EditedAt, m.Entities = e.Text, e.ParseMode, e.Keyboard, e.At, e.Entities
	s.current[key] = m
	s.edits = append(s.edits, e)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, s.messageResult(m))
}

// sameKeyboard reports whether two inline keyboards are the same, button
// for button; no keyboard and an empty one are the same.
func sameKeyboard(a, b [][]tgbotapi.InlineKeyboardButton) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// sameEntities reports whether two entity lists are the same.
func sameEntities(a, b []tgbotapi.MessageEntity) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
