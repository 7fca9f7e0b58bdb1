package telegram

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

var _ platform.StreamingAdapter = (*Adapter)(nil)

// kindEdit is the kind of a part that edits the message a streamed reply
// showed (the first part of its final send).
const kindEdit platform.AttachmentKind = "edit"

// StreamInterval returns the least time between the parts of a streamed
// reply to chat ([platform.Stream]): one second in a private chat, three
// in a group or channel, as for the parts of a long text, since each
// draft or edit counts against the chat's budget (one message a second,
// 20 a minute in a group). It implements [platform.StreamingAdapter].
func (a *Adapter) StreamInterval(chat platform.Chat) time.Duration { return partPause(chat) }

// stream carries out req.Message, a part of a streamed reply
// ([platform.StreamPart]); see [Adapter.Send].
func (a *Adapter) stream(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	m, st := req.Message, req.Message.Stream
	dest, err := destinationOf(req.Target)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	if st.Final {
		parts, err := planParts(m)
		if err != nil {
			return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
		}
		return a.sendParts(ctx, &partsProgress{parts: parts, dest: dest, pause: partPause(req.Target), attempt: 1})
	}
	mode, ok := parseModes[m.ParseMode]
	if !ok {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w: unknown parse mode %q", platform.ErrInvalidMessage, m.ParseMode))
	}
	text := shownText(m.Text, m.ParseMode)
	res := platform.SendResult{MessageID: st.MessageID, ChatID: req.Target.ID, SentAt: time.Now()}
	if strings.TrimSpace(text) == "" {
		return res, nil // nothing that parses yet: the next part shows it
	}
	var entities []platform.Entity
	if text == m.Text {
		entities = m.Entities
	}
	if st.MessageID != "" {
		id, err := strconv.Atoi(st.MessageID)
		if err != nil || id <= 0 {
			return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w: stream message ID %q is not a message ID", platform.ErrInvalidMessage, st.MessageID))
		}
		e := editTarget{chat: dest.chat, chatID: dest.chatID, business: dest.business, messageID: id, text: text,
			parseMode: mode, entities: entities, preview: m.LinkPreview}
		if err := a.editRequest(ctx, e, "editMessageText"); err != nil {
			return platform.SendResult{}, err
		}
		return res, nil
	}
	if a.drafts(req.Target, dest) {
		params := tgbotapi.Params{"draft_id": strconv.Itoa(draftID(st.ID)), "text": text}
		addChat(params, dest.chat)
		params.AddNonZero("message_thread_id", dest.thread)
		params.AddNonEmpty("parse_mode", mode)
		if len(entities) > 0 {
			if err := addJSON(params, "entities", entitiesOf(entities)); err != nil {
				return platform.SendResult{}, platform.Permanent(err)
			}
		}
		_, err := a.makeRequest(ctx, "sendMessageDraft", params)
		switch {
		case err == nil:
			return res, nil
		case isAPIError(err, http.StatusBadRequest, "") || isAPIError(err, http.StatusNotFound, ""):
			// The chat or the bot cannot have drafts: show the reply by
			// editing a message, from now on.
			a.noDrafts.Store(true)
			a.log.Info("telegram: message drafts refused; streamed replies edit a message instead", zap.Error(a.red.Error(err)))
		default:
			return platform.SendResult{}, err
		}
	}
	// The first part: a message the later parts edit.
	first := m
	first.Text, first.Entities, first.Buttons, first.Stream = text, entities, nil, nil
	parts, err := planMessage(first)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	msg, err := a.sendPartTo(ctx, &dest, parts[0])
	if err != nil {
		return platform.SendResult{}, a.ambiguity(err)
	}
	res.MessageID, res.ChatID = messageID(msg.MessageID), dest.chatID
	return res, nil
}

// drafts reports whether a streamed reply to target shows as a message
// draft (sendMessageDraft): in a private chat, not through a business
// connection (drafts have none), unless Config.NoDrafts or Telegram
// refused a draft before.
func (a *Adapter) drafts(target platform.Chat, dest destination) bool {
	private := target.Type == platform.ChatPrivate || target.Type == "" && dest.chat.id > 0
	return private && dest.business == "" && !a.cfg.NoDrafts && !a.noDrafts.Load()
}

// draftID returns the draft_id of the stream id: a positive 31-bit hash,
// the same for every part of the stream.
func draftID(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	n := int(h.Sum32() & 0x7fffffff)
	if n == 0 {
		n = 1
	}
	return n
}

// shownText returns the part of a streamed reply's text a draft or edit
// can show now: what fits one message (4096 characters), cut back, in
// HTML or Markdown, to the last place where no element is open, since
// Telegram refuses markup that does not parse; "" if nothing is left.
func shownText(text string, mode platform.ParseMode) string {
	chunks := splitText(text, maxTextUnits, mode)
	if len(chunks) == 0 {
		return ""
	}
	t := chunks[0]
	class := markupState(t, mode)
	if class == nil {
		return t
	}
	tries := 0
	for i := len(t); i > 0 && tries < maxShownTries; i-- {
		if class[i] != cutFree || i < len(t) && !utf8.RuneStart(t[i]) {
			continue
		}
		// A place free in the whole text may not be at the end of the
		// prefix alone (a bare "&a" before a space): check the prefix.
		if c := markupState(t[:i], mode); c[i] == cutFree {
			return t[:i]
		}
		tries++
	}
	return ""
}

// maxShownTries bounds the prefixes shownText checks on their own.
const maxShownTries = 8

// planStreamFinal returns the parts of the final part m of a streamed
// reply shown by the message m.Stream.MessageID: an edit of that message
// to the text's first 4096 characters, then the rest of the text as new
// messages; the buttons go under the last.
func planStreamFinal(m platform.OutboundMessage) ([]part, error) {
	id, err := strconv.Atoi(m.Stream.MessageID)
	if err != nil || id <= 0 {
		return nil, fmt.Errorf("%w: stream message ID %q is not a message ID", platform.ErrInvalidMessage, m.Stream.MessageID)
	}
	mode, ok := parseModes[m.ParseMode]
	if !ok {
		return nil, fmt.Errorf("%w: unknown parse mode %q", platform.ErrInvalidMessage, m.ParseMode)
	}
	var parts []part
	for i, t := range splitText(m.Text, maxTextUnits, m.ParseMode) {
		if i > 0 && strings.TrimSpace(t) == "" {
			continue
		}
		p := part{text: t, parseMode: mode, preview: m.LinkPreview, silent: m.Silent, protected: m.Protected, paid: m.PaidBroadcast}
		if i == 0 {
			p.kind, p.editID = kindEdit, id
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 || strings.TrimSpace(m.Text) == "" {
		return nil, fmt.Errorf("%w: the text is only white space", platform.ErrInvalidMessage)
	}
	if len(m.Entities) > 0 {
		if len(parts) != 1 {
			return nil, fmt.Errorf("%w: a text with Entities must fit one message (%d characters); it has %d",
				platform.ErrInvalidMessage, maxTextUnits, utf16Len(m.Text))
		}
		parts[0].entities = m.Entities
	}
	kb, err := keyboard(m.Buttons)
	if err != nil {
		return nil, err
	}
	if kb != nil {
		parts[len(parts)-1].markup = kb
	}
	return parts, nil
}

// sendEdit carries out p, a part of kind kindEdit, and returns the edited
// message (its ID).
func (a *Adapter) sendEdit(ctx context.Context, dest *destination, p part) (tgbotapi.Message, error) {
	e := editTarget{chat: dest.chat, chatID: dest.chatID, business: dest.business, messageID: p.editID,
		text: p.text, parseMode: p.parseMode, entities: p.entities, preview: p.preview}
	if kb, ok := p.markup.(*tgbotapi.InlineKeyboardMarkup); ok {
		e.keyboard = kb
	}
	if err := a.editRequest(ctx, e, "editMessageText"); err != nil {
		return tgbotapi.Message{}, err
	}
	return tgbotapi.Message{MessageID: p.editID}, nil
}
