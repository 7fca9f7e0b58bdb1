package webchat

import (
	"slices"
	"strconv"
	"testing"

	"github.com/heraldbot/herald/platform"
)

func TestRingRemove(t *testing.T) {
	for i := range 5 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			var r ring[int]
			for v := range 7 { // wraps: 0 and 1 are popped below
				if r.len() == 5 {
					r.pop()
				}
				r.push(v, 5)
			}
			want := slices.Delete([]int{2, 3, 4, 5, 6}, i, i+1)
			r.remove(i)
			var got []int
			for j := range r.len() {
				got = append(got, r.at(j))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after remove(%d): %v; want %v", i, got, want)
			}
			r.push(7, 5) // the freed slot is reused
			if r.len() != 5 || r.at(4) != 7 {
				t.Fatalf("push after remove: len %d, newest %d", r.len(), r.at(r.len()-1))
			}
		})
	}
}

// TestChatsReplace checks the history side of an edit: the entry keeps
// its place and seq, the bytes it adds or frees count, a larger entry
// pushes the oldest out (itself, when it is the oldest), and removing an
// entry from the middle frees its bytes.
func TestChatsReplace(t *testing.T) {
	cs := newChats(historyLimits{MaxChats: 10, HistorySize: 10, HistoryBytes: 1000, MaxHistoryBytes: 1 << 20})
	ch := cs.joinLocked(platform.Chat{ID: "c"})
	for _, id := range []string{"1", "2", "3"} {
		cs.pushLocked(ch, msgOf(id, 300))
	}
	seq := ch.history.at(1).seq

	// Smaller: the bytes go down, the place and seq stay.
	small := msgOf("2", 100)
	small.buttons = []string{"back"}
	if !cs.fitsLocked(small) {
		t.Fatal("a 104-byte entry does not fit a 1000-byte budget")
	}
	cs.replaceLocked(ch, 1, small)
	if got := kept(ch); !slices.Equal(got, []string{"1", "2", "3"}) || ch.bytes != 704 {
		t.Fatalf("after shrinking 2: %q, %d bytes; want 1, 2, 3 with 704 bytes", got, ch.bytes)
	}
	if e := ch.history.at(1); e.seq != seq || !e.hasButton("back") {
		t.Errorf("edited entry = %+v; want seq %d and the new button", e, seq)
	}
	checkBytes(t, cs)

	// Larger: 300 + 600 + 300 > 1000, so the oldest, 1, goes.
	cs.replaceLocked(ch, 1, msgOf("2", 600))
	if got := kept(ch); !slices.Equal(got, []string{"2", "3"}) || ch.bytes != 900 {
		t.Fatalf("after growing 2: %q, %d bytes; want 2, 3 with 900 bytes", got, ch.bytes)
	}
	checkBytes(t, cs)

	// The oldest grows past the budget with the rest: it goes itself.
	cs.replaceLocked(ch, 0, msgOf("2", 800))
	if got := kept(ch); !slices.Equal(got, []string{"3"}) || ch.bytes != 300 {
		t.Fatalf("after growing the oldest: %q, %d bytes; want 3 with 300 bytes", got, ch.bytes)
	}
	checkBytes(t, cs)

	// Too large on its own: the caller removes the entry instead.
	if cs.fitsLocked(msgOf("3", 1001)) {
		t.Error("a 1001-byte entry fits a 1000-byte budget")
	}
	cs.pushLocked(ch, msgOf("4", 200))
	cs.pushLocked(ch, msgOf("5", 200))
	cs.removeAtLocked(ch, 1)
	if got := kept(ch); !slices.Equal(got, []string{"3", "5"}) || ch.bytes != 500 {
		t.Fatalf("after removing 4: %q, %d bytes; want 3, 5 with 500 bytes", got, ch.bytes)
	}
	checkBytes(t, cs)
}

// TestChatsReplaceMaxHistoryBytes checks that an edit's growth counts
// against the budget of all chats: past it, the least recently used chat
// without a tab is forgotten, not the edited one, which the edit marks
// used.
func TestChatsReplaceMaxHistoryBytes(t *testing.T) {
	cs := newChats(historyLimits{MaxChats: 10, HistorySize: 10, HistoryBytes: 1000, MaxHistoryBytes: 1400})
	edited := cs.joinLocked(platform.Chat{ID: "edited"})
	idle := cs.joinLocked(platform.Chat{ID: "idle"})
	cs.pushLocked(edited, msgOf("1", 500))
	cs.pushLocked(idle, msgOf("2", 500)) // idle is now the most recently used
	cs.replaceLocked(edited, 0, msgOf("1", 1000))
	if cs.getLocked("idle") != nil || cs.getLocked("edited") != edited || cs.bytesLocked() != 1000 {
		t.Fatalf("idle kept %v, %d bytes; want idle forgotten and 1000 bytes", cs.getLocked("idle") != nil, cs.bytesLocked())
	}
	checkBytes(t, cs)
}
