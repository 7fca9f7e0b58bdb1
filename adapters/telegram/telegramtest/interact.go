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

// Deletion is a deleteMessage call the server carried out, as
// [Server.Deletions] returns it. The zero value describes none.
type Deletion struct {
	ChatID    int64
	MessageID int
	At        time.Time
	// BusinessConnectionID is the connection a deleteBusinessMessages
	// went through, or empty for a deleteMessage.
	BusinessConnectionID string
}

// deleteMessage handles deleteMessage: the bot's own messages and users'
// messages can be deleted, once; any other message is "message to delete
// not found", as on Telegram. A deleted message is gone from
// [Server.Message] and can no longer be edited.
func (s *Server) deleteMessage(w http.ResponseWriter, p url.Values) {
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	id, err := strconv.Atoi(p.Get("message_id"))
	if err != nil || id <= 0 {
		badRequest(w, "message identifier is not specified")
		return
	}
	key := msgKey{chatID, id}
	s.mu.Lock()
	_, bots := s.current[key]
	if s.deleted[key] || !bots && !s.userMsgs[key] {
		s.mu.Unlock()
		badRequest(w, "message to delete not found")
		return
	}
	delete(s.current, key)
	s.deleted[key] = true
	s.deletions = append(s.deletions, Deletion{ChatID: chatID, MessageID: id, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

// Deletions returns, in order, the messages deleted in chatID.
func (s *Server) Deletions(chatID int64) []Deletion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofChat(s.deletions, chatID, func(d Deletion) int64 { return d.ChatID }, nil)
}

// ChatAction is a sendChatAction call the server accepted, as
// [Server.ChatActions] returns it.
type ChatAction struct {
	ChatID int64
	Action string
	At     time.Time
	// ThreadID is the message_thread_id sent, or 0, and
	// BusinessConnectionID the business_connection_id, or empty.
	ThreadID             int
	BusinessConnectionID string
}

// chatActions are the actions sendChatAction accepts.
var chatActions = map[string]bool{
	"typing": true, "upload_photo": true, "record_video": true, "upload_video": true, "record_voice": true,
	"upload_voice": true, "upload_document": true, "choose_sticker": true, "find_location": true,
	"record_video_note": true, "upload_video_note": true,
}

// sendChatAction handles sendChatAction: a known action in a chat.
func (s *Server) sendChatAction(w http.ResponseWriter, p url.Values) {
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	action := p.Get("action")
	if !chatActions[action] {
		badRequest(w, "wrong parameter action in request")
		return
	}
	s.mu.Lock()
	thread, _ := strconv.Atoi(p.Get("message_thread_id"))
	s.actions = append(s.actions, ChatAction{ChatID: chatID, Action: action, At: time.Now(), ThreadID: thread, BusinessConnectionID: p.Get("business_connection_id")})
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

// ChatActions returns, in order, the chat actions shown in chatID.
func (s *Server) ChatActions(chatID int64) []ChatAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofChat(s.actions, chatID, func(a ChatAction) int64 { return a.ChatID }, nil)
}

// PushInlineQuery makes from type query as an inline query ("@bot query")
// in a chat of type chatType ("sender", "private", "group",
// "supergroup", "channel", or "" for unknown), and queues the update. It
// returns the query's ID, which [Server.InlineAnswers] names once the bot
// answered.
func (s *Server) PushInlineQuery(from tgbotapi.User, query, chatType string) string {
	u := s.InlineQueryUpdate(from, query, chatType)
	s.PushUpdate(u)
	return u.InlineQuery.ID
}

// InlineQueryUpdate is [Server.PushInlineQuery] without the queueing: the
// server knows the query, which the bot may answer, and the caller
// delivers the update (to a webhook, say). Its UpdateID is 0.
func (s *Server) InlineQueryUpdate(from tgbotapi.User, query, chatType string) tgbotapi.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inlineSeq++
	id := "iq" + strconv.Itoa(s.inlineSeq)
	s.inlineIDs[id] = true
	return tgbotapi.Update{InlineQuery: &tgbotapi.InlineQuery{ID: id, From: &from, Query: query, ChatType: chatType}}
}

// PushChosenInlineResult makes from choose the result resultID of the
// answer to query, and queues the update (which Telegram sends when inline
// feedback is on). It returns the update's ID.
func (s *Server) PushChosenInlineResult(from tgbotapi.User, resultID, query string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushLocked(tgbotapi.Update{ChosenInlineResult: &tgbotapi.ChosenInlineResult{ResultID: resultID, From: &from, Query: query}})
}

// InlineAnswer is an answerInlineQuery call the server accepted, as
// [Server.InlineAnswers] returns it: a copy, the caller's own.
type InlineAnswer struct {
	InlineQueryID string
	Results       []InlineResult
	CacheTime     int // seconds
	IsPersonal    bool
	NextOffset    string
	At            time.Time
}

// InlineResult is one result of an [InlineAnswer], as the bot sent it.
type InlineResult struct {
	// Type and ID are the result's type ("article", "photo", "gif",
	// "video", "audio", "voice", "document", "sticker") and ID.
	Type, ID string
	// Title, Description, Caption and ParseMode are as sent, as is
	// Text, the message_text of an article.
	Title, Description, Caption, ParseMode, Text string
	// URL is the file's URL (photo_url, gif_url, …), FileID its file ID
	// (photo_file_id, …), ThumbnailURL the thumbnail_url.
	URL, FileID, ThumbnailURL string
	// Keyboard is the inline keyboard under the message the result sends.
	Keyboard [][]tgbotapi.InlineKeyboardButton
	// Raw is the result's JSON object, as sent.
	Raw json.RawMessage
}

// answerInline handles answerInlineQuery: at most 50 results, each with a
// type, an ID of 1 to 64 bytes unique in the answer and what its type
// needs (an article's title and message_text, a file's URL or file ID), to
// a query the server sent (PushInlineQuery, or an update with an
// inline_query pushed with PushUpdate) and no answer has answered yet.
func (s *Server) answerInline(w http.ResponseWriter, p url.Values) {
	id := p.Get("inline_query_id")
	var raws []json.RawMessage
	if json.Unmarshal([]byte(p.Get("results")), &raws) != nil {
		badRequest(w, "can't parse inline query results JSON object")
		return
	}
	if len(raws) > 50 {
		badRequest(w, "RESULTS_TOO_MUCH")
		return
	}
	a := InlineAnswer{InlineQueryID: id, IsPersonal: p.Get("is_personal") == "true", NextOffset: p.Get("next_offset")}
	a.CacheTime, _ = strconv.Atoi(p.Get("cache_time"))
	seen := map[string]bool{}
	for _, raw := range raws {
		r, desc := readInlineResult(raw)
		if desc == "" && seen[r.ID] {
			desc = "RESULT_ID_DUPLICATE"
		}
		if desc != "" {
			badRequest(w, desc)
			return
		}
		seen[r.ID] = true
		a.Results = append(a.Results, r)
	}
	s.mu.Lock()
	known := s.inlineIDs[id]
	for _, old := range s.inline {
		if old.InlineQueryID == id {
			known = false // answered before
		}
	}
	if !known {
		s.mu.Unlock()
		badRequest(w, descQueryTooOld)
		return
	}
	a.At = time.Now()
	s.inline = append(s.inline, a)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

// readInlineResult reads one result of answerInlineQuery, or returns the
// description of the Bad Request it earns.
func readInlineResult(raw json.RawMessage) (InlineResult, string) {
	var r struct {
		Type         string `json:"type"`
		ID           string `json:"id"`
		Title        string `json:"title"`
		Description  string `json:"description"`
		Caption      string `json:"caption"`
		ParseMode    string `json:"parse_mode"`
		ThumbnailURL string `json:"thumbnail_url"`
		Content      *struct {
			Text      string `json:"message_text"`
			ParseMode string `json:"parse_mode"`
		} `json:"input_message_content"`
		Markup *tgbotapi.InlineKeyboardMarkup `json:"reply_markup"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return InlineResult{}, "can't parse inline query result"
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	str := func(k string) string {
		var v string
		_ = json.Unmarshal(fields[k], &v)
		return v
	}
	out := InlineResult{Type: r.Type, ID: r.ID, Title: r.Title, Description: r.Description, Caption: r.Caption,
		ParseMode: r.ParseMode, ThumbnailURL: r.ThumbnailURL, Raw: append(json.RawMessage(nil), raw...)}
	if r.Markup != nil {
		out.Keyboard = r.Markup.InlineKeyboard
	}
	if r.ID == "" || len(r.ID) > 64 {
		return InlineResult{}, "RESULT_ID_INVALID"
	}
	if r.Type == "article" {
		if r.Title == "" || r.Content == nil || r.Content.Text == "" {
			return InlineResult{}, "ARTICLE_TITLE_EMPTY"
		}
		out.Text, out.ParseMode = r.Content.Text, r.Content.ParseMode
		return out, ""
	}
	field := map[string]string{"photo": "photo", "gif": "gif", "video": "video", "audio": "audio",
		"voice": "voice", "document": "document", "sticker": "sticker"}[r.Type]
	if field == "" {
		return InlineResult{}, "RESULT_TYPE_INVALID"
	}
	out.URL, out.FileID = str(field+"_url"), str(field+"_file_id")
	if out.URL == "" && out.FileID == "" {
		return InlineResult{}, "WEBDOCUMENT_URL_EMPTY"
	}
	return out, ""
}

// InlineAnswers returns the answers to inline queries the server
// accepted, in order.
func (s *Server) InlineAnswers() []InlineAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]InlineAnswer, len(s.inline))
	for i, a := range s.inline {
		a.Results = append([]InlineResult(nil), a.Results...)
		for j := range a.Results {
			a.Results[j].Keyboard = cloneKeyboard(a.Results[j].Keyboard)
		}
		out[i] = a
	}
	return out
}

// WaitInlineAnswer waits until the inline query id was answered and
// returns the answer; its errors are [Server.WaitUntil]'s.
func (s *Server) WaitInlineAnswer(ctx context.Context, id string) (InlineAnswer, error) {
	var got InlineAnswer
	err := s.WaitUntil(ctx, func() bool {
		for _, a := range s.InlineAnswers() {
			if a.InlineQueryID == id {
				got = a
				return true
			}
		}
		return false
	})
	return got, err
}
