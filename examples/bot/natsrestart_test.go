package main

import (
	"context"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/natstest"
)

// TestE2ENATSRestart: three processes of the bot on one NATS server; the
// server restarts (its memory-backed members bucket gone with it), then a
// process that is not the gateway is killed. Every new chat is answered,
// in order, the dead process's partitions taken over.
func TestE2ENATSRestart(t *testing.T) {
	runParallel(t, 17*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := natstest.Start(t, natstest.Options{})
	env := scaleEnv(srv, ns.URL())
	nodes := []*node{startNode(t, "n1", env), startNode(t, "n2", env), startNode(t, "n3", env)}
	gw := waitSpread(ctx, t, nodes)

	before := scaleRun{srv: srv, chats: 10, count: 3, first: 50000}
	before.send(ctx, 0)
	before.wait(ctx, t)

	ns.Stop()
	ns.Restart()
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
