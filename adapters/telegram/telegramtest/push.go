package telegramtest

import (
	"encoding/json"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// PushJSON queues an update of kind (its field: "message_reaction",
// "chat_boost", any kind of Bot API 10.2 or later) with payload, marshalled
// to JSON (a json.RawMessage or []byte goes as it is), under the next free
// update ID, which it returns: the way to send a bot any update, in the
// shape the Bot API documents, whatever the library's types know.
func (s *Server) PushJSON(kind string, payload any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextUpdateID
	s.storeLocked(id, updateJSON(id, kind, payload))
	return id
}

// UpdateJSON is [Server.PushJSON] without the queueing: it returns the
// update with the next free update ID, taking it, for the caller to
// deliver (to a webhook, say).
func (s *Server) UpdateJSON(kind string, payload any) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextUpdateID
	s.nextUpdateID++
	return updateJSON(id, kind, payload)
}

// updateJSON returns {"update_id":id,"kind":payload}.
func updateJSON(id int, kind string, payload any) []byte {
	var raw []byte
	switch p := payload.(type) {
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	default:
		var err error
		if raw, err = json.Marshal(payload); err != nil {
			raw = []byte("null")
		}
	}
	if !json.Valid(raw) {
		raw = []byte("null")
	}
	k, _ := json.Marshal(kind)
	out := []byte(`{"update_id":` + strconv.Itoa(id) + `,`)
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, raw...)
	return append(out, '}')
}

// chatJSON describes chatID in an update: as [Server.chat] does, a
// forum supergroup when forum is set.
func (s *Server) chatJSON(chatID int64, forum bool) map[string]any {
	c := s.chat(chatID)
	m := map[string]any{"id": c.ID, "type": c.Type}
	if c.Title != "" {
		m["title"] = c.Title
	}
	if c.UserName != "" {
		m["username"] = c.UserName
	}
	if forum && c.Type == "supergroup" {
		m["is_forum"] = true
	}
	return m
}

// SendTopicMessage makes from send text to the forum topic threadID of
// the supergroup chatID, as Telegram delivers it: with message_thread_id
// and is_topic_message set, and replying to the topic's first message
// (threadID), as every message of a topic that replies to no other does.
// It queues the update and returns its ID.
func (s *Server) SendTopicMessage(chatID int64, threadID int, from tgbotapi.User, text string) int {
	id, _ := s.topicMessage(true, chatID, threadID, from, text)
	return id
}

// TopicMessageUpdate is [Server.SendTopicMessage] without the queueing:
// it returns the update, with the next free update ID, for the caller to
// deliver (to a webhook, say).
func (s *Server) TopicMessageUpdate(chatID int64, threadID int, from tgbotapi.User, text string) []byte {
	_, raw := s.topicMessage(false, chatID, threadID, from, text)
	return raw
}

func (s *Server) topicMessage(queue bool, chatID int64, threadID int, from tgbotapi.User, text string) (int, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := s.chatJSON(chatID, true)
	id := s.nextMessageIDLocked(chatID)
	s.userMsgs[msgKey{chatID, id}] = true
	now := time.Now().Unix()
	msg := map[string]any{
		"message_id": id, "message_thread_id": threadID, "is_topic_message": true,
		"from": from, "chat": chat, "date": now, "text": text,
		"reply_to_message": map[string]any{"message_id": threadID, "message_thread_id": threadID, "chat": chat, "date": now,
			"forum_topic_created": map[string]any{"name": "Topic " + strconv.Itoa(threadID), "icon_color": 7322096}},
	}
	if n := commandLength(text); n > 0 {
		msg["entities"] = []map[string]any{{"type": "bot_command", "offset": 0, "length": n}}
	}
	return s.emitLocked(queue, "message", msg)
}

// emitLocked makes the update of kind with payload under the next free
// update ID, queues it if queue is set (taking the ID either way), and
// returns its ID and JSON. s.mu must be held.
func (s *Server) emitLocked(queue bool, kind string, payload any) (int, []byte) {
	id := s.nextUpdateID
	raw := updateJSON(id, kind, payload)
	if queue {
		s.storeLocked(id, raw)
	} else {
		s.nextUpdateID++
	}
	return id, raw
}

// AddBusinessConnection makes the server know the business connection
// id of the account user, serving the private chat with the user, so that
// sends through it succeed; no update is sent (see
// [Server.PushBusinessConnection]). Repeated calls replace it.
func (s *Server) AddBusinessConnection(id string, user tgbotapi.User, canReply bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.business[id] = BusinessConnection{ID: id, User: user, UserChatID: user.ID, Enabled: true, CanReply: canReply}
}

// PushBusinessConnection makes the account user connect the bot (or
// change or end the connection, with enabled false) as the business
// connection id, and queues the business_connection update. It returns
// the update's ID.
func (s *Server) PushBusinessConnection(id string, user tgbotapi.User, enabled, canReply bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.business[id] = BusinessConnection{ID: id, User: user, UserChatID: user.ID, Enabled: enabled, CanReply: canReply}
	upd := s.nextUpdateID
	s.storeLocked(upd, updateJSON(upd, "business_connection", map[string]any{
		"id": id, "user": user, "user_chat_id": user.ID, "date": time.Now().Unix(),
		"rights": map[string]any{"can_reply": canReply}, "is_enabled": enabled,
	}))
	return upd
}

// SendBusinessMessage makes a customer, from, write text to the business
// account of the connection id, in their private chat (from.ID), as a
// business_message; the connection is made known if it is not
// (see [Server.AddBusinessConnection]). It returns the update's ID.
func (s *Server) SendBusinessMessage(id string, from tgbotapi.User, text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.business[id]; !ok {
		s.business[id] = BusinessConnection{ID: id, UserChatID: from.ID, Enabled: true, CanReply: true}
	}
	chatID := from.ID
	mid := s.nextMessageIDLocked(chatID)
	s.userMsgs[msgKey{chatID, mid}] = true
	upd := s.nextUpdateID
	s.storeLocked(upd, updateJSON(upd, "business_message", map[string]any{
		"message_id": mid, "business_connection_id": id, "from": from, "chat": s.chatJSON(chatID, false),
		"date": time.Now().Unix(), "text": text,
	}))
	return upd
}

// PushReaction makes from change their reaction to the message messageID
// of chatID from the emoji old to the emoji new, and queues the
// message_reaction update. It returns the update's ID.
func (s *Server) PushReaction(chatID int64, messageID int, from tgbotapi.User, old, new []string) int {
	id, _ := s.reaction(true, chatID, messageID, from, old, new)
	return id
}

// ReactionUpdate is [Server.PushReaction] without the queueing, as
// [Server.TopicMessageUpdate] is.
func (s *Server) ReactionUpdate(chatID int64, messageID int, from tgbotapi.User, old, new []string) []byte {
	_, raw := s.reaction(false, chatID, messageID, from, old, new)
	return raw
}

func (s *Server) reaction(queue bool, chatID int64, messageID int, from tgbotapi.User, old, new []string) (int, []byte) {
	list := func(es []string) []map[string]any {
		out := []map[string]any{}
		for _, e := range es {
			out = append(out, map[string]any{"type": "emoji", "emoji": e})
		}
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emitLocked(queue, "message_reaction", map[string]any{
		"chat": s.chatJSON(chatID, false), "message_id": messageID, "user": from, "date": time.Now().Unix(),
		"old_reaction": list(old), "new_reaction": list(new),
	})
}

// PushMyChatMember makes from change the bot's status in chatID from old
// to new ("member", "kicked", "left", "administrator", …), and queues the
// my_chat_member update: in a private chat, "member" to "kicked" is the
// user blocking the bot. It returns the update's ID.
func (s *Server) PushMyChatMember(chatID int64, from tgbotapi.User, old, new string) int {
	return s.pushMember("my_chat_member", chatID, from, s.bot, old, new)
}

// PushChatMember makes from change member's status in chatID from old to
// new, and queues the chat_member update. It returns the update's ID.
func (s *Server) PushChatMember(chatID int64, from, member tgbotapi.User, old, new string) int {
	return s.pushMember("chat_member", chatID, from, member, old, new)
}

func (s *Server) pushMember(kind string, chatID int64, from, member tgbotapi.User, old, new string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	upd := s.nextUpdateID
	s.storeLocked(upd, updateJSON(upd, kind, map[string]any{
		"chat": s.chatJSON(chatID, false), "from": from, "date": time.Now().Unix(),
		"old_chat_member": map[string]any{"status": old, "user": member},
		"new_chat_member": map[string]any{"status": new, "user": member},
	}))
	return upd
}

// PushJoinRequest makes from ask to join chatID, and queues the
// chat_join_request update; the bot may approve or decline it once. It
// returns the update's ID.
func (s *Server) PushJoinRequest(chatID int64, from tgbotapi.User, bio string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.joins[joinKey{chatID, from.ID}] = true
	upd := s.nextUpdateID
	s.storeLocked(upd, updateJSON(upd, "chat_join_request", map[string]any{
		"chat": s.chatJSON(chatID, false), "from": from, "user_chat_id": from.ID, "date": time.Now().Unix(), "bio": bio,
	}))
	return upd
}

// PushPreCheckout makes from confirm an order of amount in currency
// (CurrencyStars: "XTR") for the invoice with payload, and queues the
// pre_checkout_query update, which the bot must answer once. It returns
// the query's ID.
func (s *Server) PushPreCheckout(from tgbotapi.User, currency string, amount int, payload string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inlineSeq++
	id := "pcq" + strconv.Itoa(s.inlineSeq)
	s.checkoutIDs[id] = true
	upd := s.nextUpdateID
	s.storeLocked(upd, updateJSON(upd, "pre_checkout_query", map[string]any{
		"id": id, "from": from, "currency": currency, "total_amount": amount, "invoice_payload": payload,
	}))
	return id
}

// PushSuccessfulPayment makes from pay amount in currency for the invoice
// with payload in chatID, and queues the message with successful_payment;
// the bot may refund it ([Server.Refunds]). It returns the payment's
// telegram_payment_charge_id.
func (s *Server) PushSuccessfulPayment(chatID int64, from tgbotapi.User, currency string, amount int, payload string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chargeSeq++
	charge := "stx" + strconv.Itoa(s.chargeSeq)
	s.charges[charge] = chargeOf(from.ID, amount)
	mid := s.nextMessageIDLocked(chatID)
	upd := s.nextUpdateID
	s.storeLocked(upd, updateJSON(upd, "message", map[string]any{
		"message_id": mid, "from": from, "chat": s.chatJSON(chatID, false), "date": time.Now().Unix(),
		"successful_payment": map[string]any{"currency": currency, "total_amount": amount, "invoice_payload": payload,
			"telegram_payment_charge_id": charge, "provider_payment_charge_id": ""},
	}))
	return charge
}

func chargeOf(userID int64, amount int) charge { return charge{userID: userID, amount: amount} }
