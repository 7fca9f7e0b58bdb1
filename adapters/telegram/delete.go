package telegram

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// descDeleteNotFound is the 400 for a deletion of a message that is not
// there (any more): "Bad Request: message to delete not found".
const descDeleteNotFound = "message to delete not found"

// delete carries out req.Message, a valid deletion (DeleteID set), with
// deleteMessage; see [Adapter.Send]. A message that is not there counts
// as deleted: a deletion repeated after a lost answer succeeds.
func (a *Adapter) delete(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	m := req.Message
	id, err := strconv.Atoi(m.DeleteID)
	if err != nil || id <= 0 || strconv.Itoa(id) != m.DeleteID {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf(
			"telegram: %w: delete ID %q is not a message ID (a positive decimal integer)", platform.ErrInvalidMessage, m.DeleteID))
	}
	chat, err := parseChat(req.Target.ID)
	if err != nil {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	if b := req.Target.BusinessConnectionID; b != "" {
		// A message of a business account's chat: deleted through the
		// connection.
		_, err = a.makeRequest(ctx, "deleteBusinessMessages", tgbotapi.Params{"business_connection_id": b, "message_ids": "[" + m.DeleteID + "]"})
	} else {
		_, err = a.request(ctx, "deleteMessage", tgbotapi.DeleteMessageConfig{ChatID: chat.id, ChannelUsername: chat.username, MessageID: id})
	}
	if isAPIError(err, http.StatusBadRequest, descDeleteNotFound) {
		a.log.Debug("telegram: the message to delete is gone already", zap.String("chat_id", req.Target.ID), zap.Int("message_id", id))
		err = nil
	}
	if err != nil {
		return platform.SendResult{}, err
	}
	return platform.SendResult{MessageID: m.DeleteID, ChatID: req.Target.ID, SentAt: time.Now()}, nil
}
