package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// Telegram's limits, in UTF-16 code units and bytes. The fake counts the
// text as sent, markup included, so it is stricter than Telegram, which
// counts after parsing the markup.
const (
	// descQueryTooOld is Telegram's answer to an answer of a callback or
	// inline query that is unknown, too old, or answered before.
	descQueryTooOld = "query is too old and response timeout expired or query ID is invalid"

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
	// Method is "sendMessage", "sendPhoto", "sendDocument", "sendVideo",
	// "sendAudio", "sendVoice", "sendAnimation", "sendSticker",
	// "sendVideoNote" or "sendMediaGroup".
	Method string
	// Kind is "text", "photo", "document", "video", "audio", "voice",
	// "animation", "sticker" or "video_note".
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
	// ReplyKeyboard is the reply keyboard sent (reply_markup with
	// "keyboard"), or nil; RemoveKeyboard is set for a reply_markup that
	// removes it.
	ReplyKeyboard  *tgbotapi.ReplyKeyboardMarkup
	RemoveKeyboard bool
	// FileURL is the URL (or file ID) of a file sent by reference;
	// FileName and FileData describe an uploaded one (FileData also one
	// sent by the file ID of a file the server holds). FileID is the ID
	// the server knows the file by: given for uploads and URLs, as sent
	// for a file ID.
	FileURL  string
	FileName string
	FileData []byte
	FileID   string
	// MediaGroupID is the album the message is part of (sendMediaGroup),
	// or empty.
	MediaGroupID string
	// At is when the server accepted the message.
	At time.Time
	// EditedAt is when the server accepted the last edit of the message
	// (from [Server.Message]), or zero: never edited, or a record of the
	// message as sent.
	EditedAt time.Time

	// ThreadID is the message_thread_id sent (a forum topic), or 0.
	ThreadID int
	// BusinessConnectionID is the business_connection_id sent (the
	// message went through a business account's connection), or empty.
	BusinessConnectionID string
	// ReplyChatID is the chat_id of reply_parameters, when the message
	// replies to a message of another chat, and Quote its quote.
	ReplyChatID string
	Quote       string
	// AllowSendingWithoutReply is reply_parameters'
	// allow_sending_without_reply (or the old parameter of that name).
	AllowSendingWithoutReply bool
	// Silent is disable_notification, Protected protect_content,
	// PaidBroadcast allow_paid_broadcast and EffectID message_effect_id.
	Silent, Protected, PaidBroadcast bool
	EffectID                         string
	// Entities are the entities (or caption_entities) sent, or nil.
	Entities []tgbotapi.MessageEntity
	// LinkPreview is the link_preview_options sent, or nil.
	LinkPreview *LinkPreview
	// Invoice is the invoice of a sendInvoice (Kind "invoice"), or nil.
	Invoice *Invoice
	// Params are all the parameters of the request, as sent (uploaded
	// files aside).
	Params url.Values
}

// LinkPreview is the link_preview_options of a message, as sent.
type LinkPreview struct {
	IsDisabled       bool   `json:"is_disabled"`
	URL              string `json:"url"`
	PreferSmallMedia bool   `json:"prefer_small_media"`
	PreferLargeMedia bool   `json:"prefer_large_media"`
	ShowAboveText    bool   `json:"show_above_text"`
}

// Sent returns, in the order they were accepted, the messages sent to
// chatID.
func (s *Server) Sent(chatID int64) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.sentTo[chatID]
	if len(at) == 0 {
		return nil
	}
	out := make([]SentMessage, len(at))
	for i, j := range at {
		out[i] = s.sent[j].clone()
	}
	return out
}

// clone returns a copy of m that shares no memory with it.
func (m SentMessage) clone() SentMessage {
	if m.FileData != nil {
		m.FileData = bytes.Clone(m.FileData)
	}
	m.Params = cloneValues(m.Params)
	m.Entities = append([]tgbotapi.MessageEntity(nil), m.Entities...)
	if m.LinkPreview != nil {
		lp := *m.LinkPreview
		m.LinkPreview = &lp
	}
	if m.Invoice != nil {
		inv := *m.Invoice
		inv.Prices = append([]tgbotapi.LabeledPrice(nil), inv.Prices...)
		m.Invoice = &inv
	}
	m.Keyboard = cloneKeyboard(m.Keyboard)
	if m.ReplyKeyboard != nil {
		rk := *m.ReplyKeyboard
		rk.Keyboard = nil
		for _, row := range m.ReplyKeyboard.Keyboard {
			rk.Keyboard = append(rk.Keyboard, append([]tgbotapi.KeyboardButton(nil), row...))
		}
		m.ReplyKeyboard = &rk
	}
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

// NumSent returns how many messages the server accepted, to every chat:
// len(AllSent()) without copying them, for a [Server.WaitUntil] condition.
func (s *Server) NumSent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
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
	err := s.WaitUntil(ctx, func() bool { return s.sentCount(chatID) >= n })
	return s.Sent(chatID), err
}

// sentCount returns how many messages were sent to chatID, copying none.
func (s *Server) sentCount(chatID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sentTo[chatID])
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
	// URL is the url sent, or empty.
	URL string
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

// sendMethods maps the methods that send one file to their kind, which is
// also the parameter that holds the file.
var sendMethods = map[string]string{
	"sendPhoto": "photo", "sendDocument": "document", "sendVideo": "video", "sendAudio": "audio",
	"sendVoice": "voice", "sendAnimation": "animation", "sendSticker": "sticker", "sendVideoNote": "video_note",
}

// send handles sendMessage and the methods that send one file.
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
	if desc := s.readSendOptions(&m, p); desc != "" {
		badRequest(w, desc)
		return
	}
	mk, desc := readMarkup(p)
	if desc != "" {
		badRequest(w, desc)
		return
	}
	m.Keyboard, m.ReplyKeyboard, m.RemoveKeyboard = mk.inline, mk.reply, mk.remove

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
		field := sendMethods[method]
		m.Kind, m.Text = field, p.Get("caption")
		if field == "sticker" || field == "video_note" {
			m.Text = "" // these have no caption
		}
		if utf16Len(m.Text) > maxCaptionLen {
			badRequest(w, "message caption is too long")
			return
		}
		if desc := s.attach(&m, field, p.Get(field), files); desc != "" {
			badRequest(w, desc)
			return
		}
	}

	s.mu.Lock()
	s.recordLocked(&m)
	s.mu.Unlock()
	writeResult(w, s.messageResult(m))
}

// recordLocked gives m, a message the bot sent, its ID and time, and
// records it; s.mu must be held.
func (s *Server) recordLocked(m *SentMessage) {
	m.MessageID = s.nextMessageIDLocked(m.ChatID)
	m.At = time.Now()
	if m.FileID == "" && m.Kind != "text" {
		m.FileID = s.storeFileLocked(storedFile{kind: m.Kind, name: m.FileName, data: m.FileData, url: m.FileURL})
	}
	s.sentTo[m.ChatID] = append(s.sentTo[m.ChatID], len(s.sent))
	s.sent = append(s.sent, *m)
	s.current[msgKey{m.ChatID, m.MessageID}] = *m
	s.notifyLocked()
}

// attach sets m's file from a request's field: the upload files[field],
// or the field's value, a URL (with "://") or a file ID, which must be
// one the server holds. It returns the description of a Bad Request, or
// "".
func (s *Server) attach(m *SentMessage, field, value string, files map[string]upload) string {
	if f, ok := files[field]; ok {
		m.FileName, m.FileData = f.name, f.data
		return ""
	}
	return s.attachRef(m, value, "there is no "+field+" in the request")
}

// attachRef sets m's file from ref, a URL or a file ID, as attach does.
func (s *Server) attachRef(m *SentMessage, ref, missing string) string {
	switch {
	case ref == "":
		return missing
	case strings.Contains(ref, "://"):
		m.FileURL = ref
		return ""
	}
	s.mu.Lock()
	f, ok := s.files[ref]
	s.mu.Unlock()
	if !ok {
		return "wrong file identifier/HTTP URL specified"
	}
	m.FileURL, m.FileID, m.FileName, m.FileData = ref, ref, f.name, f.data // the server never changes it
	return ""
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
	mk, desc := readMarkup(p)
	if desc == "" && (mk.reply != nil || mk.remove) {
		desc = "inline keyboard expected"
	}
	return mk.inline, desc
}

// markup is a request's reply_markup: an inline keyboard, a reply
// keyboard, or the removal of one.
type markup struct {
	inline [][]tgbotapi.InlineKeyboardButton
	reply  *tgbotapi.ReplyKeyboardMarkup
	remove bool
}

// readMarkup reads a request's reply_markup, and returns the description
// of a Bad Request for one that does not parse, has callback data over
// Telegram's limit, a reply keyboard without buttons or with a button
// without text, or a placeholder over 64 characters.
func readMarkup(p url.Values) (markup, string) {
	v := p.Get("reply_markup")
	if v == "" {
		return markup{}, ""
	}
	var raw struct {
		Inline      *[][]tgbotapi.InlineKeyboardButton `json:"inline_keyboard"`
		Keyboard    *[][]tgbotapi.KeyboardButton       `json:"keyboard"`
		Remove      bool                               `json:"remove_keyboard"`
		OneTime     bool                               `json:"one_time_keyboard"`
		Resize      bool                               `json:"resize_keyboard"`
		Placeholder string                             `json:"input_field_placeholder"`
	}
	if json.Unmarshal([]byte(v), &raw) != nil {
		return markup{}, "can't parse reply keyboard markup JSON object"
	}
	var mk markup
	switch {
	case raw.Inline != nil:
		for _, row := range *raw.Inline {
			for _, b := range row {
				if b.CallbackData != nil && len(*b.CallbackData) > maxCallbackLen {
					return markup{}, "BUTTON_DATA_INVALID"
				}
			}
		}
		mk.inline = *raw.Inline
	case raw.Keyboard != nil:
		n := 0
		for _, row := range *raw.Keyboard {
			for _, b := range row {
				if b.Text == "" {
					return markup{}, "keyboard button text is empty"
				}
				n++
			}
		}
		if n == 0 {
			return markup{}, "reply keyboard must have at least one button"
		}
		if utf16Len(raw.Placeholder) > 64 {
			return markup{}, "input field placeholder is too long"
		}
		mk.reply = &tgbotapi.ReplyKeyboardMarkup{Keyboard: *raw.Keyboard, OneTimeKeyboard: raw.OneTime,
			ResizeKeyboard: raw.Resize, InputFieldPlaceholder: raw.Placeholder}
	case raw.Remove:
		mk.remove = true
	}
	return mk, ""
}

// messageJSON is a Message as the server answers it: the library's, with
// the fields of later Bot API versions it lacks.
type messageJSON struct {
	tgbotapi.Message
	MessageThreadID      int    `json:"message_thread_id,omitempty"`
	IsTopicMessage       bool   `json:"is_topic_message,omitempty"`
	BusinessConnectionID string `json:"business_connection_id,omitempty"`
	EffectID             string `json:"effect_id,omitempty"`
	HasProtectedContent  bool   `json:"has_protected_content,omitempty"`
}

// messageResult returns m as the result of the call that sent or edited
// it: a Message as Telegram describes it.
func (s *Server) messageResult(m SentMessage) messageJSON {
	bot := s.bot
	result := tgbotapi.Message{
		MessageID: m.MessageID,
		From:      &bot,
		Date:      int(m.At.Unix()),
		Chat:      s.chat(m.ChatID),
	}
	out := messageJSON{MessageThreadID: m.ThreadID, IsTopicMessage: m.ThreadID != 0, BusinessConnectionID: m.BusinessConnectionID,
		EffectID: m.EffectID, HasProtectedContent: m.Protected}
	if !m.EditedAt.IsZero() {
		result.EditDate = int(m.EditedAt.Unix())
	}
	if m.ReplyToMessageID != 0 && m.ReplyChatID == "" {
		result.ReplyToMessage = &tgbotapi.Message{MessageID: m.ReplyToMessageID, Chat: result.Chat}
	}
	if m.Keyboard != nil {
		result.ReplyMarkup = &tgbotapi.InlineKeyboardMarkup{InlineKeyboard: m.Keyboard}
	}
	if m.ReplyKeyboard != nil || m.RemoveKeyboard {
		result.ReplyMarkup = nil // a message shows only an inline keyboard
	}
	result.MediaGroupID = m.MediaGroupID
	switch m.Kind {
	case "text":
		result.Text = m.Text
		result.Entities = m.Entities
	case "invoice":
		if inv := m.Invoice; inv != nil {
			result.Invoice = &tgbotapi.Invoice{Title: inv.Title, Description: inv.Description, Currency: inv.Currency, TotalAmount: inv.total()}
		}
	default:
		result.Caption = m.Text
		result.CaptionEntities = m.Entities
		setMedia(&result, m.Kind, m.FileID, m.FileName, "", len(m.FileData), 0, 0, 0)
	}
	out.Message = result
	return out
}

// setMedia sets the file of kind in msg, as Telegram describes one.
func setMedia(msg *tgbotapi.Message, kind, fileID, name, mimeType string, size, width, height, secs int) {
	uid := "u" + fileID
	switch kind {
	case "photo":
		msg.Photo = []tgbotapi.PhotoSize{{FileID: fileID, FileUniqueID: uid, Width: width, Height: height, FileSize: size}}
	case "document":
		msg.Document = &tgbotapi.Document{FileID: fileID, FileUniqueID: uid, FileName: name, MimeType: mimeType, FileSize: size}
	case "video":
		msg.Video = &tgbotapi.Video{FileID: fileID, FileUniqueID: uid, FileName: name, MimeType: mimeType, FileSize: size, Width: width, Height: height, Duration: secs}
	case "audio":
		msg.Audio = &tgbotapi.Audio{FileID: fileID, FileUniqueID: uid, FileName: name, MimeType: mimeType, FileSize: size, Duration: secs}
	case "voice":
		msg.Voice = &tgbotapi.Voice{FileID: fileID, FileUniqueID: uid, MimeType: mimeType, FileSize: size, Duration: secs}
	case "animation":
		// As on Telegram, an animation is also described as a document.
		msg.Animation = &tgbotapi.Animation{FileID: fileID, FileUniqueID: uid, FileName: name, MimeType: mimeType, FileSize: size, Width: width, Height: height, Duration: secs}
		msg.Document = &tgbotapi.Document{FileID: fileID, FileUniqueID: uid, FileName: name, MimeType: mimeType, FileSize: size}
	case "sticker":
		msg.Sticker = &tgbotapi.Sticker{FileID: fileID, FileUniqueID: uid, Width: width, Height: height, FileSize: size}
	case "video_note":
		msg.VideoNote = &tgbotapi.VideoNote{FileID: fileID, FileUniqueID: uid, Length: width, Duration: secs, FileSize: size}
	}
}

func (s *Server) answerCallback(w http.ResponseWriter, p url.Values) {
	id := p.Get("callback_query_id")
	if id == "" {
		badRequest(w, descQueryTooOld)
		return
	}
	if utf16Len(p.Get("text")) > 200 {
		badRequest(w, "MESSAGE_TOO_LONG")
		return
	}
	s.mu.Lock()
	for _, a := range s.answers {
		if a.CallbackQueryID == id {
			s.mu.Unlock()
			badRequest(w, descQueryTooOld) // answered before
			return
		}
	}
	s.answers = append(s.answers, CallbackAnswer{
		CallbackQueryID: id, Text: p.Get("text"), ShowAlert: p.Get("show_alert") == "true", URL: p.Get("url"), At: time.Now(),
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

// ofChat returns, in order, the records of list whose chat is chatID,
// each through clone (a copy the caller may keep) if it is not nil.
func ofChat[T any](list []T, chatID int64, chat func(T) int64, clone func(T) T) []T {
	var out []T
	for _, r := range list {
		if chat(r) == chatID {
			if clone != nil {
				r = clone(r)
			}
			out = append(out, r)
		}
	}
	return out
}
