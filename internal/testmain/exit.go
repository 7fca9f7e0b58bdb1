package testmain

import (
	"os"
	"syscall"

	"github.com/heraldbot/herald/internal/race"
)

// Exit ends a test binary with code, as os.Exit does, except that under
// the race detector a binary whose tests passed ends at once. os.Exit(0)
// runs the race runtime's finish, which sleeps a second whenever
// goroutines are alive (GORACE's atexit_sleep_ms, 1000 by default): a
// second per package, most of a small package's test time, and about a
// fifth of the whole suite's.
//
// No race goes unreported: the testing package fails the run on a race
// found during it (m.Run checks after each test and at its end), and
// code is then not 0. What Exit skips is the finish's own check, which
// would catch a race only in what runs after m.Run (a leak check). With
// GORACE set, Exit leaves the race runtime to do as it says.
func Exit(code int) {
	if code == 0 && race.Enabled && os.Getenv("GORACE") == "" {
		syscall.Exit(0)
	}
	os.Exit(code)
}
