package webchat

import (
	"container/list"
	"slices"

	"github.com/heraldbot/herald/platform"
)

// entry is one kept message of a chat.
type entry struct {
	id      string   // message ID
	bot     bool     // the bot's message (which an edit may change), not a user's
	seq     uint64   // when it was kept, across all chats (larger is newer)
	msg     []byte   // the encoded message object, as in history frames
	buttons []string // the Data of its callback buttons
	files   []string // the references to the files it shows by reference
}

// hasButton reports whether the message has a callback button with data.
func (e *entry) hasButton(data string) bool { return slices.Contains(e.buttons, data) }

// size returns the bytes the entry holds that count against the history
// budgets: the encoded message (attachments inline included, as base64;
// those by reference are in the file store), its buttons' data and its
// files' references.
func (e *entry) size() int {
	n := len(e.id) + len(e.msg)
	for _, b := range e.buttons {
		n += len(b)
	}
	for _, f := range e.files {
		n += len(f)
	}
	return n
}

// ring is a FIFO of values, oldest first, whose backing array grows with
// use up to the limit its caller gives push, so an idle chat costs little.
// The zero value is an empty ring.
type ring[T any] struct {
	buf   []T
	start int // index of the oldest value
	n     int // number of values held
}

// push adds v as the newest value. The caller keeps the ring below limit
// values (popping first when it is full); the backing array never grows
// beyond limit.
func (r *ring[T]) push(v T, limit int) {
	if r.n == len(r.buf) {
		c := min(max(4, 2*len(r.buf)), limit)
		if c <= r.n {
			c = r.n + 1
		}
		buf := make([]T, c)
		for i := range r.n {
			buf[i] = r.at(i)
		}
		r.buf, r.start = buf, 0
	}
	r.buf[(r.start+r.n)%len(r.buf)] = v
	r.n++
}

// pop removes and returns the oldest value; the ring must not be empty.
// An emptied ring lets its backing array go.
func (r *ring[T]) pop() T {
	v := r.buf[r.start]
	var zero T
	r.buf[r.start] = zero
	r.start = (r.start + 1) % len(r.buf)
	r.n--
	if r.n == 0 {
		r.buf, r.start = nil, 0
	}
	return v
}

// set replaces the i-th oldest value.
func (r *ring[T]) set(i int, v T) { r.buf[(r.start+i)%len(r.buf)] = v }

// remove removes the i-th oldest value, moving the newer ones down.
func (r *ring[T]) remove(i int) {
	if i == 0 {
		r.pop()
		return
	}
	for j := i; j < r.n-1; j++ {
		r.set(j, r.at(j+1))
	}
	var zero T
	r.set(r.n-1, zero)
	r.n--
}

// len returns the number of values held.
func (r *ring[T]) len() int { return r.n }

// at returns the i-th oldest value.
func (r *ring[T]) at(i int) T { return r.buf[(r.start+i)%len(r.buf)] }

// chatState is one chat the adapter knows: its open tabs and its history.
// All fields are guarded by the Adapter's mu.
type chatState struct {
	chat    platform.Chat
	conns   map[*conn]struct{}
	history ring[entry]
	bytes   int           // the sum of the history's entry sizes
	elem    *list.Element // in chats.lru
	// keyboard is the reply keyboard up in the chat, set by the last bot
	// message that showed or removed one; nil when none is. It is never
	// changed in place.
	keyboard *wireKeyboard
}

// find returns a copy of the kept message with the given ID, or nil.
func (c *chatState) find(id string) *entry {
	if i := c.index(id); i >= 0 {
		e := c.history.at(i)
		return &e
	}
	return nil
}

// index returns the position in the history of the kept message with the
// given ID (0 is the oldest), or -1.
func (c *chatState) index(id string) int {
	for i := c.history.len() - 1; i >= 0; i-- {
		if c.history.at(i).id == id {
			return i
		}
	}
	return -1
}

// historyLimits bounds what chats keeps; see the Config fields of the same
// names.
type historyLimits struct {
	MaxChats        int // chats kept, beyond those with open tabs
	HistorySize     int // entries per chat
	HistoryBytes    int // entry bytes per chat
	MaxHistoryBytes int // entry bytes over all chats
}

// chats is the set of known chats with their histories, bounded by
// historyLimits with least-recently-used eviction. Its methods need the
// Adapter's mu held (hence the Locked suffix).
type chats struct {
	byID   map[string]*chatState
	lru    list.List // of *chatState, most recently used first
	limits historyLimits
	bytes  int    // the sum of every chat's bytes
	seq    uint64 // the last entry's seq
}

func newChats(limits historyLimits) *chats {
	return &chats{byID: make(map[string]*chatState), limits: limits}
}

// getLocked returns the chat with the given ID, or nil.
func (cs *chats) getLocked(id string) *chatState { return cs.byID[id] }

// joinLocked returns the chat c describes, creating it if needed, marks it
// used, and forgets idle chats beyond MaxChats.
func (cs *chats) joinLocked(c platform.Chat) *chatState {
	ch := cs.byID[c.ID]
	if ch == nil {
		// Make room first: the new chat has no tab yet and must not be
		// the one forgotten.
		cs.evictLocked(cs.limits.MaxChats - 1)
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

// pushLocked keeps e as ch's newest message, marks ch used, and enforces
// the budgets: ch keeps at most HistorySize entries and HistoryBytes bytes,
// dropping its oldest entries; then, while all chats together hold more
// than MaxHistoryBytes, the least recently used chats without an open tab
// are forgotten, and after them the oldest entries of any chat are
// dropped. An entry larger than HistoryBytes or MaxHistoryBytes on its own
// is not kept, and drops nothing.
func (cs *chats) pushLocked(ch *chatState, e entry) {
	cs.touchLocked(ch)
	if !cs.fitsLocked(e) {
		return
	}
	n := e.size()
	cs.seq++
	e.seq = cs.seq
	if ch.history.len() >= cs.limits.HistorySize {
		cs.dropOldestLocked(ch)
	}
	ch.history.push(e, cs.limits.HistorySize)
	ch.bytes += n
	cs.bytes += n
	for ch.bytes > cs.limits.HistoryBytes {
		cs.dropOldestLocked(ch)
	}
	cs.trimLocked()
}

// fitsLocked reports whether e may be kept: it is no larger on its own
// than HistoryBytes and MaxHistoryBytes.
func (cs *chats) fitsLocked(e entry) bool {
	n := e.size()
	return n <= cs.limits.HistoryBytes && n <= cs.limits.MaxHistoryBytes
}

// replaceLocked replaces ch's i-th oldest entry with e, an edit of it that
// fitsLocked: e keeps the old entry's place (and seq), and the bytes it
// adds or frees count against the budgets. It marks ch used and then
// enforces the budgets as pushLocked does, so a larger entry may push out
// ch's oldest entries (e itself, if it is the oldest) or, past
// MaxHistoryBytes, other chats' histories, or ch's own when ch has no
// open tab.
func (cs *chats) replaceLocked(ch *chatState, i int, e entry) {
	cs.touchLocked(ch)
	old := ch.history.at(i)
	e.seq = old.seq
	delta := e.size() - old.size()
	ch.history.set(i, e)
	ch.bytes += delta
	cs.bytes += delta
	for ch.bytes > cs.limits.HistoryBytes {
		cs.dropOldestLocked(ch)
	}
	cs.trimLocked()
}

// removeAtLocked forgets ch's i-th oldest entry.
func (cs *chats) removeAtLocked(ch *chatState, i int) {
	e := ch.history.at(i)
	n := e.size()
	ch.history.remove(i)
	ch.bytes -= n
	cs.bytes -= n
}

// dropOldestLocked drops ch's oldest entry; ch's history must not be empty.
func (cs *chats) dropOldestLocked(ch *chatState) {
	e := ch.history.pop()
	n := e.size()
	ch.bytes -= n
	cs.bytes -= n
}

// trimLocked brings the bytes of all histories within MaxHistoryBytes:
// first by forgetting the least recently used chats that have no open tab
// and hold any bytes, then by dropping the oldest entries of the chats
// left. The chats with entries then all have open tabs, so the scan for
// the oldest entry is bounded by the number of open connections.
func (cs *chats) trimLocked() {
	for e := cs.lru.Back(); e != nil && cs.bytes > cs.limits.MaxHistoryBytes; {
		prev := e.Prev()
		if ch := e.Value.(*chatState); len(ch.conns) == 0 && ch.bytes > 0 {
			cs.removeLocked(ch)
		}
		e = prev
	}
	for cs.bytes > cs.limits.MaxHistoryBytes {
		var oldest *chatState
		for _, ch := range cs.byID {
			if ch.history.len() > 0 && (oldest == nil || ch.history.at(0).seq < oldest.history.at(0).seq) {
				oldest = ch
			}
		}
		if oldest == nil { // unreachable: bytes > 0 means some entry is kept
			return
		}
		cs.dropOldestLocked(oldest)
	}
}

// evictLocked forgets the least recently used chats with no open tab until
// at most limit chats are kept. Chats with open tabs are never forgotten,
// so the count can exceed the limit by the number of open connections.
//
// INVARIANT: a chat with an open tab stays in byID (its tabs point at it).
func (cs *chats) evictLocked(limit int) {
	for e := cs.lru.Back(); e != nil && len(cs.byID) > limit; {
		prev := e.Prev()
		if ch := e.Value.(*chatState); len(ch.conns) == 0 {
			cs.removeLocked(ch)
		}
		e = prev
	}
}

// removeLocked forgets ch and its history.
func (cs *chats) removeLocked(ch *chatState) {
	cs.lru.Remove(ch.elem)
	delete(cs.byID, ch.chat.ID)
	cs.bytes -= ch.bytes
}
