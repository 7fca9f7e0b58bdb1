package adaptertest

import (
	"context"
	"sync"

	"github.com/heraldbot/herald/platform"
)

// Inbox records the messages a fake peer received, per chat, and lets
// [Peer.Received] wait for them: a peer calls Add as messages arrive and
// implements Received with Wait. A peer of a platform that edits messages
// records them with AddID instead, applies edits with Edit and deletions
// with Delete, and implements [ShowingPeer] with Shown. The zero value is an empty Inbox ready to use;
// it is safe for concurrent use.
type Inbox struct {
	mu      sync.Mutex
	msgs    map[string][]platform.OutboundMessage
	shown   map[string][]shownMessage
	changed chan struct{} // closed and replaced at each Add
}

// shownMessage is a received message as the chat shows it now.
type shownMessage struct {
	id  string
	msg platform.OutboundMessage
}

// Add records msgs, in order, as received in the chat with ID chatID.
func (b *Inbox) Add(chatID string, msgs ...platform.OutboundMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range msgs {
		b.addLocked(chatID, "", m)
	}
	b.notifyLocked()
}

func (b *Inbox) addLocked(chatID, id string, msg platform.OutboundMessage) {
	if b.msgs == nil {
		b.msgs = make(map[string][]platform.OutboundMessage)
		b.shown = make(map[string][]shownMessage)
	}
	b.msgs[chatID] = append(b.msgs[chatID], msg)
	b.shown[chatID] = append(b.shown[chatID], shownMessage{id: id, msg: msg})
}

// AddID records msg as received in the chat with ID chatID under the
// platform's message ID id, which Edit refers to.
func (b *Inbox) AddID(chatID, id string, msg platform.OutboundMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addLocked(chatID, id, msg)
	b.notifyLocked()
}

// Edit applies an edit to the message with ID id in the chat with ID
// chatID, as the platform showed it: the message now shows msg's text,
// parse mode and buttons. It reports false, changing nothing, when the
// chat has no message with that ID.
func (b *Inbox) Edit(chatID, id string, msg platform.OutboundMessage) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, s := range b.shown[chatID] {
		if s.id == id && id != "" {
			m := &b.shown[chatID][i].msg
			m.Text, m.ParseMode, m.Buttons = msg.Text, msg.ParseMode, msg.Buttons
			b.notifyLocked()
			return true
		}
	}
	return false
}

// Delete removes the message with ID id from what the chat with ID chatID
// shows, as the platform deleted it; Wait still returns it, as received.
// It reports false, changing nothing, when the chat shows no message with
// that ID.
func (b *Inbox) Delete(chatID, id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, s := range b.shown[chatID] {
		if s.id == id && id != "" {
			b.shown[chatID] = append(b.shown[chatID][:i:i], b.shown[chatID][i+1:]...)
			b.notifyLocked()
			return true
		}
	}
	return false
}

// Shown returns the messages received in the chat with ID chatID, oldest
// first, each with its latest edit applied, without the deleted ones.
func (b *Inbox) Shown(chatID string) []platform.OutboundMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]platform.OutboundMessage, len(b.shown[chatID]))
	for i, s := range b.shown[chatID] {
		out[i] = s.msg
	}
	return out
}

// notifyLocked wakes the Waits.
func (b *Inbox) notifyLocked() {
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// Wait waits until the chat with ID chatID has received at least n
// messages and returns all it received, oldest first, or returns what it
// has with ctx's error.
func (b *Inbox) Wait(ctx context.Context, chatID string, n int) ([]platform.OutboundMessage, error) {
	for {
		b.mu.Lock()
		msgs := append([]platform.OutboundMessage(nil), b.msgs[chatID]...)
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		ch := b.changed
		b.mu.Unlock()
		if len(msgs) >= n {
			return msgs, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return msgs, ctx.Err()
		}
	}
}
