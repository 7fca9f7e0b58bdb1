package sender_test

import (
	"testing"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// LimitsOf maps each published bucket onto the rate limiter's, and leaves
// zero rates unlimited.
func TestLimitsOf(t *testing.T) {
	got := sender.LimitsOf(platform.Limits{PerSecond: 10, Burst: 2, PerGroupPerSecond: 0.5, PerGroupBurst: 4})
	want := sender.RateLimitConfig{Global: 10, GlobalBurst: 2, PerGroup: 0.5, PerGroupBurst: 4}
	if got != want {
		t.Fatalf("LimitsOf = %+v; want %+v", got, want)
	}
	if got := sender.LimitsOf(platform.Limits{PerChatPerSecond: -1, PerChatBurst: 3}); got.PerChat != 0 {
		t.Fatalf("a negative rate gave %v; want no limit", got.PerChat)
	}
}
