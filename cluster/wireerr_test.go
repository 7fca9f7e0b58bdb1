package cluster

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// TestWireError checks that an error told by one member to another keeps
// its text, its kind and the sentinels it matched — the cluster's own
// and errwire's (whose tests hold the others) — and that an outcome of the
// first version still decodes.
func TestWireError(t *testing.T) {
	parallel(t, 0)
	tests := []struct {
		name      string
		err       error
		permanent bool
		wait      time.Duration
		is        []error
	}{
		{"nil", nil, false, 0, nil},
		{"blocked", platform.Permanent(errors.Join(errors.New("403"), platform.ErrBlocked)), true, 0, []error{platform.ErrBlocked}},
		{"lease lost", ErrLeaseLost, false, 0, []error{ErrLeaseLost}},
		{"busy", errGatewayBusy, false, 0, []error{errGatewayBusy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(encodeError(tt.err))
			if err != nil {
				t.Fatal(err)
			}
			var w wireError
			if err := json.Unmarshal(b, &w); err != nil {
				t.Fatal(err)
			}
			got := decodeError(w)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("decode = %v; want nil", got)
				}
				return
			}
			if got == nil || got.Error() != tt.err.Error() || platform.IsPermanent(got) != tt.permanent {
				t.Fatalf("decode = %v (permanent %v); want %q (permanent %v)", got, platform.IsPermanent(got), tt.err, tt.permanent)
			}
			if d, ok := platform.RetryAfterOf(got); ok != (tt.wait > 0) || d != tt.wait {
				t.Errorf("retry after %v, %v; want %v", d, ok, tt.wait)
			}
			for _, s := range tt.is {
				if !errors.Is(got, s) {
					t.Errorf("decode = %v; want it to match %v", got, s)
				}
			}
			if errors.Is(got, platform.ErrInvalidMessage) && !errors.Is(tt.err, platform.ErrInvalidMessage) {
				t.Errorf("decode = %v matches ErrInvalidMessage, which the original did not", got)
			}
		})
	}
	// An outcome of the first version still decodes.
	var o outcome
	if err := json.Unmarshal([]byte(`{"key":"k","result":{},"error":"gone","permanent":true}`), &o); err != nil {
		t.Fatal(err)
	}
	if err := decodeError(o.wireError); err == nil || err.Error() != "gone" || !platform.IsPermanent(err) {
		t.Errorf("an old outcome decodes to %v; want the permanent error gone", err)
	}
}
