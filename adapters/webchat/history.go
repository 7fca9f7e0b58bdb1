package webchat

import (
	"container/list"
	"slices"

	"github.com/heraldbot/herald/platform"
)

// entry is one kept message of a chat.
type entry struct {
	id      string   // message ID
	msg     []byte   // the encoded message object, as in history frames
	buttons []string // the Data of its callback buttons
}

// hasButton reports whether the message has a callback button with data.
func (e *entry) hasButton(data string) bool { return slices.Contains(e.buttons, data) }

// ring keeps the last limit values pushed, oldest first. Its backing array
// grows with use up to limit, so an idle chat costs little. The zero value
// is an empty ring.
type ring[T any] struct {
	buf   []T
	start int // index of the oldest value once the ring is full
}

// push adds v, dropping the oldest value when the ring holds limit values.
func (r *ring[T]) push(v T, limit int) {
	if len(r.buf) < limit {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.start] = v
	r.start = (r.start + 1) % len(r.buf)
}

// len returns the number of values held.
func (r *ring[T]) len() int { return len(r.buf) }

// at returns the i-th oldest value.
func (r *ring[T]) at(i int) T { return r.buf[(r.start+i)%len(r.buf)] }

// chatState is one chat the adapter knows: its open tabs and its history.
// All fields are guarded by the Adapter's mu.
type chatState struct {
	chat    platform.Chat
	conns   map[*conn]struct{}
	history ring[entry]
	elem    *list.Element // in chats.lru
}

// find returns the kept message with the given ID, or nil.
func (c *chatState) find(id string) *entry {
	for i := c.history.len() - 1; i >= 0; i-- {
		if e := c.history.at(i); e.id == id {
			return &e
		}
	}
	return nil
}

// chats is the set of known chats with least-recently-used eviction. Its
// methods need the Adapter's mu held (hence the Locked suffix).
type chats struct {
	byID map[string]*chatState
	lru  list.List // of *chatState, most recently used first
	max  int
}

func newChats(limit int) *chats {
	return &chats{byID: make(map[string]*chatState), max: limit}
}

// getLocked returns the chat with the given ID, or nil.
func (cs *chats) getLocked(id string) *chatState { return cs.byID[id] }

// joinLocked returns the chat c describes, creating it if needed, marks it
// used, and forgets idle chats beyond the limit.
func (cs *chats) joinLocked(c platform.Chat) *chatState {
	ch := cs.byID[c.ID]
	if ch == nil {
		// Make room first: the new chat has no tab yet and must not be
		// the one forgotten.
		cs.evictLocked(cs.max - 1)
		ch = &chatState{chat: c, conns: make(map[*conn]struct{})}
		ch.elem = cs.lru.PushFront(ch)
		cs.byID[c.ID] = ch
		return ch
	}
	cs.touchLocked(ch)
	return ch
}

// touchLocked marks ch as the most recently used chat.
func (cs *chats) touchLocked(ch *chatState) { cs.lru.MoveToFront(ch.elem) }

// evictLocked forgets the least recently used chats with no open tab until
// at most limit chats are kept. Chats with open tabs are never forgotten,
// so the count can exceed the limit by the number of open connections.
//
// INVARIANT: a chat with an open tab stays in byID (its tabs point at it).
func (cs *chats) evictLocked(limit int) {
	for e := cs.lru.Back(); e != nil && len(cs.byID) > limit; {
		prev := e.Prev()
		if ch := e.Value.(*chatState); len(ch.conns) == 0 {
			cs.lru.Remove(e)
			delete(cs.byID, ch.chat.ID)
		}
		e = prev
	}
}

// lenLocked returns the number of chats kept.
func (cs *chats) lenLocked() int { return len(cs.byID) }
