package webchat

import (
	"slices"
	"strconv"
	"testing"

	"github.com/heraldbot/herald/platform"
)

func TestRing(t *testing.T) {
	var r ring[int]
	var want []int
	for i := 1; i <= 12; i++ {
		r.push(i, 5)
		want = append(want, i)
		if len(want) > 5 {
			want = want[1:]
		}
		var got []int
		for j := range r.len() {
			got = append(got, r.at(j))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("after pushing 1..%d: %v; want %v", i, got, want)
		}
		if cap(r.buf) > 8 {
			t.Fatalf("ring grew to capacity %d for a limit of 5", cap(r.buf))
		}
	}
}

func TestChatFind(t *testing.T) {
	var ch chatState
	for i := 1; i <= 4; i++ {
		ch.history.push(entry{id: strconv.Itoa(i), buttons: []string{"b" + strconv.Itoa(i)}}, 3)
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
	cs := newChats(2)
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
