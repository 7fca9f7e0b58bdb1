package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// Telegram's limits, in UTF-16 code units and bytes. The fake counts the
// text as sent, markup included, so it is stricter than Telegram, which
// counts after parsing the markup.
const (
	maxTextLen     = 4096
	maxCaptionLen  = 1024
	maxCallbackLen = 64
)

// SentMessage is a message the server accepted from the bot: as it was
// sent, as [Server.Sent], [Server.AllSent] and [Server.WaitSent] return it,
// or as it is now, after the edits the server accepted ([Server.Message]).
// It is a deep copy: the caller may keep and change it (FileData and
// Keyboard included) without affecting the server or other callers. The
// zero value describes no message.
type SentMessage struct {
	// Method is "sendMessage", "sendPhoto" or "sendDocument".
	Method string
	// Kind is "text", "photo" or "document".
	Kind string
	// ChatID is the chat the message went to and MessageID the ID the
	// server gave it (counted per chat from 1).
	ChatID    int64
	MessageID int
	// Text is the message's text, or the caption of a photo or document.
	Text string
	// ParseMode is the parse_mode sent: "", "Markdown", "MarkdownV2" or
	// "HTML".
	ParseMode string
	// ReplyToMessageID is the reply_to_message_id sent, or 0.
	ReplyToMessageID int
	// Keyboard holds the inline keyboard sent, or nil.
	Keyboard [][]tgbotapi.InlineKeyboardButton
	// FileURL is the URL (or file ID) of a photo or document sent by
	// reference; FileName and FileData describe an uploaded one.
	FileURL  string
	FileName string
	FileData []byte
	// At is when the server accepted the message.
	At time.Time
	// EditedAt is when the server accepted the last edit of the message
	// (from [Server.Message]), or zero: never edited, or a record of the
	// message as sent.
	EditedAt time.Time
}

// Sent returns, in the order they were accepted, the messages sent to
// chatID.
func (s *Server) Sent(chatID int64) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentMessage
	for _, m := range s.sent {
		if m.ChatID == chatID {
			out = append(out, m.clone())
		}
	}
	return out
}

// clone returns a copy of m that shares no memory with it.
func (m SentMessage) clone() SentMessage {
	if m.FileData != nil {
		m.FileData = bytes.Clone(m.FileData)
	}
	m.Keyboard = cloneKeyboard(m.Keyboard)
	return m
}

// cloneKeyboard returns a copy of kb that shares no memory with it.
func cloneKeyboard(kb [][]tgbotapi.InlineKeyboardButton) [][]tgbotapi.InlineKeyboardButton {
	if kb == nil {
		return nil
	}
	// The buttons hold pointers; a JSON round trip copies what they point
	// to. The keyboard came from JSON, so it goes back.
	var out [][]tgbotapi.InlineKeyboardButton
	if raw, err := json.Marshal(kb); err == nil && json.Unmarshal(raw, &out) == nil {
		return out
	}
	return kb
}

// AllSent returns every message the server accepted, in order.
func (s *Server) AllSent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SentMessage, len(s.sent))
	for i, m := range s.sent {
		out[i] = m.clone()
	}
	return out
}

// WaitSent waits until at least n messages were sent to chatID and returns
// them all (possibly more than n). If ctx ends or the server is closed
// first, it returns the messages sent so far with ctx's error or
// [ErrClosed].
func (s *Server) WaitSent(ctx context.Context, chatID int64, n int) ([]SentMessage, error) {
	var got []SentMessage
	err := s.WaitUntil(ctx, func() bool {
		got = s.Sent(chatID)
		return len(got) >= n
	})
	return got, err
}

// CallbackAnswer is an answerCallbackQuery call the server received, as
// [Server.CallbackAnswers] returns it: a copy, the caller's own. The zero
// value describes no answer.
type CallbackAnswer struct {
	// CallbackQueryID is the callback_query_id answered.
	CallbackQueryID string
	// Text is the notification text sent, or empty.
	Text string
	// ShowAlert is show_alert: an alert instead of a notification.
	ShowAlert bool
	// At is when the server received the answer.
	At time.Time
}

// CallbackAnswers returns the answerCallbackQuery calls received, in order.
func (s *Server) CallbackAnswers() []CallbackAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CallbackAnswer(nil), s.answers...)
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

func badRequest(w http.ResponseWriter, desc string) {
	writeError(w, http.StatusBadRequest, "Bad Request: "+desc, nil)
}

// send handles sendMessage, sendPhoto and sendDocument.
func (s *Server) send(w http.ResponseWriter, method string, p url.Values, files map[string]upload) {
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	m := SentMessage{Method: method, ChatID: chatID, ParseMode: p.Get("parse_mode")}
	if !validParseMode(m.ParseMode) {
		badRequest(w, "unsupported parse_mode")
		return
	}
	if v := p.Get("reply_to_message_id"); v != "" {
		var err error
		if m.ReplyToMessageID, err = strconv.Atoi(v); err != nil {
			badRequest(w, "invalid reply_to_message_id")
			return
		}
	}
	kb, desc := readKeyboard(p)
	if desc != "" {
		badRequest(w, desc)
		return
	}
	m.Keyboard = kb

	switch method {
	case "sendMessage":
		m.Kind, m.Text = "text", p.Get("text")
		if m.Text == "" {
			badRequest(w, "message text is empty")
			return
		}
		if utf16Len(m.Text) > maxTextLen {
			badRequest(w, "message is too long")
			return
		}
	default:
		field := "photo"
		if method == "sendDocument" {
			field = "document"
		}
		m.Kind, m.Text = field, p.Get("caption")
		if utf16Len(m.Text) > maxCaptionLen {
			badRequest(w, "message caption is too long")
			return
		}
		if f, ok := files[field]; ok {
			m.FileName, m.FileData = f.name, f.data
		} else if m.FileURL = p.Get(field); m.FileURL == "" {
			badRequest(w, "there is no "+field+" in the request")
			return
		}
	}

	s.mu.Lock()
	m.MessageID = s.nextMessageIDLocked(chatID)
	m.At = time.Now()
	s.sent = append(s.sent, m)
	s.current[msgKey{chatID, m.MessageID}] = m
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, s.messageResult(m))
}

// validParseMode reports whether Telegram knows the parse_mode mode.
func validParseMode(mode string) bool {
	switch mode {
	case "", tgbotapi.ModeMarkdown, tgbotapi.ModeMarkdownV2, tgbotapi.ModeHTML:
		return true
	}
	return false
}

// readKeyboard reads the inline keyboard of a request's reply_markup: nil
// when there is none, or an empty one. It returns the description of a
// Bad Request for a reply_markup that is not an inline keyboard or has
// callback data over Telegram's limit.
func readKeyboard(p url.Values) ([][]tgbotapi.InlineKeyboardButton, string) {
	v := p.Get("reply_markup")
	if v == "" {
		return nil, ""
	}
	var kb tgbotapi.InlineKeyboardMarkup
	if json.Unmarshal([]byte(v), &kb) != nil {
		return nil, "can't parse reply keyboard markup JSON object"
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.CallbackData != nil && len(*b.CallbackData) > maxCallbackLen {
				return nil, "BUTTON_DATA_INVALID"
			}
		}
	}
	return kb.InlineKeyboard, ""
}

// messageResult returns m as the result of the call that sent or edited
// it: a Message as Telegram describes it.
func (s *Server) messageResult(m SentMessage) tgbotapi.Message {
	bot := s.bot
	result := tgbotapi.Message{
		MessageID: m.MessageID,
		From:      &bot,
		Date:      int(m.At.Unix()),
		Chat:      s.chat(m.ChatID),
	}
	if !m.EditedAt.IsZero() {
		result.EditDate = int(m.EditedAt.Unix())
	}
	if m.ReplyToMessageID != 0 {
		result.ReplyToMessage = &tgbotapi.Message{MessageID: m.ReplyToMessageID, Chat: result.Chat}
	}
	if m.Keyboard != nil {
		result.ReplyMarkup = &tgbotapi.InlineKeyboardMarkup{InlineKeyboard: m.Keyboard}
	}
	fileID := "file-" + m.Kind
	switch m.Kind {
	case "text":
		result.Text = m.Text
	case "photo":
		result.Caption = m.Text
		result.Photo = []tgbotapi.PhotoSize{{FileID: fileID, FileUniqueID: fileID}}
	case "document":
		result.Caption = m.Text
		result.Document = &tgbotapi.Document{FileID: fileID, FileUniqueID: fileID, FileName: m.FileName}
	}
	return result
}

func (s *Server) answerCallback(w http.ResponseWriter, p url.Values) {
	id := p.Get("callback_query_id")
	if id == "" {
		badRequest(w, "query is too old and response timeout expired or query ID is invalid")
		return
	}
	s.mu.Lock()
	s.answers = append(s.answers, CallbackAnswer{
		CallbackQueryID: id, Text: p.Get("text"), ShowAlert: p.Get("show_alert") == "true", At: time.Now(),
	})
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

func (s *Server) setWebhook(w http.ResponseWriter, p url.Values) {
	info := WebhookInfo{URL: p.Get("url"), SecretToken: p.Get("secret_token")}
	if v := p.Get("max_connections"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			badRequest(w, "bad webhook: max_connections must be between 1 and 100")
			return
		}
		info.MaxConnections = n
	}
	if v := p.Get("allowed_updates"); v != "" {
		if json.Unmarshal([]byte(v), &info.AllowedUpdates) != nil {
			badRequest(w, "can't parse allowed_updates JSON array")
			return
		}
	}
	if info.URL != "" {
		u, err := url.Parse(info.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			badRequest(w, "bad webhook: invalid URL")
			return
		}
	}
	s.mu.Lock()
	s.webhook = info
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}
