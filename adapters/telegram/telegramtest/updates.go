package telegramtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

// maxUpdates is the most updates one getUpdates call returns, as on Telegram.
const maxUpdates = 100

// ChatType returns the Telegram chat type a chat ID stands for in this fake:
// "private" for positive IDs (a user), "supergroup" for IDs below
// -1000000000000 (Telegram's -100… prefix), and "group" for other negative
// IDs. A channel given with [WithChannel] is a "channel" in the server's
// answers whatever its ID.
func ChatType(chatID int64) string {
	switch {
	case chatID > 0:
		return "private"
	case chatID < -1_000_000_000_000:
		return "supergroup"
	default:
		return "group"
	}
}

// chat describes chatID as Telegram does in a message: by [ChatType], or
// as a channel for one given with [WithChannel].
func (s *Server) chat(chatID int64) *tgbotapi.Chat {
	c := &tgbotapi.Chat{ID: chatID, Type: ChatType(chatID)}
	if name, ok := s.chanName[chatID]; ok {
		c.Type, c.UserName = "channel", name[1:]
	}
	if c.Type != "private" {
		c.Title = "Chat " + strconv.FormatInt(chatID, 10)
	}
	return c
}

// nextMessageIDLocked returns the next message ID in a chat; s.mu must be
// held.
func (s *Server) nextMessageIDLocked(chatID int64) int {
	s.messageIDs[chatID]++
	return s.messageIDs[chatID]
}

// SendUserMessage makes from send text to the chat chatID (see [ChatType]
// for the chat's type) and queues the update for getUpdates, with a
// bot_command entity when text starts with a command, as Telegram marks it.
// It returns the update's ID.
func (s *Server) SendUserMessage(chatID int64, from tgbotapi.User, text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushLocked(s.userMessageLocked(chatID, from, text))
}

// Say is [Server.SendUserMessage] with Herald's own user (see
// [TelegramUser]). A bot's tests need not import the Telegram library.
func (s *Server) Say(chatID int64, from platform.User, text string) int {
	return s.SendUserMessage(chatID, TelegramUser(from), text)
}

// SayFile is [Server.SendUserFile] with Herald's own user (see
// [TelegramUser]): from sends f to the chat chatID. It returns the
// update's ID.
func (s *Server) SayFile(chatID int64, from platform.User, f UserFile) int {
	return s.SendUserFile(chatID, TelegramUser(from), f)
}

// Press is [Server.PushCallback] with Herald's own user (see
// [TelegramUser]): from presses the inline button with callback data data
// under the bot's message messageID in chat chatID (a [platform.SendResult]'s
// MessageID, in decimal, or a [SentMessage]'s MessageID). It returns
// the callback query's ID.
func (s *Server) Press(chatID int64, from platform.User, messageID int, data string) string {
	return s.PushCallback(chatID, TelegramUser(from), messageID, data)
}

// TelegramUser returns Herald's user u as the Telegram library's: u.ID is
// the user's Telegram ID in decimal (one that does not parse is 0), Name
// their first name and Username their username. With it a test passes
// Herald's users to the methods that take the library's, without
// importing the library:
//
//	srv.PushMyChatMember(7, telegramtest.TelegramUser(ann), "member", "kicked") // Ann blocks the bot
func TelegramUser(u platform.User) tgbotapi.User {
	id, _ := strconv.ParseInt(u.ID, 10, 64)
	return tgbotapi.User{ID: id, FirstName: u.Name, UserName: u.Username, IsBot: u.IsBot}
}

// UserMessageUpdate is [Server.SendUserMessage] without the queueing: the
// server knows the message (the bot may react to it, delete it), and the
// caller delivers the update (to a webhook, say). Its UpdateID is the
// next free one, taken.
func (s *Server) UserMessageUpdate(chatID int64, from tgbotapi.User, text string) tgbotapi.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.userMessageLocked(chatID, from, text)
	u.UpdateID = s.nextUpdateID
	s.nextUpdateID++
	return u
}

// userMessageLocked returns the update of from's message text in chatID,
// with UpdateID 0, and records the message; s.mu must be held.
func (s *Server) userMessageLocked(chatID int64, from tgbotapi.User, text string) tgbotapi.Update {
	msg := &tgbotapi.Message{
		MessageID: s.nextMessageIDLocked(chatID),
		From:      &from,
		Date:      int(time.Now().Unix()),
		Chat:      s.chat(chatID),
		Text:      text,
	}
	if n := commandLength(text); n > 0 {
		msg.Entities = []tgbotapi.MessageEntity{{Type: "bot_command", Offset: 0, Length: n}}
	}
	s.userMsgs[msgKey{chatID, msg.MessageID}] = true
	return tgbotapi.Update{Message: msg}
}

// commandLength returns the length in UTF-16 code units of the command
// ("/name" or "/name@bot") text starts with, or 0.
func commandLength(text string) int {
	if len(text) < 2 || text[0] != '/' {
		return 0
	}
	i := 1
	for i < len(text) && isCommandByte(text[i]) {
		i++
	}
	if i == 1 {
		return 0
	}
	if i < len(text) && text[i] == '@' {
		j := i + 1
		for j < len(text) && isCommandByte(text[j]) {
			j++
		}
		if j > i+1 {
			i = j
		}
	}
	return len(utf16.Encode([]rune(text[:i])))
}

func isCommandByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// PushCallback makes from press an inline button with callback data data
// under the message messageID in chat chatID, and queues the update. It
// returns the callback query's ID, which [Server.CallbackAnswers] reports
// once the bot answered it. For a button under an inline message (with no
// chat), build the update yourself and use [Server.PushUpdate].
func (s *Server) PushCallback(chatID int64, from tgbotapi.User, messageID int, data string) string {
	u := s.CallbackUpdate(chatID, from, messageID, data)
	s.PushUpdate(u)
	return u.CallbackQuery.ID
}

// CallbackUpdate is [Server.PushCallback] without the queueing: it
// returns the update, with UpdateID 0, for the caller to deliver (to a
// webhook, say).
func (s *Server) CallbackUpdate(chatID int64, from tgbotapi.User, messageID int, data string) tgbotapi.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callbacks++
	id := "cb" + strconv.Itoa(s.callbacks)
	bot := s.bot
	return tgbotapi.Update{CallbackQuery: &tgbotapi.CallbackQuery{
		ID:           id,
		From:         &from,
		Message:      &tgbotapi.Message{MessageID: messageID, From: &bot, Date: int(time.Now().Unix()), Chat: s.chat(chatID)},
		ChatInstance: "ci" + strconv.FormatInt(chatID, 10),
		Data:         data,
	}}
}

// PushUpdate queues u for getUpdates and returns its ID. An UpdateID of 0 is
// replaced by the next free ID; a non-zero one is kept, and must be higher
// than the IDs before it, as Telegram's are.
func (s *Server) PushUpdate(u tgbotapi.Update) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushLocked(u)
}

func (s *Server) pushLocked(u tgbotapi.Update) int {
	if u.UpdateID == 0 {
		u.UpdateID = s.nextUpdateID
	}
	if q := u.InlineQuery; q != nil {
		s.inlineIDs[q.ID] = true
	}
	raw, err := json.Marshal(u)
	if err != nil { // tgbotapi.Update always marshals; keep the ID usable anyway
		raw = []byte(`{"update_id":` + strconv.Itoa(u.UpdateID) + `}`)
	}
	s.storeLocked(u.UpdateID, raw)
	return u.UpdateID
}

// PushRawUpdate queues raw, as it is, for getUpdates: a way to send a bot
// updates that do not decode (malformed JSON objects, wrong field types).
// raw must be one valid JSON value, since getUpdates embeds it in its
// answer; it is replaced by null otherwise. The update's ID is read from
// raw's "update_id" if it has one, and is the next free ID otherwise (the
// bot cannot see that ID, so it can only confirm the update by confirming a
// later one). PushRawUpdate returns the ID.
func (s *Server) PushRawUpdate(raw []byte) int {
	var head struct {
		UpdateID int `json:"update_id"`
	}
	_ = json.Unmarshal(raw, &head)
	if !json.Valid(raw) {
		raw = []byte("null")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := head.UpdateID
	if id == 0 {
		id = s.nextUpdateID
	}
	s.storeLocked(id, append(json.RawMessage(nil), raw...))
	return id
}

func (s *Server) storeLocked(id int, raw json.RawMessage) {
	if id >= s.nextUpdateID {
		s.nextUpdateID = id + 1
	}
	s.updates = append(s.updates, storedUpdate{id: id, raw: raw, epoch: s.epoch})
	s.notifyLocked()
}

// ResetUpdateIDs makes the updates pushed from now on count from next,
// which may be lower than the IDs before, as Telegram does after a bot
// received no update for about a week (go-telegram-bot-api issue #156:
// getUpdates with offset 727334708 answered update_id 117314199).
//
// As on Telegram, a getUpdates offset above every ID given out since the
// reset, that is, one a bot computed from the IDs before it, confirms the
// updates from before the reset but not the new ones, which it returns.
// An offset within the new IDs confirms by ID as usual. Call it with no
// update pending, as on Telegram, where a week without updates comes
// first: pending updates keep their IDs. Updates pushed with an explicit
// UpdateID keep it.
func (s *Server) ResetUpdateIDs(next int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	s.nextUpdateID = max(next, 1)
	s.notifyLocked()
}

// confirmsLocked reports whether a getUpdates offset confirms u. s.mu must
// be held.
func (s *Server) confirmsLocked(offset int, u storedUpdate) bool {
	if u.id >= offset {
		return false
	}
	// An offset from before the last reset (above every ID given out
	// since) does not confirm the updates after it.
	return !(s.epoch > 0 && u.epoch == s.epoch && offset > s.nextUpdateID)
}

// Pending returns how many updates wait to be confirmed by getUpdates.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// Offset returns the highest offset a getUpdates call has sent: every
// update with a lower ID is confirmed and gone, except those pushed after
// a [Server.ResetUpdateIDs] that the offsets sent since have not
// confirmed.
func (s *Server) Offset() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}

// WaitingPolls returns how many getUpdates calls are waiting for an update
// right now: a test can wait for a bot to be inside a long poll before it
// acts.
func (s *Server) WaitingPolls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitingPolls
}

// getUpdates answers a long poll: it confirms updates below offset, ends
// any long poll still waiting (which gets 409 Conflict, as on Telegram),
// and returns pending updates at once or waits up to timeout seconds for
// one.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string][]string) {
	get := func(k string) int {
		if v := p[k]; len(v) > 0 {
			n, _ := strconv.Atoi(v[0])
			return n
		}
		return 0
	}
	offset, limit, timeout := get("offset"), get("limit"), get("timeout")
	if limit <= 0 || limit > maxUpdates {
		limit = maxUpdates
	}
	timeout = max(timeout, 0)

	s.mu.Lock()
	if s.webhook.URL != "" {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first", nil)
		return
	}
	if offset > 0 {
		keep := s.updates[:0]
		for _, u := range s.updates {
			if !s.confirmsLocked(offset, u) {
				keep = append(keep, u)
			}
		}
		clear(s.updates[len(keep):])
		s.updates = keep
		s.offset = max(s.offset, offset)
	}
	close(s.pollKick)
	s.pollKick = make(chan struct{})
	kick := s.pollKick
	s.notifyLocked()

	timer := time.NewTimer(time.Duration(timeout) * time.Second)
	defer timer.Stop()
	waiting := false
	defer func() {
		if waiting {
			s.mu.Lock()
			s.waitingPolls--
			s.notifyLocked()
			s.mu.Unlock()
		}
	}()
	for {
		if n := min(len(s.updates), limit); n > 0 || timeout == 0 {
			out := make([]json.RawMessage, n)
			for i := range n {
				out[i] = s.updates[i].raw
			}
			s.mu.Unlock()
			writeResult(w, out)
			return
		}
		if !waiting {
			waiting = true
			s.waitingPolls++
			s.notifyLocked()
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-kick:
			writeError(w, http.StatusConflict, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", nil)
			return
		case <-timer.C:
			writeResult(w, []json.RawMessage{})
			return
		case <-r.Context().Done():
			return
		case <-s.closed:
			writeResult(w, []json.RawMessage{})
			return
		}
		s.mu.Lock()
	}
}
