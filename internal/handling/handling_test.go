package handling

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// A send that ends while the handling's events are being marked done
// waits for the outcome before it decides whether it needs a mark of its
// own: settled only once they are done, never while a crash could still
// have the handling run again.
func TestSettledWaitsForTheEventsDone(t *testing.T) {
	for _, tt := range []struct {
		name string
		done bool // whether marking the events done succeeds
	}{{"done", true}, {"refused", false}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := New(platform.Event{Platform: "p", ID: "1", Chat: platform.Chat{ID: "c"}}, nil, false)
				if h.settled() {
					t.Fatal("settled before End")
				}
				writing := make(chan struct{})
				go h.End(func(own journal.Record, taken []journal.Record) bool {
					<-writing // the done note being written
					return tt.done
				})
				synctest.Wait()
				got := make(chan bool)
				go func() { got <- h.settled() }()
				synctest.Wait()
				select {
				case s := <-got:
					t.Fatalf("settled = %v while the events were being marked done; want it to wait", s)
				default:
				}
				time.Sleep(time.Millisecond)
				close(writing)
				if s := <-got; s != tt.done {
					t.Fatalf("settled = %v; want %v", s, tt.done)
				}
				if s := h.settled(); s != tt.done {
					t.Fatalf("settled again = %v; want %v", s, tt.done)
				}
			})
		})
	}
}
