package cluster

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Memory is handed back once, reclaimIdle after the last large record of
// a burst, not while records keep coming.
func TestReclaimAfterBurst(t *testing.T) {
	parallel(t, 0)
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		r := reclaimer{do: func() { runs.Add(1) }}
		for range 5 {
			r.noteLarge()
			time.Sleep(reclaimIdle - time.Second)
		}
		synctest.Wait()
		if n := runs.Load(); n != 0 {
			t.Fatalf("reclaimed %d times during the burst; want none", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("reclaimed %d times after the burst; want once", n)
		}
		r.noteLarge()
		time.Sleep(reclaimIdle + time.Second)
		synctest.Wait()
		if n := runs.Load(); n != 2 {
			t.Fatalf("reclaimed %d times after a second burst; want twice in all", n)
		}
	})
}
