package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// fakeKeys is a members bucket whose listing gives keys and then, if
// endless, never ends by itself (as when the last key it was told of runs
// out before it is delivered): its channel closes when the listing's
// context ends, as nats.go's does. Any other method (Keys among them)
// panics: memberKeys must not wait on a listing its context cannot end.
type fakeKeys struct {
	jetstream.KeyValue
	keys    []string
	endless bool
}

type fakeLister struct{ ch chan string }

func (l fakeLister) Keys() <-chan string { return l.ch }
func (l fakeLister) Stop() error         { return nil }

func (f fakeKeys) ListKeys(ctx context.Context, _ ...jetstream.WatchOpt) (jetstream.KeyLister, error) {
	ch := make(chan string)
	go func() {
		defer close(ch)
		for _, k := range f.keys {
			select {
			case ch <- k:
			case <-ctx.Done():
				return
			}
		}
		if f.endless {
			<-ctx.Done()
		}
	}()
	return fakeLister{ch}, nil
}

func TestMemberKeysBoundedByContext(t *testing.T) {
	got, err := memberKeys(context.Background(), fakeKeys{keys: []string{"c", "a", "b", "a"}})
	if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("memberKeys = %q, %v; want [a b c], nil", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	got, err = memberKeys(ctx, fakeKeys{keys: []string{"a"}, endless: true})
	if !errors.Is(err, context.DeadlineExceeded) || got != nil {
		t.Fatalf("memberKeys of a listing that never ends = %q, %v; want nil and the context's error", got, err)
	}
}
