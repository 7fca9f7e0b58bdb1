package onebot

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 2 * time.Second
	tests := []struct {
		attempt int
		r       float64
		want    time.Duration
	}{
		{0, 0, 50 * time.Millisecond},
		{0, 0.5, 75 * time.Millisecond},
		{1, 0, 100 * time.Millisecond},
		{2, 0.999999999, 400 * time.Millisecond},
		{4, 0, 800 * time.Millisecond},
		{5, 0, time.Second}, // 3.2s capped at 2s, halved
		{5, 0.5, 1500 * time.Millisecond},
		{63, 0, time.Second}, // no overflow
		{1 << 20, 0, time.Second},
		{0, -1, 50 * time.Millisecond}, // bad r treated as 0
		{0, 2, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		got := reconnectDelay(tt.attempt, lo, hi, tt.r)
		// Allow a nanosecond of float rounding.
		if d := got - tt.want; d < -1 || d > 1 {
			t.Errorf("reconnectDelay(%d, r=%v) = %v; want %v", tt.attempt, tt.r, got, tt.want)
		}
	}
	// Properties over many attempts and jitters: within [cap/2, cap], and the
	// lower bound never decreases with the attempt number.
	prevLow := time.Duration(0)
	for attempt := range 70 {
		capd := hi
		if attempt < 5 {
			capd = lo << attempt
		}
		for _, r := range []float64{0, 0.25, 0.5, 0.75, 0.999} {
			got := reconnectDelay(attempt, lo, hi, r)
			if got < capd/2 || got > capd {
				t.Fatalf("reconnectDelay(%d, %v) = %v; want within [%v, %v]", attempt, r, got, capd/2, capd)
			}
		}
		low := reconnectDelay(attempt, lo, hi, 0)
		if low < prevLow {
			t.Fatalf("backoff decreased at attempt %d", attempt)
		}
		prevLow = low
	}
	if got := reconnectDelay(0, time.Second, time.Second, 0.5); got != 750*time.Millisecond {
		t.Fatalf("lo == hi: %v", got)
	}
}
