package adaptertest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/leakcheck"
	"github.com/heraldbot/herald/internal/testmain"

	"github.com/heraldbot/herald/adapters/adaptertest"
	"github.com/heraldbot/herald/platform"
)

// TestMain fails the run if the tests leave goroutines behind.
// TestSuiteCatchesDefects's children wait more than they compute, so more
// of them run at once than the processors.
func TestMain(m *testing.M) {
	testmain.Parallel(8)
	leakcheck.VerifyTestMain(m)
}

// TestFakeConforms runs the suite against the correct fake: the defects
// below are then the only reason the suite fails for them.
func TestFakeConforms(t *testing.T) {
	adaptertest.TestAdapter(t, fakeHarness(""), fakeFeatures)
}

// fakeFeatures are what the fake cannot do: it refuses albums and stickers,
// and has no downloads, answers, chat actions or inline queries, so the
// suite's checks of refusals run against it (the memory adapter's
// conformance test runs the checks of those capabilities).
var fakeFeatures = adaptertest.Features{
	NoAlbum: true, UnsupportedMedia: []platform.AttachmentKind{platform.AttachSticker},
	NoDownload: true, NoCallbackAnswer: true, NoChatAction: true, NoInline: true,
}

// stallDefect is the defect of a send that ignores its context.
const stallDefect = "stall ignores context"

// defectEnv names the defect TestDefectHelper runs the suite against.
const defectEnv = "ADAPTERTEST_DEFECT"

// TestDefectHelper runs the suite against a fake with the defect named by
// $ADAPTERTEST_DEFECT; TestSuiteCatchesDefects runs it in a child process
// and expects it to fail. Without the variable it is skipped.
func TestDefectHelper(t *testing.T) {
	defect := os.Getenv(defectEnv)
	if defect == "" {
		t.Skip("run by TestSuiteCatchesDefects")
	}
	if defect == stallDefect {
		// The suite waits out its bound on a send that never returns:
		// a second, not five, spares the package four seconds.
		adaptertest.SetPromptly(time.Second)
	}
	adaptertest.TestAdapter(t, fakeHarness(defect), fakeFeatures)
}

// TestSuiteCatchesDefects checks that the suite fails, with a message that
// says what is wrong, for adapters that break the contract one way each.
// Each runs in a child process (a failing test cannot be contained in its
// parent), limited to the subtest that should catch it.
func TestSuiteCatchesDefects(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child test processes")
	}
	tests := []struct {
		defect  string
		subtest string // the -run pattern below TestDefectHelper
		want    string // in the child's output
	}{
		{"swap pairs", "Send/Order", "received"},
		{"invalid not permanent", "Send/Invalid", "want a permanent error"},
		{"ignore cancel", "Send/Canceled", "want an error wrapping context.Canceled"},
		{stallDefect, "Send/CancelInFlight", "did not return within"},
		{"handle after return", "Run/Stop", "times after Run returned"},
		{"run error", "Name", "after its context ended; want nil"},
		{"retry-after lost", "Fault/RetryAfter", "want a platform retry-after error"},
		{"no chat ID", "Send/Text", "SendResult.ChatID"},
		{"wrong sender", "Run/Events", "From.ID \"someone else\""},
		{"duplicate events", "Run/Events", "want 40, one per message"},
		{"receives after the stop", "Run/StopTaking", "want only the one said before the stop"},
		{"edit as new message", "Send/Edit", "edit result names message"},
		{"delete as new message", "Send/Delete", "deletion result names message"},
		{"album delivered", "Send/Album", "want a permanent error wrapping platform.ErrUnsupported"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.defect, " ", "_"), func(t *testing.T) {
			t.Parallel() // each in a process of its own
			run := "^TestDefectHelper$"
			for _, part := range strings.Split(tt.subtest, "/") {
				run += "/^" + part + "$"
			}
			cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), defectEnv+"="+tt.defect)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed an adapter with the defect %q:\n%s", tt.defect, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestDefectHelper/"+tt.subtest) {
				t.Fatalf("the child process failed, but not in the subtest %s:\n%s", tt.subtest, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Fatalf("the suite failed the defect %q without saying %q:\n%s", tt.defect, tt.want, out)
			}
		})
	}
}
