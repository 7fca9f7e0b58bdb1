package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldbot/herald/cluster/embedded"
)

// A gateway's fence: its sends and its connection go on only while its
// lease was renewed within two thirds of the TTL, it is connected to NATS,
// and it is neither leaving nor stopped — so a gateway paused past that
// (GC, a stopped VM) sends nothing once it wakes, before it even learns
// that another took the lease.
func TestLeaseFence(t *testing.T) {
	srv, err := embedded.Start(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	s, err := OpenShared(context.Background(), nc, SharedConfig{LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	newLead := func(renewed time.Time) *lead {
		l := &lead{s: s}
		l.ctx, l.cancel = context.WithCancel(context.Background())
		l.renewed.Store(renewed.UnixNano())
		t.Cleanup(l.cancel)
		return l
	}
	if err := newLead(time.Now()).valid(); err != nil {
		t.Fatalf("a lease just renewed: %v", err)
	}
	if err := newLead(time.Now().Add(-1900 * time.Millisecond)).valid(); err != nil {
		t.Fatalf("a lease renewed within 2/3 of its TTL: %v", err)
	}
	if err := newLead(time.Now().Add(-2100 * time.Millisecond)).valid(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a lease older than 2/3 of its TTL (the gateway was paused): %v; want ErrLeaseLost", err)
	}
	l := newLead(time.Now())
	l.leaving.Store(true)
	if err := l.valid(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a leaving gateway: %v; want ErrLeaseLost", err)
	}
	l = newLead(time.Now())
	l.cancel()
	if err := l.valid(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a stopped gateway: %v; want ErrLeaseLost", err)
	}
	l = newLead(time.Now())
	nc.Close()
	if err := l.valid(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a gateway cut off from NATS: %v; want ErrLeaseLost", err)
	}
}
