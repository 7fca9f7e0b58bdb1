package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
)

// The addresses the tests give the bot to listen on (its metrics, its
// webhook) have ports from below the system's ephemeral range. A port
// taken from that range — as a listener on port 0 would give — may be
// given again by the system, to another listener on port 0 or to the
// local end of a connection, in the moment before the bot binds it, or
// while a killed bot is down before its restart on the same address: the
// bot then fails to listen, and the test waits in vain. The system gives
// no socket a port below the range unless asked for it by number.

// Ports below this are not used (many services listen there).
const lowestTestPort = 20000

// ports hands out ports in turn, from a random start: no port twice in
// one test process, and rarely the same as another process of the tests
// running at the same time.
var ports struct {
	mu   sync.Mutex
	next int
}

// freeAddr returns a loopback address whose port is free now and outside
// the system's ephemeral range.
func freeAddr(t *testing.T) string {
	t.Helper()
	lo, hi := testPortRange()
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

// testPortRange returns the ports freeAddr picks from: those between
// lowestTestPort and the ephemeral range, or above the range if it starts
// too low to leave a thousand below it (any port if neither has room). Linux's range is read from /proc;
// elsewhere it is taken to start at 49152, as on macOS, Windows and the
// BSDs.
func testPortRange() (lo, hi int) {
	ephLo, ephHi := 49152, 65535
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if _, err := fmt.Sscan(string(b), &ephLo, &ephHi); err != nil {
			ephLo, ephHi = 32768, 60999 // Linux's default
		}
	}
	switch {
	case ephLo-lowestTestPort >= 1000:
		return lowestTestPort, ephLo
	case 65535-ephHi >= 1000:
		return ephHi + 1, 65536
	default: // no room outside the range: any port
		return lowestTestPort, 65536
	}
}
