package testmain_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/testmain"
)

// queue is TestQueueLongestFirst's, set up by TestMain (exit_test.go),
// as a queue must be: before m.Run.
var queue testmain.Queue

// A queue starts its tests longest first, equal lengths in their order,
// and never more at once than its limit.
func TestQueueLongestFirst(t *testing.T) {
	q := &queue
	var mu sync.Mutex
	var order []string
	running, peak := 0, 0
	tests := []struct {
		name   string
		expect time.Duration
	}{{"short1", 0}, {"long", 3 * time.Second}, {"short2", 0}, {"mid", 2 * time.Second}, {"long2", 3 * time.Second}}
	t.Run("group", func(t *testing.T) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				q.Run(t, tc.expect)
				mu.Lock()
				order = append(order, tc.name)
				running++
				peak = max(peak, running)
				mu.Unlock()
				time.Sleep(time.Millisecond) // a test's work: another started meanwhile would be seen
				mu.Lock()
				running--
				mu.Unlock()
			})
		}
	})
	if want := []string{"long", "long2", "mid", "short1", "short2"}; !slices.Equal(order, want) || peak != 1 {
		t.Fatalf("started %v, %d at most at once; want %v, 1", order, peak, want)
	}
}
