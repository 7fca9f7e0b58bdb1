package cluster

import (
	"fmt"
	"testing"
)

// Rendezvous hashing spreads partitions about evenly, and a member joining
// or leaving moves only the partitions it takes or had.
func TestOwnerSpreadsAndMovesLittle(t *testing.T) {
	parallel(t, 0)
	const parts = 64
	three := []string{"a", "b", "c"}
	count := map[string]int{}
	for p := range parts {
		count[owner(three, p)]++
	}
	for _, m := range three {
		if n := count[m]; n < parts/3-10 || n > parts/3+10 {
			t.Fatalf("owners %v of %d partitions: uneven", count, parts)
		}
	}
	four := append([]string{"d"}, three...)
	moved := 0
	for p := range parts {
		before, after := owner(three, p), owner(four, p)
		if before != after {
			moved++
			if after != "d" {
				t.Fatalf("partition %d moved from %s to %s when d joined", p, before, after)
			}
		}
	}
	if moved < parts/4-8 || moved > parts/4+8 {
		t.Fatalf("%d of %d partitions moved when a fourth member joined; want about a quarter", moved, parts)
	}
	for _, n := range []int{1, 2, 5, 10} {
		var live []string
		for i := range n {
			live = append(live, fmt.Sprint("node-", i))
		}
		for p := range parts {
			if o := owner(live, p); o == "" {
				t.Fatalf("partition %d has no owner among %v", p, live)
			}
		}
	}
}
