package executor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// chatTable against a Go map, through random adds and removes with hashes
// crowded into few homes (long runs to shift back, wrapping around the
// end), growing and shrinking.
func TestChatTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab chatTable
	want := map[string]*chat{}
	hashOf := func(k string) uint64 {
		var h uint64
		fmt.Sscan(k[1:], &h)
		// Few distinct high bits: many keys share a home.
		return (h%7)<<61 | (h%5)<<58 | h
	}
	check := func() {
		t.Helper()
		if tab.n != len(want) {
			t.Fatalf("n = %d; want %d", tab.n, len(want))
		}
		for k, c := range want {
			if got := tab.get(hashOf(k), k); got != c {
				t.Fatalf("get(%s) = %p; want %p", k, got, c)
			}
		}
		if len(tab.slots) > shrinkTableLen && 64*tab.n < len(tab.slots) {
			t.Fatalf("%d slots for %d chats", len(tab.slots), tab.n)
		}
	}
	for round := range 20000 {
		k := fmt.Sprint("k", rng.IntN(3000))
		grow := round%4000 < 2000 // phases of growth and of shrinking
		if c := want[k]; c != nil && (!grow || rng.IntN(3) == 0) {
			tab.remove(hashOf(k), c)
			delete(want, k)
		} else if c == nil && (grow || rng.IntN(20) == 0) {
			c = &chat{key: k}
			tab.add(hashOf(k), c)
			want[k] = c
		}
		if tab.get(hashOf("absent"), "absent") != nil {
			t.Fatal("found an absent key")
		}
		if round%97 == 0 {
			check()
		}
	}
	for k, c := range want {
		tab.remove(hashOf(k), c)
		delete(want, k)
	}
	check()
	if len(tab.slots) > shrinkTableLen {
		t.Fatalf("empty table keeps %d slots", len(tab.slots))
	}
}
