package platform_test

import (
	"testing"

	"github.com/heraldbot/herald/internal/leakcheck"
)

// TestMain fails the run if the tests leave goroutines behind (a Stream's
// loop, say).
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
