package cluster

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/heraldbot/herald/platform"
)

// TestWireError checks that an error told by one member to another keeps
// its text, its kind and the sentinels it matched — the cluster's own
// and errwire's (whose tests hold the others) — and that an outcome of the
// first version still decodes.
func TestWireError(t *testing.T) {
	parallel(t, 0)
	for err, want := range map[error]error{
		platform.Permanent(errors.Join(errors.New("403"), platform.ErrBlocked)): platform.ErrBlocked,
		ErrLeaseLost:   ErrLeaseLost,
		errGatewayBusy: errGatewayBusy,
	} {
		b, merr := json.Marshal(outcome{Key: "k", wireError: encodeError(err)})
		var o outcome
		if merr != nil || json.Unmarshal(b, &o) != nil {
			t.Fatalf("%v does not go through JSON: %s, %v", err, b, merr)
		}
		got := decodeError(o.wireError)
		if !errors.Is(got, want) {
			t.Errorf("%v came back as %v, not matching %v", err, got, want)
		}
		for _, s := range sentinels {
			if errors.Is(got, s.Err) != errors.Is(err, s.Err) || got.Error() != err.Error() || platform.IsPermanent(got) != platform.IsPermanent(err) {
				t.Errorf("%v came back as %v (permanent %v): errors.Is(%s) differs, or its text or kind", err, got, platform.IsPermanent(got), s.Name)
			}
		}
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
