package adaptertest

import (
	"context"
	"sync"

	"github.com/heraldbot/herald/platform"
)

// Inbox records the messages a fake peer received, per chat, and lets
// [Peer.Received] wait for them: a peer calls Add as messages arrive and
// implements Received with Wait. The zero value is an empty Inbox ready to
// use; it is safe for concurrent use.
type Inbox struct {
	mu      sync.Mutex
	msgs    map[string][]platform.OutboundMessage
	changed chan struct{} // closed and replaced at each Add
}

// Add records msgs, in order, as received in the chat with ID chatID.
func (b *Inbox) Add(chatID string, msgs ...platform.OutboundMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.msgs == nil {
		b.msgs = make(map[string][]platform.OutboundMessage)
	}
	b.msgs[chatID] = append(b.msgs[chatID], msgs...)
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
