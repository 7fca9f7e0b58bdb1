package webchat

import (
	"fmt"
	"strconv"
	"time"

	"github.com/heraldbot/herald/platform"
)

// deleteMessage deletes the message id, a bot's or a user's, from the chat
// chatID; see Sender.Send. The history is changed and the delete frame
// fanned out under one lock, so a tab that joins either gets a history
// without the message or the message followed by the delete frame.
func (a *Adapter) deleteMessage(chatID, id string) (platform.SendResult, error) {
	if !a.issued(id) {
		return platform.SendResult{}, platform.Permanent(fmt.Errorf("webchat: delete message %q in %q: %w", id, chatID, ErrNoMessage))
	}
	patch, err := marshal(wireDelete{ID: id})
	if err != nil { // unreachable: a string always encodes
		return platform.SendResult{}, fmt.Errorf("webchat: delete message %q in %q: encoding: %w", id, chatID, err)
	}
	frame := encodeMessageFrame(frameDelete, patch)

	a.mu.Lock()
	defer a.mu.Unlock()
	if ch := a.chats.getLocked(chatID); ch != nil {
		if i := ch.index(id); i >= 0 {
			// Its files by reference can no longer be fetched.
			a.files.revoke(ch.history.at(i).files...)
			a.chats.removeAtLocked(ch, i)
		}
		// Also when the history has dropped it: a tab open since may
		// still show it.
		a.fanoutLocked(ch, frame)
	}
	return platform.SendResult{MessageID: id, ChatID: chatID, SentAt: time.Now()}, nil
}

// issued reports whether id is a message ID the adapter has given out.
func (a *Adapter) issued(id string) bool {
	if !validMessageID(id) {
		return false
	}
	n, err := strconv.ParseUint(id, 10, 64)
	return err == nil && n > 0 && n <= a.msgSeq.Load()
}
