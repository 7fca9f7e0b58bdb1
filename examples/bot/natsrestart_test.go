package main

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/testport"
)

// restartableNATS is a NATS server with JetStream on a loopback port, its
// store in a directory of the test's, that the test restarts: shut down
// and started again on the same store and port.
type restartableNATS struct {
	t    *testing.T
	dir  string
	port int
	s    *server.Server
}

func newRestartableNATS(t *testing.T) *restartableNATS {
	t.Helper()
	n := &restartableNATS{t: t, dir: t.TempDir(), port: testport.Port(t)}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *restartableNATS) start() {
	n.t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: n.dir,
		NoLog: true, NoSigs: true, ServerName: "e2e-restart"})
	if err != nil {
		n.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		n.t.Fatal("NATS server not ready")
	}
	n.s, n.port = s, s.Addr().(*net.TCPAddr).Port
}

func (n *restartableNATS) stop() {
	n.s.Shutdown()
	n.s.WaitForShutdown()
}

func (n *restartableNATS) restart() {
	n.t.Helper()
	n.stop()
	n.start()
}

func (n *restartableNATS) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// TestE2ENATSRestart: three processes of the bot on one NATS server; the
// server restarts (its memory-backed members bucket gone with it), then a
// process that is not the gateway is killed. Every new chat is answered,
// in order, the dead process's partitions taken over.
func TestE2ENATSRestart(t *testing.T) {
	t.Parallel()
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := newRestartableNATS(t)
	env := scaleEnv(srv, ns.url())
	nodes := []*node{startNode(t, "n1", env), startNode(t, "n2", env), startNode(t, "n3", env)}
	gw := waitSpread(ctx, t, nodes)

	before := scaleRun{srv: srv, chats: 10, count: 3, first: 50000}
	before.send(ctx, 0)
	before.wait(ctx, t)

	ns.restart()
	restarted := time.Now()
	after := scaleRun{srv: srv, chats: 10, count: 3, first: 51000}
	after.send(ctx, 0)
	after.wait(ctx, t)
	t.Logf("after the NATS restart, 10 new chats answered in %v", time.Since(restarted).Round(time.Millisecond))

	var worker *node
	for _, n := range nodes {
		if n != gw {
			worker = n
			break
		}
	}
	// Once the members are all back in the members bucket (created again
	// after the restart), a worker dies.
	waitSpread(ctx, t, nodes)
	if err := worker.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-worker.p.done
	killed := time.Now()
	last := scaleRun{srv: srv, chats: 30, count: 3, first: 52000}
	last.send(ctx, 0)
	last.wait(ctx, t)
	t.Logf("%s killed; 30 new chats all answered %v after", worker.name, time.Since(killed).Round(time.Millisecond))

	for _, n := range nodes {
		if n == worker {
			continue
		}
		if code := n.p.stop(t, 90*time.Second); code != 0 {
			t.Fatalf("%s: exit code %d after SIGTERM; want 0", n.name, code)
		}
	}
	for _, run := range []scaleRun{before, after, last} {
		run.check(t, 1)
	}
}
