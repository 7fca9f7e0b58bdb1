package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// The descriptions of Telegram's answers that an edit handles, lower-cased.
const (
	// descNotModified starts the 400 for an edit that changes nothing:
	// "Bad Request: message is not modified: specified new message content
	// and reply markup are exactly the same as a current content and reply
	// markup of the message".
	descNotModified = "message is not modified"
	// descNoText is the 400 for editMessageText of a message without text
	// (a photo or document): "Bad Request: there is no text in the message
	// to edit".
	descNoText = "there is no text in the message to edit"
)

// editTarget is an edit of one message: what editMessageText and
// editMessageCaption send.
type editTarget struct {
	chat      chatRef
	chatID    string // as the target named it
	business  string // the business connection the message was sent through, or ""
	messageID int
	text      string
	parseMode string
	entities  []platform.Entity
	preview   *platform.LinkPreview
	keyboard  *tgbotapi.InlineKeyboardMarkup // nil removes the old one
}

// edit carries out req.Message, a valid message with EditID set: see
// [Adapter.Send]. Nothing is sent for an edit it refuses.
func (a *Adapter) edit(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	e, err := planEdit(req)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	err = a.editRequest(ctx, e, "editMessageText")
	if isAPIError(err, http.StatusBadRequest, descNoText) {
		// A photo or document: its caption is its text.
		if n := utf16Len(e.text); n > maxCaptionUnits {
			return platform.SendResult{}, platform.Permanent(fmt.Errorf(
				"telegram: %w: message %d is a photo or document, whose caption is limited to Telegram's %d characters; the text has %d (%w)",
				platform.ErrInvalidMessage, e.messageID, maxCaptionUnits, n, err))
		}
		a.log.Debug("telegram: the message has no text; editing its caption",
			zap.String("chat_id", e.chatID), zap.Int("message_id", e.messageID))
		err = a.editRequest(ctx, e, "editMessageCaption")
	}
	if err != nil {
		return platform.SendResult{}, err
	}
	return platform.SendResult{MessageID: req.Message.EditID, ChatID: e.chatID, SentAt: time.Now()}, nil
}

// planEdit checks the edit req.Message and returns what to send, or why it
// cannot be sent; its errors wrap platform.ErrInvalidMessage.
func planEdit(req platform.SendRequest) (editTarget, error) {
	m := req.Message
	id, err := strconv.Atoi(m.EditID)
	if err != nil || id <= 0 || strconv.Itoa(id) != m.EditID {
		return editTarget{}, fmt.Errorf("%w: edit ID %q is not a message ID (a positive decimal integer)", platform.ErrInvalidMessage, m.EditID)
	}
	chat, err := parseChat(req.Target.ID)
	if err != nil {
		return editTarget{}, err
	}
	mode, ok := parseModes[m.ParseMode]
	if !ok {
		return editTarget{}, fmt.Errorf("%w: unknown parse mode %q", platform.ErrInvalidMessage, m.ParseMode)
	}
	if strings.TrimSpace(m.Text) == "" {
		return editTarget{}, fmt.Errorf("%w: the text is only white space", platform.ErrInvalidMessage)
	}
	if n := utf16Len(m.Text); n > maxTextUnits {
		return editTarget{}, fmt.Errorf("%w: an edit's text of %d characters is over Telegram's %d, and one message cannot be split into several",
			platform.ErrInvalidMessage, n, maxTextUnits)
	}
	kb, err := keyboard(m.Buttons)
	if err != nil {
		return editTarget{}, err
	}
	return editTarget{chat: chat, chatID: req.Target.ID, business: req.Target.BusinessConnectionID, messageID: id,
		text: m.Text, parseMode: mode, entities: m.Entities, preview: m.LinkPreview, keyboard: kb}, nil
}

// editRequest calls method, editMessageText or editMessageCaption, for e.
// An answer that the message already shows this content is success. Its
// errors are those of [Adapter.request], except that a group's move to a
// supergroup is permanent: the supergroup numbers its messages afresh, so
// the message cannot be found there.
func (a *Adapter) editRequest(ctx context.Context, e editTarget, method string) error {
	params := tgbotapi.Params{"message_id": strconv.Itoa(e.messageID)}
	addChat(params, e.chat)
	params.AddNonEmpty("business_connection_id", e.business)
	params.AddNonEmpty("parse_mode", e.parseMode)
	textKey, entitiesKey := "text", "entities"
	if method == "editMessageCaption" {
		textKey, entitiesKey = "caption", "caption_entities"
	} else if e.preview != nil {
		if err := addJSON(params, "link_preview_options", linkPreviewOf(e.preview)); err != nil {
			return platform.Permanent(err)
		}
	}
	params[textKey] = e.text
	if len(e.entities) > 0 {
		if err := addJSON(params, entitiesKey, entitiesOf(e.entities)); err != nil {
			return platform.Permanent(err)
		}
	}
	if e.keyboard != nil {
		if err := addJSON(params, "reply_markup", e.keyboard); err != nil {
			return platform.Permanent(err)
		}
	}
	_, err := a.makeRequest(ctx, method, params)
	if isAPIError(err, http.StatusBadRequest, descNotModified) {
		a.log.Debug("telegram: the message already shows this content",
			zap.String("chat_id", e.chatID), zap.Int("message_id", e.messageID))
		return nil
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.MigrateToChatID != 0 {
		return platform.Permanent(fmt.Errorf(
			"telegram: %s: the group became the supergroup %d, whose message IDs differ; message %d cannot be edited there: %w",
			method, ae.MigrateToChatID, e.messageID, err))
	}
	return err
}

// isAPIError reports whether err is Telegram's answer with code and a
// description containing desc (lower case), in any case.
func isAPIError(err error, code int, desc string) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == code && strings.Contains(strings.ToLower(ae.Description), desc)
}
