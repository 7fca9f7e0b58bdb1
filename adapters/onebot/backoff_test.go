package onebot

import (
	"context"
	"testing"
	"testing/synctest"
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
		got := backoff(tt.attempt, lo, hi, tt.r)
		// Allow a nanosecond of float rounding.
		if d := got - tt.want; d < -1 || d > 1 {
			t.Errorf("backoff(%d, r=%v) = %v; want %v", tt.attempt, tt.r, got, tt.want)
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
			got := backoff(attempt, lo, hi, r)
			if got < capd/2 || got > capd {
				t.Fatalf("backoff(%d, %v) = %v; want within [%v, %v]", attempt, r, got, capd/2, capd)
			}
		}
		low := backoff(attempt, lo, hi, 0)
		if low < prevLow {
			t.Fatalf("backoff decreased at attempt %d", attempt)
		}
		prevLow = low
	}
	if got := backoff(0, time.Second, time.Second, 0.5); got != 750*time.Millisecond {
		t.Fatalf("lo == hi: %v", got)
	}
}

func TestSleepCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !sleepCtx(t.Context(), 3*time.Second) || time.Since(start) != 3*time.Second {
			t.Fatalf("sleepCtx slept %v", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		if sleepCtx(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Fatalf("sleepCtx with a 1s context returned after %v", time.Since(start))
		}
	})
}
