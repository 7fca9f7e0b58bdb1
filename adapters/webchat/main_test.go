package webchat_test

import (
	"testing"

	"github.com/heraldbot/herald/internal/leakcheck"
	"github.com/heraldbot/herald/internal/testmain"
)

// TestMain fails the run if the tests leave goroutines behind, once the
// browser they share has stopped. The browser tests wait on the page more
// than they compute: four at once take the package alone from about 40 s
// to 25–30 s on 2 cores, the same CPU.
func TestMain(m *testing.M) {
	testmain.Parallel(4)
	leakcheck.VerifyTestMainAfter(m, sharedChromium.stop)
}
