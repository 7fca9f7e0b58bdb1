package cluster

import (
	"context"
	"testing"
	"time"
)

// A partition's release waits while an event it delivered is neither done
// nor waiting for its user: drained closes once every event pending is
// parked, a park heard twice counts once, an event done leaves the count,
// and one done already hears nothing.
func TestPartitionParkedAccounting(t *testing.T) {
	p := &partition{pending: map[*partRecord]struct{}{}}
	r1, r2 := &partRecord{p: p}, &partRecord{p: p}
	p.pending[r1], p.pending[r2] = struct{}{}, struct{}{}
	// watch waits as release does: drained is closed, and dropped, once
	// every event pending is parked.
	var drained chan struct{}
	watch := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		drained = make(chan struct{})
		p.drained = drained
	}
	closed := func() bool {
		select {
		case <-drained:
			return true
		default:
			return false
		}
	}

	watch()
	r1.Parked(true)
	if closed() {
		t.Fatal("drained with one of two events running")
	}
	r1.Parked(true) // heard twice
	r2.Parked(true)
	if !closed() || p.parked != 2 {
		t.Fatalf("both parked: drained %v, parked %d", closed(), p.parked)
	}

	watch()
	r2.Parked(false) // its wait ended: it runs again
	if closed() || p.parked != 1 {
		t.Fatalf("one running again: drained %v, parked %d", closed(), p.parked)
	}
	p.forget(r1) // a parked event done
	if closed() || p.parked != 0 || len(p.pending) != 1 {
		t.Fatalf("after the parked one was done: drained %v, parked %d, pending %d", closed(), p.parked, len(p.pending))
	}
	p.forget(r2)
	if !closed() {
		t.Fatal("not drained once every event was done")
	}
	r1.Parked(true) // done already
	if p.parked != 0 || r1.HandedOver() {
		t.Fatalf("a record done counted: parked %d, handed over %v", p.parked, r1.HandedOver())
	}
}

// A member never takes the claim of one whose heartbeat is there, listed
// or not (a listing can miss a member whose heartbeat it raced, and a
// member that just started has listed nobody before); it takes it once the
// heartbeat is gone. (Seen once: a member starting beside one that held
// every partition listed only itself, took them all, and ran again the
// handlings the other still ran.)
func TestTakeWaitsForAHolderNotListed(t *testing.T) {
	parallel(t, time.Second)
	nc := connectEmbedded(t)
	s, r := sharedMember(t, nc, SharedConfig{}, oneAdapter{})
	ctx := context.Background()
	if _, err := s.claims.Put(ctx, "3", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.members.Put(ctx, "other", []byte("alive")); err != nil {
		t.Fatal(err)
	}
	r.live = []string{"me"} // the listing missed "other"
	part, err := r.take(ctx, 3)
	if err != nil || part != nil {
		t.Fatalf("take from a holder alive but not listed: %v, %v; want nothing taken", part, err)
	}
	if e, err := s.claims.Get(ctx, "3"); err != nil || string(e.Value()) != "other" {
		t.Fatalf("the claim: %v, %v; want still other's", e, err)
	}
	if err := s.members.Delete(ctx, "other"); err != nil { // its heartbeat ran out
		t.Fatal(err)
	}
	part, err = r.take(ctx, 3)
	if err != nil || part == nil {
		t.Fatalf("take from a holder gone: %v, %v; want the partition", part, err)
	}
	part.halt()
	if e, err := s.claims.Get(ctx, "3"); err != nil || string(e.Value()) != "me" {
		t.Fatalf("the claim: %v, %v; want mine", e, err)
	}
}
