package platform_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

func TestRetryAfterThroughWrapping(t *testing.T) {
	cause := errors.New("429 Too Many Requests")
	err := fmt.Errorf("send: %w", platform.NewRetryAfter(2*time.Second, cause))
	d, ok := platform.RetryAfterOf(err)
	if !ok || d != 2*time.Second {
		t.Fatalf("RetryAfterOf = %v, %v; want 2s, true", d, ok)
	}
	if !errors.Is(err, cause) {
		t.Fatal("cause lost through RetryAfter")
	}
	if platform.IsPermanent(err) {
		t.Fatal("retry-after error reported permanent")
	}
	if _, ok := platform.RetryAfterOf(cause); ok {
		t.Fatal("plain error reported as retry-after")
	}
	if d, _ := platform.RetryAfterOf(platform.NewRetryAfter(-time.Second, nil)); d != 0 {
		t.Fatalf("negative retry-after = %v; want 0", d)
	}
	if got := platform.NewRetryAfter(time.Second, nil).Error(); got != "platform: retry after 1s" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestPermanentThroughWrapping(t *testing.T) {
	cause := errors.New("403 Forbidden: bot was blocked by the user")
	err := fmt.Errorf("send to 42: %w", platform.Permanent(cause))
	if !platform.IsPermanent(err) {
		t.Fatal("IsPermanent false through %w")
	}
	if !errors.Is(err, cause) {
		t.Fatal("cause lost through Permanent")
	}
	if got := platform.Permanent(cause).Error(); got != cause.Error() {
		t.Fatalf("Permanent changed the message: %q", got)
	}
	if platform.Permanent(nil) != nil {
		t.Fatal("Permanent(nil) != nil")
	}
	if platform.IsPermanent(cause) || platform.IsPermanent(nil) {
		t.Fatal("unmarked error reported permanent")
	}
	p := platform.Permanent(cause)
	if platform.Permanent(p) != p {
		t.Fatal("Permanent wrapped an already permanent error again")
	}
}

func TestSenderFunc(t *testing.T) {
	var got platform.SendRequest
	var s platform.Sender = platform.SenderFunc(func(_ context.Context, req platform.SendRequest) (platform.SendResult, error) {
		got = req
		return platform.SendResult{MessageID: "9", ChatID: req.Target.ID}, nil
	})
	res, err := s.Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: "c"}, Message: platform.TextMessage("hi")})
	if err != nil || res.MessageID != "9" || res.ChatID != "c" || got.Message.Text != "hi" {
		t.Fatalf("Send = %+v, %v (req %+v)", res, err, got)
	}
}

func TestMaybeDelivered(t *testing.T) {
	cause := errors.New("read: connection reset by peer")
	err := fmt.Errorf("send: %w", platform.MaybeDelivered(cause))
	if !errors.Is(err, platform.ErrMaybeDelivered) || !errors.Is(err, cause) {
		t.Fatalf("MaybeDelivered lost a match: %v", err)
	}
	if got := platform.MaybeDelivered(cause).Error(); got != cause.Error() {
		t.Fatalf("MaybeDelivered changed the message: %q", got)
	}
	if platform.IsPermanent(err) {
		t.Fatal("ambiguous error reported permanent")
	}
	if p := platform.Permanent(platform.MaybeDelivered(cause)); !platform.IsPermanent(p) || !errors.Is(p, platform.ErrMaybeDelivered) {
		t.Fatal("permanent ambiguous error lost a kind")
	}
	if platform.MaybeDelivered(nil) != nil || errors.Is(cause, platform.ErrMaybeDelivered) {
		t.Fatal("MaybeDelivered(nil) or an unmarked error")
	}
	m := platform.MaybeDelivered(cause)
	if platform.MaybeDelivered(m) != m {
		t.Fatal("marked twice")
	}
}
