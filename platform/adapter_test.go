package platform_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/platform"
)

// An Inbound's StopContext ends with its Stop, not with the run, and has a
// fallback bound without one; Receive ends when Receiving closes; Taking
// says whether it is still open.
func TestInbound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stop, endStop := context.WithCancel(context.Background())
		receiving := make(chan struct{})
		in := platform.Inbound{Receiving: receiving, Stop: stop}
		sc, cancel := in.StopContext(time.Nanosecond)
		defer cancel()
		time.Sleep(time.Millisecond)
		if sc.Err() != nil {
			t.Fatal("the stop context ended with the fallback")
		}
		endStop()
		<-sc.Done()

		fc, cancel := platform.Inbound{}.StopContext(time.Hour)
		defer cancel()
		if d, ok := fc.Deadline(); !ok || time.Until(d) != time.Hour {
			t.Fatalf("fallback deadline %v, %v", d, ok)
		}

		rc, cancel := in.Receive(context.Background())
		defer cancel()
		if !in.Taking() || rc.Err() != nil {
			t.Fatal("not taking before Receiving closed")
		}
		close(receiving)
		<-rc.Done()
		if in.Taking() {
			t.Fatal("taking after Receiving closed")
		}
		if !(platform.Inbound{}).Taking() {
			t.Fatal("a nil Receiving stops taking")
		}
	})
}
