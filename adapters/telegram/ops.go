package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

// planParts returns the parts that carry out m, a valid message that
// sendParts sends: an invoice's one part, the final part of a streamed
// reply shown by a message (an edit of it, then the text that did not fit
// it), or the parts of a message.
func planParts(m platform.OutboundMessage) ([]part, error) {
	switch {
	case m.Invoice != nil:
		return planInvoice(m)
	case m.Stream != nil && m.Stream.Final && m.Stream.MessageID != "":
		return planStreamFinal(m)
	}
	return planMessage(m)
}

// react carries out req.Message, a valid reaction (ReactID set), with
// setMessageReaction: the reaction becomes Reactions (emoji or custom
// emoji), or none. The result names the message reacted to.
func (a *Adapter) react(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	m := req.Message
	id, err := strconv.Atoi(m.ReactID)
	if err != nil || id <= 0 || strconv.Itoa(id) != m.ReactID {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf(
			"telegram: %w: react ID %q is not a message ID (a positive decimal integer)", platform.ErrInvalidMessage, m.ReactID))
	}
	chat, err := parseChat(req.Target.ID)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	type reaction struct {
		Type          string `json:"type"`
		Emoji         string `json:"emoji,omitempty"`
		CustomEmojiID string `json:"custom_emoji_id,omitempty"`
	}
	rs := make([]reaction, 0, len(m.Reactions))
	for _, r := range m.Reactions {
		if r.Emoji != "" {
			rs = append(rs, reaction{Type: "emoji", Emoji: r.Emoji})
		} else {
			rs = append(rs, reaction{Type: "custom_emoji", CustomEmojiID: r.CustomEmojiID})
		}
	}
	params := tgbotapi.Params{"message_id": m.ReactID}
	addChat(params, chat)
	params.AddBool("is_big", m.BigReaction)
	if err := addJSON(params, "reaction", rs); err != nil { // [] removes the reactions
		return platform.SendResult{}, platform.Permanent(err)
	}
	if _, err := a.makeRequest(ctx, "setMessageReaction", params); err != nil {
		return platform.SendResult{}, err
	}
	return platform.SendResult{MessageID: m.ReactID, ChatID: req.Target.ID, SentAt: time.Now()}, nil
}

// call carries out req.Message's method call: the Bot API method by its
// name, with each member of Params a parameter (a JSON string as the
// string, any other value as its JSON) and, when Params has no chat_id
// and the target names a chat, the target's ID as chat_id. The result's
// Raw is Telegram's result, MessageID its message_id when it is a
// message. A call of answerCallbackQuery or answerPreCheckoutQuery counts
// as the query's one answer (see AnswerCallback). Errors map as for
// sends; a method that posts a message (sendMessage, sendInvoice,
// copyMessage, …) may be ambiguous, as a send is.
func (a *Adapter) call(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	c := req.Message.Call
	params, err := callParams(c.Params)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %s: %w", c.Method, err))
	}
	if _, ok := params["chat_id"]; !ok && req.Target.ID != "" {
		if chat, err := parseChat(req.Target.ID); err == nil {
			addChat(params, chat)
		}
	}
	query := ""
	switch c.Method {
	case "answerCallbackQuery":
		query = params["callback_query_id"]
	case "answerPreCheckoutQuery":
		query = params["pre_checkout_query_id"]
	}
	if query != "" && !a.presses.claim(query, time.Now()) {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %s: %w", c.Method, platform.ErrAlreadyAnswered))
	}
	raw, err := a.makeRequest(ctx, c.Method, params)
	if err != nil {
		if query != "" && !platform.IsPermanent(err) {
			a.presses.release(query)
		}
		return platform.SendResult{}, a.ambiguity(err)
	}
	res := platform.SendResult{ChatID: req.Target.ID, SentAt: time.Now()}
	if json.Valid(raw) {
		res.Raw = platform.RawJSON(raw)
	}
	var msg struct {
		MessageID int `json:"message_id"`
	}
	if json.Unmarshal(raw, &msg) == nil {
		res.MessageID = messageID(msg.MessageID)
	}
	return res, nil
}

// callParams returns the parameters of a method call, a JSON object: each
// member a parameter, a JSON string as the string, null left out, and any
// other value as its JSON text, as the Bot API reads form parameters. An
// empty raw or null is no parameter; anything but an object is refused
// with an error wrapping platform.ErrInvalidMessage.
func callParams(raw json.RawMessage) (tgbotapi.Params, error) {
	params := tgbotapi.Params{}
	if len(raw) == 0 || string(raw) == "null" {
		return params, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%w: the parameters are not a JSON object (%v)", platform.ErrInvalidMessage, err)
	}
	for k, v := range fields {
		var s string
		switch {
		case string(v) == "null": // left out: json.Unmarshal would read it as ""
		case json.Unmarshal(v, &s) == nil:
			params[k] = s
		default:
			params[k] = string(v)
		}
	}
	return params, nil
}
