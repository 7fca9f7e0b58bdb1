package sender_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// trace records the order in which decorators see a send.
type trace struct {
	mu     sync.Mutex
	events []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	tr.events = append(tr.events, s)
	tr.mu.Unlock()
}

// tracing returns a decorator that notes name before and after the send.
func (tr *trace) tracing(name string) sender.SenderDecorator {
	return func(next platform.Sender) platform.Sender {
		return platform.SenderFunc(func(ctx context.Context, r platform.SendRequest) (platform.SendResult, error) {
			tr.add(name + ">")
			res, err := next.Send(ctx, r)
			tr.add("<" + name)
			return res, err
		})
	}
}

func TestChainOrder(t *testing.T) {
	tr := &trace{}
	base := platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
		tr.add("send")
		return platform.SendResult{}, nil
	})
	ds := []sender.SenderDecorator{tr.tracing("a"), nil, tr.tracing("b"), tr.tracing("c")}
	chain := sender.Chain(ds...)
	ds[0] = tr.tracing("changed") // Chain keeps its own copy
	if _, err := chain(base).Send(context.Background(), req("1")); err != nil {
		t.Fatal(err)
	}
	want := []string{"a>", "b>", "c>", "send", "<c", "<b", "<a"}
	if !slices.Equal(tr.events, want) {
		t.Fatalf("order = %v; want %v", tr.events, want)
	}
}

func TestChainEmptyReturnsSender(t *testing.T) {
	r := &recorder{}
	for _, c := range []sender.SenderDecorator{sender.Chain(), sender.Chain(nil, nil)} {
		if got := c(r); got != platform.Sender(r) {
			t.Fatalf("empty chain returned %T; want the sender unchanged", got)
		}
	}
}

func TestChainNested(t *testing.T) {
	tr := &trace{}
	chain := sender.Chain(tr.tracing("a"), sender.Chain(tr.tracing("b"), tr.tracing("c")), tr.tracing("d"))
	if _, err := chain(&recorder{}).Send(context.Background(), req("1")); err != nil {
		t.Fatal(err)
	}
	want := []string{"a>", "b>", "c>", "d>", "<d", "<c", "<b", "<a"}
	if !slices.Equal(tr.events, want) {
		t.Fatalf("order = %v; want %v", tr.events, want)
	}
}
