// Package statetest is the suite every [state.Store] passes: the
// MemoryStore and package cluster's store on JetStream run it in their
// tests, as adapters run adaptertest. A store of your own runs it too:
//
//	func TestStore(t *testing.T) {
//		statetest.Run(t, func(t *testing.T) state.Store { return newStore(t) }, statetest.Features{})
//	}
package statetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/core/state"
)

// Features says how a store differs from the suite's defaults.
type Features struct {
	// TTLUnit is the smallest TTL the store keeps exactly; the suite's
	// TTL test uses it. 0 means a millisecond.
	TTLUnit time.Duration
	// Bubble, if not nil, runs each subtest's body: synctest.Test, for a
	// store on a fake clock.
	Bubble func(t *testing.T, body func(t *testing.T))
}

// Run runs the suite on stores from newStore, one per subtest.
func Run(t *testing.T, newStore func(t *testing.T) state.Store, f Features) {
	if f.TTLUnit <= 0 {
		f.TTLUnit = time.Millisecond
	}
	if f.Bubble == nil {
		f.Bubble = func(t *testing.T, body func(t *testing.T)) { body(t) }
	}
	sub := func(name string, body func(t *testing.T)) {
		t.Run(name, func(t *testing.T) { f.Bubble(t, body) })
	}
	ctx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		return ctx
	}
	sub("CreateGetUpdateDelete", func(t *testing.T) {
		s, ctx := newStore(t), ctx(t)
		if _, _, err := s.Get(ctx, "a/b"); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("Get of a missing key: %v; want ErrStateNotFound", err)
		}
		r1, err := s.Create(ctx, "a/b", []byte("one"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, "a/b", []byte("again"), 0); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("Create of an existing key: %v; want ErrStateConflict", err)
		}
		v, rev, err := s.Get(ctx, "a/b")
		if err != nil || string(v) != "one" || rev != r1 {
			t.Fatalf("Get = %q, %d, %v; want one, %d", v, rev, err, r1)
		}
		r2, err := s.Update(ctx, "a/b", []byte("two"), r1, 0)
		if err != nil || r2 == r1 {
			t.Fatalf("Update = %d, %v", r2, err)
		}
		if _, err := s.Update(ctx, "a/b", []byte("stale"), r1, 0); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("Update of a stale revision: %v; want ErrStateConflict", err)
		}
		if v, _, _ := s.Get(ctx, "a/b"); string(v) != "two" {
			t.Fatalf("after a refused Update: %q", v)
		}
		if err := s.Delete(ctx, "a/b", r1); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("Delete of a stale revision: %v; want ErrStateConflict", err)
		}
		if err := s.Delete(ctx, "a/b", r2); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Get(ctx, "a/b"); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("Get after Delete: %v", err)
		}
		if _, err := s.Update(ctx, "a/b", []byte("x"), r2, 0); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("Update of a deleted key: %v; want ErrStateConflict", err)
		}
		if err := s.Delete(ctx, "a/b", 0); err != nil {
			t.Fatalf("Delete of a missing key: %v", err)
		}
		if _, err := s.Create(ctx, "a/b", []byte("three"), 0); err != nil {
			t.Fatalf("Create after Delete: %v", err)
		}
		if v, _, _ := s.Get(ctx, "a/b"); string(v) != "three" {
			t.Fatalf("after Create over a deleted key: %q", v)
		}
	})
	sub("Keys", func(t *testing.T) {
		s, ctx := newStore(t), ctx(t)
		keys, err := s.Keys(ctx, "")
		if err != nil || len(keys) != 0 {
			t.Fatalf("Keys of an empty store = %q, %v", keys, err)
		}
		// Keys with bytes a NATS subject or KV key cannot hold.
		odd := []string{"p/a.b", "p/sp ace", "p/*>", "p/ü_%2F", "q/x"}
		for _, k := range odd {
			if _, err := s.Create(ctx, k, []byte(k), 0); err != nil {
				t.Fatalf("Create %q: %v", k, err)
			}
		}
		if err := s.Delete(ctx, "p/*>", 0); err != nil {
			t.Fatal(err)
		}
		keys, err = s.Keys(ctx, "p/")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		if want := []string{"p/a.b", "p/sp ace", "p/ü_%2F"}; !slices.Equal(keys, want) {
			t.Fatalf("Keys(p/) = %q; want %q", keys, want)
		}
		for _, k := range keys {
			if v, _, err := s.Get(ctx, k); err != nil || string(v) != k {
				t.Fatalf("Get %q = %q, %v", k, v, err)
			}
		}
	})
	sub("TTL", func(t *testing.T) {
		s, ctx := newStore(t), ctx(t)
		ttl := 2 * f.TTLUnit
		r, err := s.Create(ctx, "t", []byte("1"), ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, "forever", []byte("1"), 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(f.TTLUnit) // a timeout under test: the key's TTL (fake time under Features.Bubble)
		// An update renews the TTL.
		if _, err := s.Update(ctx, "t", []byte("2"), r, ttl); err != nil {
			t.Fatal(err)
		}
		time.Sleep(f.TTLUnit + f.TTLUnit/2) // a timeout under test, as above
		if v, _, err := s.Get(ctx, "t"); err != nil || string(v) != "2" {
			t.Fatalf("Get within the renewed TTL = %q, %v", v, err)
		}
		var err2 error
		for range 20 { // a store may drop an expired key a little late
			time.Sleep(f.TTLUnit) // a timeout under test, as above
			if _, _, err2 = s.Get(ctx, "t"); errors.Is(err2, state.ErrNotFound) {
				break
			}
		}
		if !errors.Is(err2, state.ErrNotFound) {
			t.Fatalf("Get after the TTL: %v; want ErrStateNotFound", err2)
		}
		if _, err := s.Create(ctx, "t", []byte("3"), 0); err != nil {
			t.Fatalf("Create over an expired key: %v", err)
		}
		if _, _, err := s.Get(ctx, "forever"); err != nil {
			t.Fatalf("a key without TTL: %v", err)
		}
	})
	sub("ConcurrentCAS", func(t *testing.T) {
		s, ctx := newStore(t), ctx(t)
		const writers, each = 4, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := 0; i < each; {
					v, rev, err := s.Get(ctx, "n")
					n := 0
					if err == nil {
						n, _ = strconv.Atoi(string(v))
					} else if !errors.Is(err, state.ErrNotFound) {
						errs <- err
						return
					}
					data := []byte(fmt.Sprint(n + 1))
					if rev == 0 {
						_, err = s.Create(ctx, "n", data, 0)
					} else {
						_, err = s.Update(ctx, "n", data, rev, 0)
					}
					switch {
					case err == nil:
						i++
					case !errors.Is(err, state.ErrConflict):
						errs <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		v, _, err := s.Get(ctx, "n")
		if err != nil || string(v) != fmt.Sprint(writers*each) {
			t.Fatalf("after %d CAS increments: %q, %v", writers*each, v, err)
		}
	})
	sub("ContextEnded", func(t *testing.T) {
		s := newStore(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := s.Get(ctx, "k"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Get with an ended context: %v", err)
		}
		if _, err := s.Create(ctx, "k", []byte("v"), 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Create with an ended context: %v", err)
		}
	})
}
