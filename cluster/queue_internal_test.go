package cluster

import (
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/testmain"
)

// TestQueue starts the package's parallel tests, its own and
// cluster_test's, longest first (see testmain.Queue): declared in order,
// the longest started last and ran alone. TestMain sets it up. It exists
// only in the package's test binary.
var TestQueue testmain.Queue

// parallel makes t a parallel test that starts in its turn, expect being
// about how long it runs alone on an idle machine under the race detector
// (0: a short test).
func parallel(t *testing.T, expect time.Duration) {
	t.Helper()
	TestQueue.Run(t, expect)
}
