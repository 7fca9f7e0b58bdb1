package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/internal/natstest"
	"github.com/heraldbot/herald/platform"
)

// emitCounts has each of chats, from first on, send /count n.
func emitCounts(mem *memory.Adapter, first, chats, n int) {
	for c := range chats {
		chat := memory.Private(fmt.Sprint(first + c))
		mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User(chat.ID, "u"),
			Text: "/count " + strconv.Itoa(n)})
	}
}

// waitCounts waits until each of chats, from first on, got 1..n in order,
// a reply at most maxRepeats times twice.
func waitCounts(t *testing.T, mem *memory.Adapter, members []*member, first, chats, n, maxRepeats int) {
	t.Helper()
	for c := range chats {
		id := fmt.Sprint(first + c)
		waitFor(t, "chat "+id+"'s replies", func() bool { return len(dedupStrings(mem.Texts(id))) >= n }, func() {
			for _, m := range members {
				t.Logf("%s: %+v %+v", m.name, m.j.Stats(), m.e.Stats())
			}
			t.Logf("chat %s: %q", id, mem.Texts(id))
		})
		got := mem.Texts(id)
		want := make([]string, n)
		for i := range want {
			want[i] = strconv.Itoa(i + 1)
		}
		if !slices.Equal(dedupStrings(got), want) || len(got)-n > maxRepeats {
			t.Fatalf("chat %s got %q; want 1..%d in order, at most %d twice", id, got, n, maxRepeats)
		}
	}
}

// Three members on a NATS server that restarts (its memory-backed members
// bucket gone with it), then one of them dies: every bucket is there
// again, the dead member's partitions are taken over, and every new chat
// is answered.
func TestSharedSurvivesNATSRestart(t *testing.T) {
	parallel(t, 11*time.Second)
	ns := natstest.Start(t, natstest.Options{})
	connect := func() (*nats.Conn, error) { return ns.Connect() } // reconnects across the restart
	mem := memory.New()
	var members []*member
	for _, name := range []string{"a", "b", "c"} {
		members = append(members, startMemberOn(t, connect, name, func(*cluster.Shared) platform.Adapter { return mem }))
	}
	gw := waitSpread(t, members)
	emitCounts(mem, 1000, 10, 3)
	waitCounts(t, mem, members, 1000, 10, 3, 0)

	ns.Stop()
	ns.Restart()
	// Every member beats again: the members bucket, which the server lost,
	// is there again.
	nc, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the members to beat again after the restart", func() bool {
		kv, err := js.KeyValue(ctxFor(t), "members_"+cluster.DefaultBot)
		if err != nil {
			return false
		}
		keys, err := kv.Keys(ctxFor(t))
		return err == nil && len(keys) == len(members)
	})
	emitCounts(mem, 2000, 10, 3)
	waitCounts(t, mem, members, 2000, 10, 3, 0)

	// A member that is not the gateway dies: its connection cut, its
	// engine stopped hard.
	var dead *member
	for _, m := range members {
		if m != gw {
			dead = m
			break
		}
	}
	dead.nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	_ = dead.e.Shutdown(ctx)
	cancel()
	emitCounts(mem, 3000, 30, 3)
	waitCounts(t, mem, members, 3000, 30, 3, 0)
}
