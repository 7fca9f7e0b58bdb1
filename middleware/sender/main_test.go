package sender_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/leakcheck"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// TestMain fails the run if the tests leave goroutines behind.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// call is one call a recorder received.
type call struct {
	at          time.Time
	req         platform.SendRequest
	deadline    time.Time
	hasDeadline bool
}

// recorder is a fake platform sender: it records every call and answers
// with reply (nil means success). n is the 1-based number of the call.
type recorder struct {
	mu    sync.Mutex
	calls []call
	reply func(ctx context.Context, n int, req platform.SendRequest) error
}

func (r *recorder) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	dl, ok := ctx.Deadline()
	r.mu.Lock()
	r.calls = append(r.calls, call{at: time.Now(), req: req, deadline: dl, hasDeadline: ok})
	n := len(r.calls)
	r.mu.Unlock()
	if r.reply != nil {
		if err := r.reply(ctx, n, req); err != nil {
			return platform.SendResult{}, err
		}
	}
	return platform.SendResult{MessageID: "m" + strconv.Itoa(n), ChatID: req.Target.ID, SentAt: time.Now()}, nil
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// failFirst answers the first k calls with err and later ones with success.
func failFirst(k int, err error) func(context.Context, int, platform.SendRequest) error {
	return func(_ context.Context, n int, _ platform.SendRequest) error {
		if n <= k {
			return err
		}
		return nil
	}
}

// always answers every call with err.
func always(err error) func(context.Context, int, platform.SendRequest) error {
	return func(context.Context, int, platform.SendRequest) error { return err }
}

func req(chat string) platform.SendRequest {
	return platform.SendRequest{Platform: "test", Target: platform.Chat{ID: chat, Type: platform.ChatPrivate}, Message: platform.TextMessage("hello " + chat)}
}

func groupReq(chat string) platform.SendRequest {
	r := req(chat)
	r.Target.Type = platform.ChatGroup
	return r
}

// noJitter is a RetryConfig base for exact waits.
func noJitter(attempts int, base, maxBackoff time.Duration) sender.RetryConfig {
	return sender.RetryConfig{MaxAttempts: attempts, BaseBackoff: base, MaxBackoff: maxBackoff, Jitter: -1}
}

// resumer runs the sender below it as the engine's dispatcher runs a send:
// with a resumable platform.Progress in the context (its Deadline the
// context's, as the dispatcher's MaxLifetime bounds a send), and again
// after each pause's delay — or at once when the context ends, as
// ForceClose wakes a paused send. It checks no run waits in place.
type resumer struct {
	next platform.Sender

	mu      sync.Mutex
	pauses  int
	longest time.Duration // longest single run
}

func (r *resumer) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	dl, _ := ctx.Deadline()
	p := platform.NewProgress(time.Now(), dl)
	rctx := platform.WithProgress(ctx, p)
	for {
		start := time.Now()
		res, err := r.next.Send(rctx, req)
		took := time.Since(start)
		d, paused := platform.PauseOf(err)
		r.mu.Lock()
		r.longest = max(r.longest, took)
		if paused {
			r.pauses++
		}
		r.mu.Unlock()
		if !paused {
			return res, err
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

func (r *resumer) stats() (pauses int, longest time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pauses, r.longest
}

// sendModes are the two ways a chain runs: called directly it waits in
// place; under the dispatcher it pauses. Tests of the whole chain run in
// both and expect the same behaviour.
var sendModes = []struct {
	name    string
	resumed bool
}{{"in place", false}, {"resumed", true}}

// inMode returns s run in place, or under a resumer (also returned).
func inMode(resumed bool, s platform.Sender) (platform.Sender, *resumer) {
	if !resumed {
		return s, nil
	}
	r := &resumer{next: s}
	return r, r
}

// checkResumed checks a resumed run paused at least minPauses times and
// never waited inside a run; it does nothing in place.
func checkResumed(t *testing.T, r *resumer, minPauses int) {
	t.Helper()
	if r == nil {
		return
	}
	pauses, longest := r.stats()
	if pauses < minPauses || longest != 0 {
		t.Fatalf("resumed: %d pauses, longest run %v; want at least %d pauses and no wait inside a run", pauses, longest, minPauses)
	}
}
