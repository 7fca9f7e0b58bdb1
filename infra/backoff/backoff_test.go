package backoff_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/infra/backoff"
)

func TestExponential(t *testing.T) {
	const s = time.Second
	tests := []struct {
		n         int
		base, max time.Duration
		want      time.Duration
	}{
		{0, s, 30 * s, s},
		{1, s, 30 * s, 2 * s},
		{4, s, 30 * s, 16 * s},
		{5, s, 30 * s, 30 * s},
		{-3, s, 30 * s, s},
		{62, s, 30 * s, 30 * s},
		{1 << 30, s, 30 * s, 30 * s},
		{3, 500 * time.Millisecond, 30 * s, 4 * s},
		{0, 2 * s, s, s},
		{0, 0, s, s},
	}
	for _, tt := range tests {
		if got := backoff.Exponential(tt.n, tt.base, tt.max); got != tt.want {
			t.Errorf("Exponential(%d, %v, %v) = %v; want %v", tt.n, tt.base, tt.max, got, tt.want)
		}
	}
}

func TestEqualJitter(t *testing.T) {
	d := 10 * time.Second
	for _, tc := range []struct {
		r    float64
		want time.Duration
	}{{0, 5 * time.Second}, {0.5, 7500 * time.Millisecond}, {0.999999, 9999995 * time.Microsecond}, {1, 5 * time.Second}, {-1, 5 * time.Second}, {math.NaN(), 5 * time.Second}} {
		if got := backoff.EqualJitter(d, tc.r); got != tc.want {
			t.Errorf("EqualJitter(%v, %v) = %v; want %v", d, tc.r, got, tc.want)
		}
	}
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !backoff.Sleep(context.Background(), 3*time.Second) || time.Since(start) != 3*time.Second {
			t.Fatalf("Sleep returned after %v", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if backoff.Sleep(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Fatalf("Sleep past its context returned after %v", time.Since(start))
		}
		if backoff.Sleep(ctx, 0) {
			t.Fatal("Sleep(0) on an ended context reported true")
		}
		if !backoff.Sleep(context.Background(), -time.Second) {
			t.Fatal("Sleep(-1s) reported false")
		}
	})
}
