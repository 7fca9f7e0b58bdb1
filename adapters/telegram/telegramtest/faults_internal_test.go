package telegramtest

import (
	"testing"
	"time"
)

func TestRetryAfterSeconds(t *testing.T) {
	for left, want := range map[time.Duration]int{
		time.Nanosecond:                  1,
		999 * time.Millisecond:           1,
		time.Second:                      1,
		time.Second + 1:                  2,
		1500 * time.Millisecond:          2,
		2 * time.Second:                  2,
		10*time.Minute - time.Nanosecond: 600,
	} {
		if got := retryAfterSeconds(left); got != want {
			t.Errorf("retryAfterSeconds(%v) = %d; want %d", left, got, want)
		}
	}
}
