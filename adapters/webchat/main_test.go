package webchat_test

import (
	"testing"

	"github.com/heraldbot/herald/internal/leakcheck"
)

// TestMain fails the run if the tests leave goroutines behind, once the
// browser they share has stopped.
func TestMain(m *testing.M) { leakcheck.VerifyTestMainAfter(m, sharedChromium.stop) }
