package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
)

// A lease the store refuses for want of room begins the journal's outage,
// which its probe ends once the store takes writes again; a lease lost to
// another member (a revision that moved) is no outage.
func TestLeaseRefusedForRoomIsAnOutage(t *testing.T) {
	parallel(t, 0)
	synctest.Test(t, func(t *testing.T) {
		var room atomic.Bool
		j := &Journal{}
		j.health = &health{log: zap.NewNop(), closed: func() bool { return false },
			probe: func(context.Context, error) error {
				if !room.Load() {
					return errors.New("still full")
				}
				return nil
			}}
		j.storeRefused(&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence})
		if err := j.health.gate(); err != nil {
			t.Fatalf("a lease lost to another member: gate = %v; want nil", err)
		}
		j.storeRefused(&jetstream.APIError{ErrorCode: errCodeNoRoom})
		time.Sleep(3 * probeEvery)
		if err := j.health.gate(); !errors.Is(err, journal.ErrOutage) {
			t.Fatalf("a lease refused for want of room: gate = %v; want an outage", err)
		}
		room.Store(true)
		time.Sleep(2 * probeEvery)
		synctest.Wait()
		if err := j.health.gate(); err != nil {
			t.Fatalf("the store takes writes again: gate = %v; want nil", err)
		}
	})
}
