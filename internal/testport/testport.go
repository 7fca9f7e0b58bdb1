// Package testport gives tests loopback ports to listen on that no other
// socket takes meanwhile: a bot process the test starts a moment later, or
// a server it restarts on the same port.
//
// A port from the system's ephemeral range — as a listener on port 0
// gives — may be given again by the system, to another listener on port 0
// or to the local end of a connection (any process's), in the moment
// before the process under test binds it, or while a killed process or a
// stopped server is down before its restart on the same address: the
// bind then fails, and the test waits in vain. The system gives no socket
// a port below the range unless asked for it by number, so Addr and Port
// pick from there.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
)

// Ports below this are not used (many services listen there).
const lowestPort = 20000

// ports hands out ports in turn, from a random start: no port twice in
// one test process, and rarely the same as another process of the tests
// running at the same time.
var ports struct {
	mu   sync.Mutex
	next int
}

// Addr returns a loopback address whose port is free now and outside
// the system's ephemeral range.
func Addr(t testing.TB) string {
	t.Helper()
	lo, hi := portRange()
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.next < lo || ports.next >= hi {
		ports.next = lo + rand.IntN(hi-lo)
	}
	for range hi - lo {
		port := ports.next
		if ports.next++; ports.next == hi {
			ports.next = lo
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	t.Fatalf("no free port in [%d, %d)", lo, hi)
	return ""
}

// portRange returns the ports Addr picks from: those between
// lowestPort and the ephemeral range, or above the range if it starts
// too low to leave a thousand below it (any port if neither has room). Linux's range is read from /proc;
// elsewhere it is taken to start at 49152, as on macOS, Windows and the
// BSDs.
func portRange() (lo, hi int) {
	ephLo, ephHi := 49152, 65535
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if _, err := fmt.Sscan(string(b), &ephLo, &ephHi); err != nil {
			ephLo, ephHi = 32768, 60999 // Linux's default
		}
	}
	switch {
	case ephLo-lowestPort >= 1000:
		return lowestPort, ephLo
	case 65535-ephHi >= 1000:
		return ephHi + 1, 65536
	default: // no room outside the range: any port
		return lowestPort, 65536
	}
}

// Port is Addr's port as a number.
func Port(t testing.TB) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(Addr(t))
	n, _ := strconv.Atoi(p)
	return n
}
