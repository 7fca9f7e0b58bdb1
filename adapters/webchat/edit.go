package webchat

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldbot/herald/platform"
)

// ErrNoMessage is wrapped by the permanent error of an edit of a message
// that is not a bot message kept in the target chat's history (the bot
// never sent it to that chat, it is a user's message, or the history has
// dropped it: see [Config.HistorySize] and [Config.HistoryBytes]), and of
// a deletion of a message that never existed.
var ErrNoMessage = errors.New("webchat: no such bot message in the chat's history")

// edit applies m, a validated edit (m.EditID set), to the chat chatID; see
// Sender.Send. The history is changed and the edit frame fanned out under
// one lock, so a tab that joins gets either the edited message in its
// history or the old one followed by the edit frame, never both or
// neither.
func (a *Adapter) edit(chatID string, m platform.OutboundMessage) (platform.SendResult, error) {
	id := m.EditID
	t := time.Now()
	buttons := wireButtons(m.Buttons)
	patch, err := marshal(wireEdit{ID: id, Text: m.Text, ParseMode: string(m.ParseMode), Buttons: buttons, Edited: t})
	if err != nil { // unreachable: strings and a current time always encode
		return platform.SendResult{}, fmt.Errorf("webchat: edit message %q in %q: encoding: %w", id, chatID, err)
	}
	frame := encodeMessageFrame(frameEdit, patch)

	a.mu.Lock()
	defer a.mu.Unlock()
	ch := a.chats.getLocked(chatID)
	i := -1
	if ch != nil {
		i = ch.index(id)
	}
	if i < 0 || !ch.history.at(i).bot {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("webchat: edit message %q in %q: %w", id, chatID, ErrNoMessage))
	}
	msg, err := editedMessage(ch.history.at(i).msg, m, buttons, t)
	if err != nil { // unreachable: the adapter encoded the kept message itself
		return platform.SendResult{}, fmt.Errorf("webchat: edit message %q in %q: %w", id, chatID, err)
	}
	e := entry{id: id, bot: true, msg: msg, buttons: callbackData(m.Buttons), files: ch.history.at(i).files}
	res := platform.SendResult{MessageID: id, ChatID: chatID, SentAt: t}
	if a.chats.fitsLocked(e) {
		a.chats.replaceLocked(ch, i, e)
		a.fanoutLocked(ch, frame)
		return res, nil
	}
	// Too large to keep: only the open tabs can have it. The history may
	// not keep the old version either, or its old buttons would still work.
	if a.fanoutLocked(ch, frame) == 0 {
		return platform.SendResult{}, fmt.Errorf("webchat: edit message %q in %q: too large to keep in the history: %w", id, chatID, ErrNoConnection)
	}
	a.chats.removeAtLocked(ch, i)
	return res, nil
}

// editedMessage returns the kept message object old with m's text, parse
// mode and buttons (buttons, already converted) and the edit time t. The
// rest, attachments included, stays as it was.
func editedMessage(old []byte, m platform.OutboundMessage, buttons [][]wireButton, t time.Time) ([]byte, error) {
	var k keptMessage
	if err := json.Unmarshal(old, &k); err != nil {
		return nil, fmt.Errorf("decoding the kept message: %w", err)
	}
	k.Text, k.ParseMode, k.Buttons, k.Edited = m.Text, string(m.ParseMode), buttons, t
	b, err := marshal(k)
	if err != nil {
		return nil, fmt.Errorf("encoding the edited message: %w", err)
	}
	return b, nil
}
