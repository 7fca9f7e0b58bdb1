package sender_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

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
