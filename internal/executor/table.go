package executor

import "math/bits"

// chatTable is a shard's index of its chats by key: an open-addressing
// hash table with linear probing, keyed by the 64-bit hash Submit computes
// once for the key (its low bits chose the shard; the table uses its high
// bits). Deletion shifts the entries behind the deleted one back
// (backward-shift deletion), so the constant inserts and deletes of chats
// that come and go leave no tombstones to probe through, and the table
// shrinks with the chats it holds, so memory follows the active chats.
//
// The zero value is an empty table. It is used under its shard's lock.
type chatTable struct {
	slots []chatSlot // len is zero or a power of two
	shift uint       // 64 - log2(len(slots))
	n     int
}

type chatSlot struct {
	hash uint64
	c    *chat // nil for a free slot
}

// Sizes of a chatTable: it grows past half full, and a table of more than
// shrinkTableLen slots shrinks to a quarter below a sixty-fourth full (so
// a shard whose chats come and go in bursts does not rebuild its table
// each time).
const (
	minTableLen    = 16
	shrinkTableLen = 1024
)

func (t *chatTable) home(hash uint64) int { return int(hash >> t.shift) }

// get returns the chat with key and hash, or nil.
func (t *chatTable) get(hash uint64, key string) *chat {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(hash); ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.c == nil {
			return nil
		}
		if sl.hash == hash && sl.c.key == key {
			return sl.c
		}
	}
}

// add adds c, whose key the table does not hold, under hash.
func (t *chatTable) add(hash uint64, c *chat) {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(minTableLen, 2*len(t.slots)))
	}
	t.insert(hash, c)
	t.n++
}

func (t *chatTable) insert(hash uint64, c *chat) {
	mask := len(t.slots) - 1
	i := t.home(hash)
	for t.slots[i].c != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = chatSlot{hash: hash, c: c}
}

// remove removes c, which the table holds under hash.
func (t *chatTable) remove(hash uint64, c *chat) {
	mask := len(t.slots) - 1
	i := t.home(hash)
	for t.slots[i].c != c {
		i = (i + 1) & mask
	}
	// Move back each later entry of the run that may not stay where it
	// is once slot i is free: one whose home is not cyclically in (i, j].
	for j := (i + 1) & mask; t.slots[j].c != nil; j = (j + 1) & mask {
		k := t.home(t.slots[j].hash)
		if i <= j && i < k && k <= j || i > j && (i < k || k <= j) {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = chatSlot{}
	t.n--
	if len(t.slots) > shrinkTableLen && 64*t.n < len(t.slots) {
		t.resize(len(t.slots) / 4)
	}
}

// resize moves the entries to a new table of size slots.
func (t *chatTable) resize(size int) {
	old := t.slots
	t.slots = make([]chatSlot, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	for _, sl := range old {
		if sl.c != nil {
			t.insert(sl.hash, sl.c)
		}
	}
}
