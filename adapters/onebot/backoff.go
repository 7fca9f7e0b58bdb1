package onebot

import (
	"context"
	"time"
)

// backoff returns how long forward mode waits before reconnect attempt
// number attempt (0 for the first wait after a drop): a duration between
// half and all of min(hi, lo·2^attempt), placed by r in [0, 1) ("equal
// jitter", so that many adapters restarted together do not redial in
// step, while each wait keeps at least half its exponential size).
func backoff(attempt int, lo, hi time.Duration, r float64) time.Duration {
	d := hi
	if attempt < 62 && lo <= hi>>attempt {
		d = lo << attempt
	}
	if r < 0 || r >= 1 || r != r {
		r = 0
	}
	half := d / 2
	return d - half + time.Duration(r*float64(half))
}

// sleepCtx waits for d or until ctx ends, and reports whether the whole
// wait elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
