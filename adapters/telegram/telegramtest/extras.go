package telegramtest

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"golang.org/x/time/rate"
)

// Call is a request the server received, as [Server.Calls] returns it:
// every method, known or not, failed or not. It is a copy.
type Call struct {
	Method string
	// ChatID is the request's chat_id, as [Request] has it.
	ChatID int64
	// Params are the request's parameters (uploaded files aside).
	Params url.Values
	At     time.Time
}

// Calls returns the requests for method the server received, in order;
// every request for an empty method.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			c.Params = cloneValues(c.Params)
			out = append(out, c)
		}
	}
	return out
}

// SetResult makes the server answer method, one it does not know (it
// answers those 404 "Not Found: method not found" otherwise), with result
// as its "result": for a bot's calls of methods by name. Repeated calls
// replace the result.
func (s *Server) SetResult(method string, result any) {
	raw, err := json.Marshal(result)
	if err != nil {
		raw = []byte("true")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results[method] = raw
}

// Draft is a sendMessageDraft call the server accepted, as [Server.Drafts]
// returns it.
type Draft struct {
	ChatID    int64
	ThreadID  int
	DraftID   int
	Text      string
	ParseMode string
	At        time.Time
}

// Drafts returns, in order, the message drafts shown in chatID.
func (s *Server) Drafts(chatID int64) []Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofChat(s.drafts, chatID, func(d Draft) int64 { return d.ChatID }, nil)
}

// sendMessageDraft handles sendMessageDraft: a draft of up to 4096
// characters with a non-zero draft_id, in a private chat only.
func (s *Server) sendMessageDraft(w http.ResponseWriter, p url.Values) {
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	d := Draft{ChatID: chatID, Text: p.Get("text"), ParseMode: p.Get("parse_mode")}
	var err error
	if d.DraftID, err = strconv.Atoi(p.Get("draft_id")); err != nil || d.DraftID == 0 {
		badRequest(w, "DRAFT_ID_INVALID")
		return
	}
	d.ThreadID, _ = strconv.Atoi(p.Get("message_thread_id"))
	switch {
	case ChatType(chatID) != "private" || s.chanName[chatID] != "":
		badRequest(w, "message drafts can be sent to private chats only")
		return
	case utf16Len(d.Text) > maxTextLen:
		badRequest(w, "MESSAGE_TOO_LONG")
		return
	case !validParseMode(d.ParseMode):
		badRequest(w, "unsupported parse_mode")
		return
	}
	d.At = time.Now()
	s.mu.Lock()
	s.drafts = append(s.drafts, d)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

// Reaction is a setMessageReaction call the server accepted, as
// [Server.Reactions] returns it: the bot's reaction to a message, now
// Emoji and CustomEmoji (none: removed).
type Reaction struct {
	ChatID      int64
	MessageID   int
	Emoji       []string
	CustomEmoji []string
	IsBig       bool
	At          time.Time
}

// Reactions returns, in order, the bot's reactions set in chatID.
func (s *Server) Reactions(chatID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ofChat(s.reactions, chatID, func(r Reaction) int64 { return r.ChatID }, nil)
}

// setMessageReaction handles setMessageReaction: a reaction (emoji or
// custom emoji; bots cannot give paid ones) to a message the chat has,
// the bot's or a user's.
func (s *Server) setMessageReaction(w http.ResponseWriter, p url.Values) {
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	id, err := strconv.Atoi(p.Get("message_id"))
	if err != nil || id <= 0 {
		badRequest(w, "MESSAGE_ID_INVALID")
		return
	}
	r := Reaction{ChatID: chatID, MessageID: id, IsBig: p.Get("is_big") == "true"}
	if v := p.Get("reaction"); v != "" {
		var rs []struct {
			Type          string `json:"type"`
			Emoji         string `json:"emoji"`
			CustomEmojiID string `json:"custom_emoji_id"`
		}
		if json.Unmarshal([]byte(v), &rs) != nil {
			badRequest(w, "can't parse reaction types JSON object")
			return
		}
		for _, x := range rs {
			switch {
			case x.Type == "emoji" && x.Emoji != "":
				r.Emoji = append(r.Emoji, x.Emoji)
			case x.Type == "custom_emoji" && x.CustomEmojiID != "":
				r.CustomEmoji = append(r.CustomEmoji, x.CustomEmojiID)
			default:
				badRequest(w, "REACTION_INVALID")
				return
			}
		}
	}
	key := msgKey{chatID, id}
	s.mu.Lock()
	_, bots := s.current[key]
	if !bots && !s.userMsgs[key] || s.deleted[key] {
		s.mu.Unlock()
		badRequest(w, "MESSAGE_ID_INVALID")
		return
	}
	r.At = time.Now()
	s.reactions = append(s.reactions, r)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

// sendInvoice handles sendInvoice: a title, description, payload,
// currency and prices (Telegram Stars, "XTR": exactly one price and no
// provider token), recorded as a message of Kind "invoice".
func (s *Server) sendInvoice(w http.ResponseWriter, p url.Values) {
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	inv := &Invoice{Title: p.Get("title"), Description: p.Get("description"), Payload: p.Get("payload"), Currency: p.Get("currency"),
		ProviderToken: p.Get("provider_token"), PhotoURL: p.Get("photo_url"), StartParameter: p.Get("start_parameter")}
	if json.Unmarshal([]byte(p.Get("prices")), &inv.Prices) != nil {
		badRequest(w, "can't parse prices JSON object")
		return
	}
	switch {
	case inv.Title == "" || inv.Description == "" || inv.Payload == "":
		badRequest(w, "INVOICE_TITLE_EMPTY")
		return
	case inv.Currency == "" || len(inv.Prices) == 0:
		badRequest(w, "CURRENCY_INVALID")
		return
	case inv.Currency == "XTR" && (len(inv.Prices) != 1 || inv.ProviderToken != ""):
		badRequest(w, "STARS_INVOICE_INVALID")
		return
	}
	m := SentMessage{Method: "sendInvoice", Kind: "invoice", ChatID: chatID, Text: inv.Title, Invoice: inv}
	if desc := s.readSendOptions(&m, p); desc != "" {
		badRequest(w, desc)
		return
	}
	var desc string
	if m.Keyboard, desc = readKeyboard(p); desc != "" {
		badRequest(w, desc)
		return
	}
	s.mu.Lock()
	s.recordLocked(&m)
	s.mu.Unlock()
	writeResult(w, s.messageResult(m))
}

// CheckoutAnswer is an answerPreCheckoutQuery call the server accepted,
// as [Server.CheckoutAnswers] returns it.
type CheckoutAnswer struct {
	QueryID      string
	OK           bool
	ErrorMessage string
	At           time.Time
}

// CheckoutAnswers returns the answers to pre-checkout queries, in order.
func (s *Server) CheckoutAnswers() []CheckoutAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CheckoutAnswer(nil), s.checkouts...)
}

// answerPreCheckout handles answerPreCheckoutQuery: once per query the
// server sent ([Server.PushPreCheckout]), with an error_message when ok is
// false.
func (s *Server) answerPreCheckout(w http.ResponseWriter, p url.Values) {
	a := CheckoutAnswer{QueryID: p.Get("pre_checkout_query_id"), OK: p.Get("ok") == "true", ErrorMessage: p.Get("error_message")}
	if !a.OK && a.ErrorMessage == "" {
		badRequest(w, "ERROR_MESSAGE_EMPTY")
		return
	}
	s.mu.Lock()
	known := s.checkoutIDs[a.QueryID]
	for _, old := range s.checkouts {
		if old.QueryID == a.QueryID {
			known = false
		}
	}
	if !known {
		s.mu.Unlock()
		badRequest(w, descQueryTooOld)
		return
	}
	a.At = time.Now()
	s.checkouts = append(s.checkouts, a)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

// Refund is a refundStarPayment call the server carried out.
type Refund struct {
	UserID   int64
	ChargeID string
	At       time.Time
}

// Refunds returns the refunds made, in order.
func (s *Server) Refunds() []Refund {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Refund(nil), s.refunds...)
}

// refundStarPayment handles refundStarPayment: a payment the server made
// ([Server.PushSuccessfulPayment]) by its user, once.
func (s *Server) refundStarPayment(w http.ResponseWriter, p url.Values) {
	userID, _ := strconv.ParseInt(p.Get("user_id"), 10, 64)
	charge := p.Get("telegram_payment_charge_id")
	s.mu.Lock()
	c, ok := s.charges[charge]
	switch {
	case !ok || c.userID != userID:
		s.mu.Unlock()
		badRequest(w, "CHARGE_NOT_FOUND")
		return
	case c.refunded:
		s.mu.Unlock()
		badRequest(w, "CHARGE_ALREADY_REFUNDED")
		return
	}
	c.refunded = true
	s.charges[charge] = c
	s.refunds = append(s.refunds, Refund{UserID: userID, ChargeID: charge, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

// CommandsSet is a setMyCommands call the server accepted, as
// [Server.CommandMenus] returns it.
type CommandsSet struct {
	Commands []tgbotapi.BotCommand
	// Scope is the scope's JSON as sent, or empty for the default scope,
	// and Language the language_code.
	Scope    string
	Language string
	At       time.Time
}

// CommandMenus returns the setMyCommands calls accepted, in order.
func (s *Server) CommandMenus() []CommandsSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CommandsSet, len(s.menus))
	for i, m := range s.menus {
		m.Commands = append([]tgbotapi.BotCommand(nil), m.Commands...)
		out[i] = m
	}
	return out
}

// setMyCommands handles setMyCommands: at most 100 commands, each named
// by 1 to 32 of a-z, 0-9 and "_", with a description of 1 to 256
// characters.
func (s *Server) setMyCommands(w http.ResponseWriter, p url.Values) {
	c := CommandsSet{Scope: p.Get("scope"), Language: p.Get("language_code")}
	if json.Unmarshal([]byte(p.Get("commands")), &c.Commands) != nil {
		badRequest(w, "can't parse commands JSON object")
		return
	}
	if len(c.Commands) > 100 {
		badRequest(w, "BOT_COMMANDS_TOO_MUCH")
		return
	}
	for _, cmd := range c.Commands {
		if n := utf16Len(cmd.Description); n == 0 || n > 256 || !validCommand(cmd.Command) {
			badRequest(w, "BOT_COMMAND_INVALID")
			return
		}
	}
	if c.Scope != "" {
		var sc struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(c.Scope), &sc) != nil || sc.Type == "" {
			badRequest(w, "can't parse BotCommandScope JSON object")
			return
		}
	}
	c.At = time.Now()
	s.mu.Lock()
	s.menus = append(s.menus, c)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

func validCommand(name string) bool {
	if name == "" || len(name) > 32 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// JoinAnswer is an approveChatJoinRequest or declineChatJoinRequest call
// the server carried out.
type JoinAnswer struct {
	ChatID   int64
	UserID   int64
	Approved bool
	At       time.Time
}

// JoinAnswers returns the answers to join requests, in order.
func (s *Server) JoinAnswers() []JoinAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]JoinAnswer(nil), s.joinAnswers...)
}

// answerJoin handles approveChatJoinRequest and declineChatJoinRequest: a
// request the server sent ([Server.PushJoinRequest]), once.
func (s *Server) answerJoin(w http.ResponseWriter, method string, p url.Values) {
	chatID, ok := s.chatID(p.Get("chat_id"))
	if !ok {
		badRequest(w, "chat not found")
		return
	}
	userID, _ := strconv.ParseInt(p.Get("user_id"), 10, 64)
	key := joinKey{chatID, userID}
	s.mu.Lock()
	if !s.joins[key] {
		s.mu.Unlock()
		badRequest(w, "HIDE_REQUESTER_MISSING")
		return
	}
	delete(s.joins, key)
	s.joinAnswers = append(s.joinAnswers, JoinAnswer{ChatID: chatID, UserID: userID, Approved: method == "approveChatJoinRequest", At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, true)
}

// joinKey names a join request: its chat and its user.
type joinKey struct{ chatID, userID int64 }

// deleteBusinessMessages handles deleteBusinessMessages: messages of a
// known business connection's chats, by ID.
func (s *Server) deleteBusinessMessages(w http.ResponseWriter, p url.Values) {
	b := p.Get("business_connection_id")
	var ids []int
	if json.Unmarshal([]byte(p.Get("message_ids")), &ids) != nil || len(ids) == 0 {
		badRequest(w, "can't parse message_ids JSON array")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	conn, ok := s.business[b]
	if !ok {
		badRequest(w, "BUSINESS_CONNECTION_INVALID")
		return
	}
	for _, id := range ids {
		key := msgKey{conn.UserChatID, id}
		if _, bots := s.current[key]; !bots && !s.userMsgs[key] || s.deleted[key] {
			badRequest(w, "message to delete not found")
			return
		}
	}
	for _, id := range ids {
		key := msgKey{conn.UserChatID, id}
		delete(s.current, key)
		s.deleted[key] = true
		s.deletions = append(s.deletions, Deletion{ChatID: conn.UserChatID, MessageID: id, At: time.Now(), BusinessConnectionID: b})
	}
	s.notifyLocked()
	writeResult(w, true)
}

// Limits is the send budget a server enforces when made [WithLimits]:
// token buckets of messages (sends, albums counting each item, edits,
// drafts and invoices) a second, per chat and, further, per group or
// channel, and a count of a group's messages in any 60 seconds. A request
// over the budget is answered 429 with the retry_after of the seconds
// until it would fit, rounded up, and counted ([Server.Throttled]). A zero
// rate or count means no limit of that kind.
type Limits struct {
	PerChatPerSecond  float64
	PerChatBurst      int
	PerGroupPerSecond float64
	PerGroupBurst     int
	// PerGroupPerMinute is how many messages a group or channel takes in
	// any 60 seconds, as Telegram counts its 20 a minute: a bucket of
	// PerGroupPerSecond lets its burst and a minute's refill through.
	PerGroupPerMinute int
}

// TelegramLimits returns the budget Telegram publishes: one message a
// second in a chat, in bursts of 3, and 20 in any minute in a group.
func TelegramLimits() Limits {
	return Limits{PerChatPerSecond: 1, PerChatBurst: 3, PerGroupPerMinute: 20}
}

// WithLimits makes the server enforce l (see [Limits]); without it the
// server takes every request at once, so tests stay fast. Repeated use
// keeps the last.
func WithLimits(l Limits) Option {
	return optionFunc(func(s *Server) { s.limits = &l })
}

// Throttled returns how many requests the server answered 429 for being
// over its [Limits].
func (s *Server) Throttled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.throttled
}

// limitedCost returns how many messages a request of method with params
// counts as against the Limits, 0 for one that does not count.
func limitedCost(method string, p url.Values) int {
	switch method {
	case "sendMessage", "sendPhoto", "sendDocument", "sendVideo", "sendAudio", "sendVoice", "sendAnimation",
		"sendSticker", "sendVideoNote", "editMessageText", "editMessageCaption", "sendMessageDraft", "sendInvoice":
		return 1
	case "sendMediaGroup":
		var media []json.RawMessage
		_ = json.Unmarshal([]byte(p.Get("media")), &media)
		return max(len(media), 1)
	}
	return 0
}

// throttle returns the 429 for req if it is over the Limits, taking its
// tokens otherwise; nil without limits.
func (s *Server) throttle(req Request) *Fault {
	if s.limits == nil || req.ChatID == 0 {
		return nil
	}
	n := limitedCost(req.Method, req.Params)
	if n == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	l := s.limits
	var lims []*rate.Limiter
	get := func(m map[int64]*rate.Limiter, r float64, burst int) {
		if r <= 0 {
			return
		}
		lim := m[req.ChatID]
		if lim == nil {
			lim = rate.NewLimiter(rate.Limit(r), max(burst, 1))
			m[req.ChatID] = lim
		}
		lims = append(lims, lim)
	}
	get(s.chatBuckets, l.PerChatPerSecond, l.PerChatBurst)
	if req.ChatID < 0 {
		get(s.groupBuckets, l.PerGroupPerSecond, l.PerGroupBurst)
	}
	var wait time.Duration
	var minute []time.Time // the group's messages in the last minute, if it counts them
	if req.ChatID < 0 && l.PerGroupPerMinute > 0 {
		minute = s.groupMinute[req.ChatID]
		for len(minute) > 0 && !minute[0].After(now.Add(-time.Minute)) {
			minute = minute[1:]
		}
		s.groupMinute[req.ChatID] = minute
		if over := len(minute) + n - l.PerGroupPerMinute; over > 0 {
			// Fits once the over oldest left the minute (or never: more
			// than a minute's count at once).
			wait = time.Hour
			if over <= len(minute) {
				wait = minute[over-1].Add(time.Minute).Sub(now)
			}
		}
	}
	var taken []*rate.Reservation
	for _, lim := range lims {
		r := lim.ReserveN(now, n)
		taken = append(taken, r)
		if !r.OK() {
			wait = max(wait, time.Hour)
			continue
		}
		wait = max(wait, r.DelayFrom(now))
	}
	if wait <= 0 {
		if req.ChatID < 0 && l.PerGroupPerMinute > 0 {
			for range n {
				s.groupMinute[req.ChatID] = append(s.groupMinute[req.ChatID], now)
			}
		}
		return nil
	}
	for _, r := range taken {
		r.CancelAt(now)
	}
	s.throttled++
	s.notifyLocked()
	return &Fault{Status: http.StatusTooManyRequests, RetryAfter: int(math.Ceil(wait.Seconds()))}
}

// BusinessConnection is a business account's connection of the bot that
// the server knows ([Server.PushBusinessConnection],
// [Server.SendBusinessMessage]): sends through it go to UserChatID.
type BusinessConnection struct {
	ID         string
	User       tgbotapi.User
	UserChatID int64
	Enabled    bool
	CanReply   bool
}

// charge is a payment the server made, which a refund names.
type charge struct {
	userID   int64
	amount   int
	refunded bool
}

// methodNames are the methods extras.go handles, for the server's table of
// canonical names.
var methodNames = []string{"sendMessageDraft", "setMessageReaction", "sendInvoice", "answerPreCheckoutQuery",
	"refundStarPayment", "setMyCommands", "approveChatJoinRequest", "declineChatJoinRequest", "deleteBusinessMessages"}

// handleExtra handles the methods of this file and those given a result
// with SetResult, and reports whether it knew method.
func (s *Server) handleExtra(w http.ResponseWriter, method string, p url.Values) bool {
	switch method {
	case "sendMessageDraft":
		s.sendMessageDraft(w, p)
	case "setMessageReaction":
		s.setMessageReaction(w, p)
	case "sendInvoice":
		s.sendInvoice(w, p)
	case "answerPreCheckoutQuery":
		s.answerPreCheckout(w, p)
	case "refundStarPayment":
		s.refundStarPayment(w, p)
	case "setMyCommands":
		s.setMyCommands(w, p)
	case "approveChatJoinRequest", "declineChatJoinRequest":
		s.answerJoin(w, method, p)
	case "deleteBusinessMessages":
		s.deleteBusinessMessages(w, p)
	default:
		s.mu.Lock()
		raw, ok := s.results[method]
		s.mu.Unlock()
		if !ok {
			return false
		}
		writeResult(w, json.RawMessage(raw))
	}
	return true
}
