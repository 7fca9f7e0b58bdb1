package embedded

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// A JetStream that does not stop when the store failed is said once, after
// stopSlow, the server is Stuck from then on, and the watch goes on waiting
// for it; one that stops in time, or fails to, is logged as before and is
// not stuck.
func TestStopJetStreamSaysWhenSlow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		takes    time.Duration
		err      error
		wantSlow bool
	}{
		{name: "in time", takes: stopSlow - time.Second},
		{name: "failed", takes: time.Second, err: errors.New("no")},
		{name: "slow", takes: 3 * stopSlow, wantSlow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, logs := observer.New(zap.InfoLevel)
				s := &Server{log: zap.New(core), dir: "store", stuck: make(chan struct{})}
				start := time.Now()
				stuckAt := make(chan time.Duration, 1)
				go func() {
					select {
					case <-s.Stuck():
						stuckAt <- time.Since(start)
					case <-time.After(10 * stopSlow):
						stuckAt <- -1
					}
				}()
				s.stopJetStream(func() error {
					time.Sleep(tc.takes)
					return tc.err
				})
				if waited := time.Since(start); waited != tc.takes {
					t.Errorf("returned after %v; want after stop's %v", waited, tc.takes)
				}
				if at, want := <-stuckAt, map[bool]time.Duration{false: -1, true: stopSlow}[tc.wantSlow]; at != want {
					t.Errorf("Stuck closed after %v; want %v (-1: never)", at, want)
				}
				slow := logs.FilterMessageSnippet("has not stopped").All()
				if got := len(slow) == 1; got != tc.wantSlow || len(slow) > 1 {
					t.Errorf("%d lines saying it has not stopped; want slow %v", len(slow), tc.wantSlow)
				}
				if tc.wantSlow && slow[0].ContextMap()["waited"] != stopSlow {
					t.Errorf("said after %v; want %v", slow[0].ContextMap()["waited"], stopSlow)
				}
				if failed := logs.FilterMessageSnippet("did not stop").Len(); failed != map[bool]int{false: 0, true: 1}[tc.err != nil] {
					t.Errorf("%d lines saying it did not stop; want one for an error", failed)
				}
			})
		})
	}
}

// Shutdown of a stuck server returns without waiting for the watch (which
// waits for a JetStream that never stops) or for the server, and keeps the
// directory locked: the process is about to end.
func TestShutdownOfStuckServerReturns(t *testing.T) {
	s := &Server{quit: make(chan struct{}), watched: make(chan struct{}), stuck: make(chan struct{}),
		unlock: func() { t.Error("the directory was unlocked while its server may still write to it") }}
	close(s.stuck)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Shutdown()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Shutdown of a stuck server did not return")
	}
}
