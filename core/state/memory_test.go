package state_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/core/state/statetest"
)

func TestMemoryStoreSuite(t *testing.T) {
	statetest.Run(t, func(*testing.T) state.Store { return state.NewMemoryStore() },
		statetest.Features{TTLUnit: time.Second, Bubble: synctest.Test})
}

// Expired keys do not pile up: a store written to keeps only what lives.
func TestMemoryStoreDropsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := state.NewMemoryStore()
		ctx := context.Background()
		for i := range 1000 {
			if _, err := s.Create(ctx, fmt.Sprint("old", i), []byte("x"), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Minute)
		for i := range 1000 {
			if _, err := s.Create(ctx, fmt.Sprint("new", i), []byte("x"), 0); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.Len(); n != 1000 {
			t.Fatalf("Len = %d; want 1000", n)
		}
	})
}
