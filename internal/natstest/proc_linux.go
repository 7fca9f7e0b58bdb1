package natstest

import "syscall"

// sysProcAttr has the server killed if the test process dies (a test's
// timeout panic), so that no server outlives its tests.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
