package runid

import "testing"

func TestNewDiffers(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := New()
		if len(id) != 12 || seen[id] {
			t.Fatalf("New() = %q: want 12 digits, each time another", id)
		}
		seen[id] = true
	}
}
