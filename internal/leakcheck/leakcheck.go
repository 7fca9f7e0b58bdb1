// Package leakcheck makes a package's tests fail when they leave goroutines
// behind. It is goleak with patience for goroutines that are ending: ones
// told to stop when the last test returned, but not yet run since. goleak's
// own retries give them well under a second, too little on a loaded CI
// machine; leakcheck gives them up to [Patience]. A goroutine that truly
// leaked is still there then.
package leakcheck

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldbot/herald/internal/testmain"
)

// Patience is how long Find waits for goroutines to end.
const Patience = 10 * time.Second

// Find returns nil once no goroutine other than the caller's and those opts
// ignore is left, or goleak's error describing them after Patience.
func Find(opts ...goleak.Option) error {
	deadline := time.Now().Add(Patience)
	err := goleak.Find(opts...)
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // a test helper's wait, bounded by Patience: goroutines end in their own time
		err = goleak.Find(opts...)
	}
	return err
}

// VerifyTestMain runs m's tests and exits with their code, or with 1 when
// they passed but left goroutines (see Find), as [testmain.Exit] does.
// Call it from TestMain.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	VerifyTestMainAfter(m, func() {}, opts...)
}

// VerifyTestMainAfter is VerifyTestMain for tests that share something
// started once for the whole run (a browser): after the tests, it calls
// stop, which must end every goroutine of what they shared, then checks
// that none is left.
func VerifyTestMainAfter(m *testing.M, stop func(), opts ...goleak.Option) {
	code := m.Run()
	stop()
	if code == 0 {
		if err := Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	testmain.Exit(code)
}
