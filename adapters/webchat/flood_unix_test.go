//go:build unix

package webchat_test

import "syscall"

// lowerPriority gives the process pid the lowest CPU priority, as best it
// can.
func lowerPriority(pid int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, 19) }
