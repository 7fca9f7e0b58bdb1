package executor

import (
	"testing"
	"unsafe"
)

// cacheLine is the cache line size the layouts of chat and shard assume.
const cacheLine = 64

// TestLayout checks the cache-line layouts of chat and shard that their
// docs describe (on 64-bit platforms, where the paddings fit them).
func TestLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the paddings are sized for 64-bit platforms")
	}
	var c chat
	if n := unsafe.Sizeof(c); n != 2*cacheLine {
		t.Errorf("chat is %d bytes; want %d (chatPad)", n, 2*cacheLine)
	}
	if end := unsafe.Offsetof(c.ring) + unsafe.Sizeof(c.ring[0]); end > cacheLine {
		t.Errorf("a chat's ring[0] ends at byte %d, past its first line", end)
	}
	if unsafe.Offsetof(c.holding) >= cacheLine || unsafe.Offsetof(c.next) >= cacheLine || unsafe.Offsetof(c.n) >= cacheLine {
		t.Error("a chat's counts and links are not all in its first line")
	}
	if n := uintptr(slabLen) * unsafe.Sizeof(c); n%4096 != 0 {
		t.Errorf("a slab of chats is %d bytes, not whole pages: its chats would not be aligned", n)
	}

	var s shard
	if n := unsafe.Sizeof(s); n != 5*cacheLine {
		t.Errorf("shard is %d bytes; want %d (shardPad)", n, 5*cacheLine)
	}
	lines := []struct {
		name string
		line uintptr
		off  uintptr
		size uintptr
	}{
		{"mu", 0, unsafe.Offsetof(s.mu), unsafe.Sizeof(s.mu)},
		{"readyHead", 0, unsafe.Offsetof(s.readyHead), 8},
		{"readyTail", 0, unsafe.Offsetof(s.readyTail), 8},
		{"chats", 0, unsafe.Offsetof(s.chats), unsafe.Sizeof(s.chats)},
		{"freeChats", 1, unsafe.Offsetof(s.freeChats), unsafe.Sizeof(s.freeChats)},
		{"queued", 1, unsafe.Offsetof(s.queued), 8},
		{"running", 1, unsafe.Offsetof(s.running), 8},
		{"coming", 1, unsafe.Offsetof(s.coming), 8},
		{"freeTasks", 2, unsafe.Offsetof(s.freeTasks), unsafe.Sizeof(s.freeTasks)},
		{"completed", 2, unsafe.Offsetof(s.completed), 8},
		{"workers", 2, unsafe.Offsetof(s.workers), 8},
		{"d", 3, unsafe.Offsetof(s.d), 8},
		{"quota", 3, unsafe.Offsetof(s.quota), 8},
		{"keepChats", 3, unsafe.Offsetof(s.keepChats), 8},
		{"keepTasks", 3, unsafe.Offsetof(s.keepTasks), 8},
	}
	for _, f := range lines {
		if f.off/cacheLine != f.line || (f.off+f.size-1)/cacheLine != f.line {
			t.Errorf("shard.%s is at bytes %d-%d; want it in line %d", f.name, f.off, f.off+f.size-1, f.line)
		}
	}
}
