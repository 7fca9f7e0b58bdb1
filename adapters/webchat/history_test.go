package webchat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldbot/herald/platform"
)

func TestRing(t *testing.T) {
	var r ring[int]
	var want []int
	for i := 1; i <= 12; i++ {
		if r.len() == 5 {
			if got := r.pop(); got != want[0] {
				t.Fatalf("pop = %d; want %d", got, want[0])
			}
			want = want[1:]
		}
		r.push(i, 5)
		want = append(want, i)
		var got []int
		for j := range r.len() {
			got = append(got, r.at(j))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("after pushing 1..%d: %v; want %v", i, got, want)
		}
		if cap(r.buf) > 5 {
			t.Fatalf("ring grew to capacity %d for a limit of 5", cap(r.buf))
		}
	}
	for r.len() > 0 {
		r.pop()
	}
	if r.buf != nil {
		t.Error("an emptied ring keeps its backing array")
	}
	r.push(1, 5)
	if r.len() != 1 || r.at(0) != 1 {
		t.Errorf("push after emptying: len %d", r.len())
	}
}

func TestChatFind(t *testing.T) {
	cs := newChats(historyLimits{MaxChats: 10, HistorySize: 3, HistoryBytes: 1 << 20, MaxHistoryBytes: 1 << 20})
	ch := cs.joinLocked(platform.Chat{ID: "c"})
	for i := 1; i <= 4; i++ {
		cs.pushLocked(ch, entry{id: strconv.Itoa(i), buttons: []string{"b" + strconv.Itoa(i)}})
	}
	if ch.find("1") != nil {
		t.Error("found a message pushed out of the history")
	}
	if e := ch.find("3"); e == nil || !e.hasButton("b3") || e.hasButton("b4") {
		t.Errorf("find(3) = %+v", e)
	}
}

// TestChatsEviction checks that the least recently used idle chats are
// forgotten past the limit and that chats with open tabs never are.
func TestChatsEviction(t *testing.T) {
	cs := newChats(historyLimits{MaxChats: 2, HistorySize: 10, HistoryBytes: 1 << 20, MaxHistoryBytes: 1 << 20})
	join := func(id string) *chatState { return cs.joinLocked(platform.Chat{ID: id}) }
	a := join("a")
	a.conns[&conn{}] = struct{}{} // a has an open tab
	join("b")
	join("c") // three chats, limit 2: b is the LRU idle chat
	if cs.getLocked("b") != nil || cs.getLocked("a") != a || cs.getLocked("c") == nil {
		t.Fatalf("after a(open), b, c: a=%v b=%v c=%v; want b forgotten", cs.getLocked("a"), cs.getLocked("b"), cs.getLocked("c"))
	}
	if n := cs.lenLocked(); n != 2 {
		t.Fatalf("%d chats kept; want 2", n)
	}
	cs.touchLocked(cs.getLocked("c"))
	join("d") // idle chats: c (used last) and d; a is open
	if cs.getLocked("c") != nil || cs.getLocked("d") == nil || cs.getLocked("a") != a {
		t.Fatal("want the oldest idle chat c forgotten, a kept")
	}
	// When every chat has a tab, none is forgotten: the count exceeds the
	// limit by at most the number of open tabs.
	cs.getLocked("d").conns[&conn{}] = struct{}{}
	e := join("e")
	e.conns[&conn{}] = struct{}{}
	if cs.lenLocked() != 3 || cs.getLocked("e") != e {
		t.Fatalf("%d chats; want a, d, e kept", cs.lenLocked())
	}
	// Rejoining a chat returns the same state.
	if join("a") != a {
		t.Fatal("joinLocked made a second state for chat a")
	}
}

// msgOf returns an entry whose size is exactly n bytes.
func msgOf(id string, n int) entry {
	return entry{id: id, msg: []byte(strings.Repeat("x", n-len(id)))}
}

// kept returns the IDs of ch's history, oldest first.
func kept(ch *chatState) []string {
	var ids []string
	for i := range ch.history.len() {
		ids = append(ids, ch.history.at(i).id)
	}
	return ids
}

// checkBytes fails unless every chat's bytes and the total agree with
// their entries.
func checkBytes(t *testing.T, cs *chats) {
	t.Helper()
	total := 0
	for id, ch := range cs.byID {
		n := 0
		for i := range ch.history.len() {
			e := ch.history.at(i)
			n += e.size()
		}
		if n != ch.bytes {
			t.Errorf("chat %s counts %d bytes; its entries hold %d", id, ch.bytes, n)
		}
		total += n
	}
	if total != cs.bytesLocked() {
		t.Errorf("chats count %d bytes; the entries hold %d", cs.bytesLocked(), total)
	}
}

// TestHistoryBytes checks the per-chat byte budget: the oldest entries go
// first, buttons' data counts, and an entry larger than the budget is not
// kept at all, and drops nothing.
func TestHistoryBytes(t *testing.T) {
	cs := newChats(historyLimits{MaxChats: 10, HistorySize: 100, HistoryBytes: 1000, MaxHistoryBytes: 1 << 20})
	ch := cs.joinLocked(platform.Chat{ID: "c"})
	for i := 1; i <= 5; i++ {
		cs.pushLocked(ch, msgOf(strconv.Itoa(i), 300))
	}
	if got := kept(ch); !slices.Equal(got, []string{"3", "4", "5"}) || ch.bytes != 900 {
		t.Fatalf("kept %q (%d bytes); want the last three, 900 bytes", got, ch.bytes)
	}
	e := msgOf("6", 100)
	e.buttons = []string{strings.Repeat("b", 50)}
	cs.pushLocked(ch, e) // 150 bytes with its button: 1050 > 1000
	if got := kept(ch); !slices.Equal(got, []string{"4", "5", "6"}) || ch.bytes != 750 {
		t.Fatalf("kept %q (%d bytes); want 4, 5, 6 with 750 bytes", got, ch.bytes)
	}
	cs.pushLocked(ch, msgOf("big", 1001))
	if got := kept(ch); !slices.Equal(got, []string{"4", "5", "6"}) || ch.bytes != 750 {
		t.Fatalf("kept %q (%d bytes) after a message over the budget; want it left out and the rest kept", got, ch.bytes)
	}
	checkBytes(t, cs)
}

// TestMaxHistoryBytes checks the budget across chats: the least recently
// used chats without tabs are forgotten first, then the oldest entries of
// chats with tabs go, and a chat with a tab is never forgotten.
func TestMaxHistoryBytes(t *testing.T) {
	cs := newChats(historyLimits{MaxChats: 100, HistorySize: 100, HistoryBytes: 1500, MaxHistoryBytes: 1900})
	chat := func(id string, open bool) *chatState {
		ch := cs.joinLocked(platform.Chat{ID: id})
		if open {
			ch.conns[&conn{}] = struct{}{}
		}
		return ch
	}
	idle1, open1, idle2, open2 := chat("idle1", false), chat("open1", true), chat("idle2", false), chat("open2", true)
	chat("empty", false) // holds nothing: never forgotten for bytes
	for i, ch := range []*chatState{idle1, open1, idle2, open2} {
		cs.pushLocked(ch, msgOf(fmt.Sprint(ch.chat.ID, "-", i), 400))
	}
	cs.touchLocked(idle1) // idle2 is now the least recently used idle chat
	cs.pushLocked(open1, msgOf("open1-b", 400))
	if cs.getLocked("idle2") != nil || cs.getLocked("idle1") == nil || cs.bytesLocked() != 1600 {
		t.Fatalf("2000 bytes for a budget of 1900: idle2 kept %v, idle1 kept %v, %d bytes; want idle2 forgotten, 1600 bytes",
			cs.getLocked("idle2") != nil, cs.getLocked("idle1") != nil, cs.bytesLocked())
	}
	// Two more entries: idle1 goes, then the oldest entry of an open chat.
	cs.pushLocked(open2, msgOf("open2-b", 400))
	cs.pushLocked(open2, msgOf("open2-c", 400))
	if cs.getLocked("idle1") != nil || cs.getLocked("empty") == nil {
		t.Fatal("want idle1 forgotten and the empty chat kept")
	}
	if got := kept(open1); !slices.Equal(got, []string{"open1-b"}) {
		t.Errorf("open1 keeps %q; want its oldest entry dropped", got)
	}
	if got := kept(open2); !slices.Equal(got, []string{"open2-3", "open2-b", "open2-c"}) {
		t.Errorf("open2 keeps %q", got)
	}
	if cs.bytesLocked() != 1600 {
		t.Errorf("%d bytes kept; want 1600", cs.bytesLocked())
	}
	checkBytes(t, cs)
}
