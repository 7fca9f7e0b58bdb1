package telegram

import (
	"testing"

	"github.com/heraldbot/herald/internal/leakcheck"
	"github.com/heraldbot/herald/internal/testmain"
)

// TestMain runs 16 parallel tests at once (most wait for Telegram's
// pacing, in real time), and fails the run if the tests leave goroutines
// behind.
func TestMain(m *testing.M) {
	testmain.Parallel(16)
	leakcheck.VerifyTestMain(m)
}
