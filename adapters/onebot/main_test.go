package onebot

import (
	"testing"

	"github.com/heraldbot/herald/internal/leakcheck"
	"github.com/heraldbot/herald/internal/testmain"
)

// TestMain runs 8 parallel tests at once (the conformance suites wait on
// their peers more than they compute), and fails the run if the tests
// leave goroutines behind.
func TestMain(m *testing.M) {
	testmain.Parallel(8)
	leakcheck.VerifyTestMain(m)
}
