// Package backoff computes and waits out the pauses between retries:
// exponential growth with a cap, jitter, and a sleep that ends with its
// context. The adapters' reconnect and poll loops and the sender's Retry
// share it.
package backoff

import (
	"context"
	"time"
)

// Exponential returns base·2^n capped at max, for the n-th retry counted
// from 0 (a negative n counts as 0). It never overflows: a large n gives
// max. A max below base gives max.
func Exponential(n int, base, max time.Duration) time.Duration {
	if n < 0 {
		n = 0
	}
	if base <= 0 || n >= 62 || base > max>>n {
		return max
	}
	return base << n
}

// EqualJitter returns a duration between d/2 and d, placed by r in [0, 1)
// ("equal jitter"): many clients restarted together do not retry in step,
// and each wait keeps at least half its size. An r outside [0, 1), or NaN,
// counts as 0.
func EqualJitter(d time.Duration, r float64) time.Duration {
	if !(r >= 0 && r < 1) {
		r = 0
	}
	half := d / 2
	return d - half + time.Duration(r*float64(half))
}

// Sleep waits for d or until ctx ends, and reports whether d passed. A d of
// zero or less returns at once, true unless ctx has ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
