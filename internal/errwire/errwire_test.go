package errwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// An error written down and read back keeps its text, its kind and the
// sentinels it matched, and matches no other.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		permanent bool
		wait      time.Duration
		is        []error
	}{
		{"nil", nil, false, 0, nil},
		{"plain", errors.New("connection reset"), false, 0, nil},
		{"unsupported", platform.Permanent(fmt.Errorf("telegram: %w: stickers here", platform.ErrUnsupported)), true, 0, []error{platform.ErrUnsupported}},
		{"too large", platform.Permanent(fmt.Errorf("x: %w", platform.ErrFileTooLarge)), true, 0, []error{platform.ErrFileTooLarge}},
		{"flood", platform.NewRetryAfter(30*time.Second, errors.New("429")), false, 30 * time.Second, nil},
		{"maybe delivered", platform.MaybeDelivered(fmt.Errorf("timeout: %w", context.DeadlineExceeded)), false, 0, []error{platform.ErrMaybeDelivered, context.DeadlineExceeded}},
		{"answered", platform.Permanent(fmt.Errorf("%w", platform.ErrAlreadyAnswered)), true, 0, []error{platform.ErrAlreadyAnswered}},
		{"blocked", platform.Permanent(fmt.Errorf("telegram: sendMessage: 403: %w", platform.ErrBlocked)), true, 0, []error{platform.ErrBlocked}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(Encode(tt.err, Sentinels))
			if err != nil {
				t.Fatal(err)
			}
			var w Error
			if err := json.Unmarshal(b, &w); err != nil {
				t.Fatal(err)
			}
			got := w.Decode(Sentinels)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("Decode = %v; want nil", got)
				}
				return
			}
			if got == nil || got.Error() != tt.err.Error() || platform.IsPermanent(got) != tt.permanent {
				t.Fatalf("Decode = %v (permanent %v); want %q (permanent %v)", got, platform.IsPermanent(got), tt.err, tt.permanent)
			}
			if d, ok := platform.RetryAfterOf(got); ok != (tt.wait > 0) || d != tt.wait {
				t.Errorf("retry after %v, %v; want %v", d, ok, tt.wait)
			}
			for _, s := range Sentinels {
				if want := errors.Is(tt.err, s.Err); errors.Is(got, s.Err) != want {
					t.Errorf("Decode = %v: errors.Is(%s) = %v; want %v", got, s.Name, !want, want)
				}
			}
		})
	}
}

// The first form (text and permanence alone) and names a reader does not
// know read back as the error they can tell.
func TestOlderAndNewerWriters(t *testing.T) {
	var w Error
	if err := json.Unmarshal([]byte(`{"error":"gone","permanent":true,"is":["from_the_future","blocked"]}`), &w); err != nil {
		t.Fatal(err)
	}
	err := w.Decode(Sentinels)
	if err == nil || err.Error() != "gone" || !platform.IsPermanent(err) || !errors.Is(err, platform.ErrBlocked) {
		t.Fatalf("Decode = %v; want the permanent error gone, matching ErrBlocked", err)
	}
}
