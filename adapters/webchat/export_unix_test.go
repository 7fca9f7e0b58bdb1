//go:build unix

package webchat

import "syscall"

// TabSendBuffers returns the kernel send buffer (SO_SNDBUF) of each open
// tab's TCP connection, -1 for a tab whose TCP connection is unknown.
func TabSendBuffers(a *Adapter) []int {
	a.mu.Lock()
	var out []int
	for c := range a.open {
		n := -1
		if c.tcp != nil {
			if rc, err := c.tcp.SyscallConn(); err == nil {
				rc.Control(func(fd uintptr) {
					if v, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF); err == nil {
						n = v
					}
				})
			}
		}
		out = append(out, n)
	}
	a.mu.Unlock()
	return out
}
