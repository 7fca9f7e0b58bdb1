package handling

import (
	"testing"

	"github.com/heraldbot/herald/internal/leakcheck"
)

// TestMain fails the run if the tests leave goroutines behind.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
