package onebot

import (
	"time"

	"github.com/heraldbot/herald/infra/backoff"
)

// reconnectDelay returns how long forward mode waits before reconnect attempt
// number attempt (0 for the first wait after a drop): a duration between
// half and all of min(hi, lo·2^attempt), placed by r in [0, 1) ("equal
// jitter", so that many adapters restarted together do not redial in
// step, while each wait keeps at least half its exponential size).
func reconnectDelay(attempt int, lo, hi time.Duration, r float64) time.Duration {
	return backoff.EqualJitter(backoff.Exponential(attempt, lo, hi), r)
}
