package webchat_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain runs the tests, then fails the run if goroutines are left. It
// is goleak.VerifyTestMain with more patience: goroutines that are ending
// when the last test returns (an HTTP client's connection readers, which
// see that their server closed only when they next run) get up to ten
// seconds, where goleak's own retries give them well under one, too
// little on a loaded machine. A goroutine that leaked is still there then.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(10 * time.Second)
		err := goleak.Find()
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
