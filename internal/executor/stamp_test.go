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
