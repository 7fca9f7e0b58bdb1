package sender

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

type otherKey struct{}

func TestRecordIsAContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	ctx, rec := withRecord(parent, "owner")
	if recordFrom(ctx) != rec || ctx.Value(otherKey{}) != "v" {
		t.Fatal("record does not find itself or hides the parent's values")
	}
	if again, rec2 := withRecord(ctx, "other"); again != ctx || rec2 != rec {
		t.Fatal("withRecord did not reuse the record")
	}
	if rec.attemptsOf() != 1 {
		t.Fatalf("attempts = %d before any Retry; want 1", rec.attemptsOf())
	}
	child, stop := context.WithTimeout(ctx, time.Hour)
	defer stop()
	cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the parent did not reach a child of the record")
	}
	if !strings.HasSuffix(rec.String(), ".WithSendRecord") {
		t.Fatalf("String() = %q", rec.String())
	}
}

// TestRecordNestedChains checks that a chain running inside another chain's
// platform sender keeps its own count, and that a Retry nested in another
// leaves the count to the outer one.
func TestRecordNestedChains(t *testing.T) {
	var innerCounters, outerCounters Counters
	innerCalls := 0
	flaky := platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
		innerCalls++
		if innerCalls%2 == 1 {
			return platform.SendResult{}, errors.New("flaky")
		}
		return platform.SendResult{}, nil
	})
	fast := RetryConfig{MaxAttempts: 3, BaseBackoff: time.Nanosecond, Jitter: -1}
	inner := Chain(innerCounters.Decorator(), Retry(fast))(flaky)
	outerCalls := 0
	outerPlatform := platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
		outerCalls++
		res, err := inner.Send(ctx, req)
		if err == nil && outerCalls == 1 {
			return res, errors.New("outer flaky")
		}
		return res, err
	})
	outer := Chain(outerCounters.Decorator(), Retry(fast))(outerPlatform)
	if _, err := outer.Send(context.Background(), platform.SendRequest{}); err != nil {
		t.Fatal(err)
	}
	// Outer: 2 attempts. Inner: two sends of 2 attempts each.
	if got := outerCounters.Snapshot(); got.Attempts != 2 || got.Received != 1 {
		t.Fatalf("outer counters %+v; want 1 send, 2 attempts", got)
	}
	if got := innerCounters.Snapshot(); got.Attempts != 4 || got.Received != 2 {
		t.Fatalf("inner counters %+v; want 2 sends, 4 attempts", got)
	}

	var c Counters
	calls := 0
	always := platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
		calls++
		return platform.SendResult{}, errors.New("down")
	})
	_, err := Chain(c.Decorator(), Retry(RetryConfig{MaxAttempts: 2, BaseBackoff: time.Nanosecond, Jitter: -1}), Retry(fast))(always).
		Send(context.Background(), platform.SendRequest{})
	if n, _ := AttemptsOf(err); n != 2 || calls != 6 || c.Snapshot().Attempts != 2 {
		t.Fatalf("nested Retry: AttemptsOf %d, calls %d, counted %d; want the outer Retry's 2 (6 calls)", n, calls, c.Snapshot().Attempts)
	}
}
