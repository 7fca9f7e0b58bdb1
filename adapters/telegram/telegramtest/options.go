package telegramtest

import (
	"encoding/json"
	"net/url"
	"strconv"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// cloneValues returns a copy of v that shares no memory with it.
func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// readSendOptions sets on m the options of a send request p: its topic,
// business connection, reply (reply_parameters, or the older
// reply_to_message_id and allow_sending_without_reply), notification,
// protection, effect, paid broadcast, entities (or caption_entities) and
// link preview, and every parameter as sent. It returns the description
// of a Bad Request for options that do not parse, or for a business
// connection the server does not know, or "".
func (s *Server) readSendOptions(m *SentMessage, p url.Values) string {
	m.Params = cloneValues(p)
	if v := p.Get("message_thread_id"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return "message thread not found"
		}
		m.ThreadID = n
	}
	if b := p.Get("business_connection_id"); b != "" {
		s.mu.Lock()
		_, known := s.business[b]
		s.mu.Unlock()
		if !known {
			return "BUSINESS_CONNECTION_INVALID"
		}
		m.BusinessConnectionID = b
	}
	if v := p.Get("reply_to_message_id"); v != "" {
		var err error
		if m.ReplyToMessageID, err = strconv.Atoi(v); err != nil {
			return "invalid reply_to_message_id"
		}
	}
	m.AllowSendingWithoutReply = p.Get("allow_sending_without_reply") == "true"
	if v := p.Get("reply_parameters"); v != "" {
		var rp struct {
			MessageID                int             `json:"message_id"`
			ChatID                   json.RawMessage `json:"chat_id"`
			AllowSendingWithoutReply bool            `json:"allow_sending_without_reply"`
			Quote                    string          `json:"quote"`
		}
		if json.Unmarshal([]byte(v), &rp) != nil || rp.MessageID <= 0 {
			return "can't parse reply parameters JSON object"
		}
		m.ReplyToMessageID, m.AllowSendingWithoutReply, m.Quote = rp.MessageID, rp.AllowSendingWithoutReply, rp.Quote
		if len(rp.ChatID) > 0 {
			var name string
			if json.Unmarshal(rp.ChatID, &name) != nil {
				name = string(rp.ChatID)
			}
			if id, ok := s.chatID(name); !ok {
				return "chat not found"
			} else if id != m.ChatID {
				m.ReplyChatID = strconv.FormatInt(id, 10)
			}
		}
	}
	m.Silent = p.Get("disable_notification") == "true"
	m.Protected = p.Get("protect_content") == "true"
	m.PaidBroadcast = p.Get("allow_paid_broadcast") == "true"
	m.EffectID = p.Get("message_effect_id")
	for _, key := range []string{"entities", "caption_entities"} {
		if v := p.Get(key); v != "" {
			if json.Unmarshal([]byte(v), &m.Entities) != nil {
				return "can't parse entities JSON object"
			}
		}
	}
	if v := p.Get("link_preview_options"); v != "" {
		m.LinkPreview = &LinkPreview{}
		if json.Unmarshal([]byte(v), m.LinkPreview) != nil {
			return "can't parse link preview options JSON object"
		}
	}
	return ""
}

// Invoice is the invoice of a sendInvoice, as sent (see [SentMessage]
// Invoice).
type Invoice struct {
	Title, Description, Payload, Currency   string
	ProviderToken, PhotoURL, StartParameter string
	Prices                                  []tgbotapi.LabeledPrice
}

// total returns the sum of the invoice's prices.
func (inv *Invoice) total() int {
	n := 0
	for _, p := range inv.Prices {
		n += p.Amount
	}
	return n
}
