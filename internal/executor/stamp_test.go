package executor

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Submits share a reading of the clock for stampTTL only: a task
// submitted later counts its MaxLifetime from its own Submit, and the
// shared reading never makes a life longer.
func TestStampShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(context.Background(), Config{MaxLifetime: 10 * time.Second, RunTimeout: -1})
		start := time.Now()
		release := make(chan struct{})
		mustSubmit(t, d, "c", func(context.Context) error { <-release; return nil })
		time.Sleep(5 * stampTTL)
		deadline := make(chan time.Time, 1)
		mustSubmit(t, d, "c", func(ctx context.Context) error {
			dl, _ := ctx.Deadline()
			deadline <- dl
			return nil
		})
		close(release)
		if got, want := (<-deadline).Sub(start), 5*stampTTL+10*time.Second; got != want {
			t.Fatalf("deadline %v after the start; want %v (MaxLifetime from the second Submit)", got, want)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// A run counts a RunTimeout of sharedRunTimeout or more from the reading
// Submits share (its deadline may come as much sooner as the reading is
// old, never later), a shorter one from the clock; a run with neither
// RunTimeout nor MaxLifetime has no deadline to speak of.
func TestRunStart(t *testing.T) {
	const none = 100 * 365 * 24 * time.Hour
	for _, tc := range []struct {
		name       string
		runTimeout time.Duration
		want       time.Duration // from the second run's start to its deadline
	}{
		{"shared", 2 * time.Second, 2*time.Second - stampTTL/2},
		{"short: the clock", sharedRunTimeout / 2, sharedRunTimeout / 2},
		{"none", -1, none},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				life := time.Duration(0)
				if tc.runTimeout < 0 {
					life = -1
				}
				d := New(context.Background(), Config{RunTimeout: tc.runTimeout, MaxLifetime: life, MaxInflight: 1})
				release := make(chan struct{})
				mustSubmit(t, d, "c", func(context.Context) error { <-release; return nil })
				got := make(chan time.Duration, 1)
				mustSubmit(t, d, "c", func(ctx context.Context) error {
					dl, _ := ctx.Deadline()
					got <- time.Until(dl)
					return nil
				})
				time.Sleep(stampTTL / 2) // the first run's reading, still shared
				close(release)
				if g := <-got; tc.runTimeout > 0 && g != tc.want || tc.runTimeout < 0 && g < tc.want-time.Hour {
					t.Fatalf("deadline %v after the run's start; want %v", g, tc.want)
				}
				if err := d.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
