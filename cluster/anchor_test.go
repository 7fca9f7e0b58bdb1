package cluster_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/platform"
)

// A shared journal's streams drain after each event here: without their
// anchors the server would replace each one's last block file at every
// drain. With them the blocks stay, each stream keeps one anchor, and a
// journal opened after the members reads the streams past them.
func TestSharedAnchorsKeepTheLastBlock(t *testing.T) {
	parallel(t, 3*time.Second)
	dir := t.TempDir()
	srv := startServer(t, dir, embedded.Config{})
	mem := memory.New()
	m := startMember(t, srv.s, mem, "a")
	waitSpread(t, []*member{m})
	js, err := jetstream.New(srv.nc)
	if err != nil {
		t.Fatal(err)
	}
	bot := cluster.DefaultBot
	streams := map[string]string{"IN_" + bot: "in." + bot + "._anchor", "OUT_" + bot: "out." + bot + "._anchor"}
	// held returns how many records and anchors the stream holds.
	held := func(name string) (records, anchors uint64) {
		s, err := js.Stream(ctxFor(t), name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctxFor(t), jetstream.WithSubjectFilter(streams[name]))
		if err != nil {
			t.Fatal(err)
		}
		anchors = info.State.Subjects[streams[name]]
		return info.State.Msgs - anchors, anchors
	}
	// lastBlock returns the index of the stream's last block file.
	lastBlock := func(name string) int {
		files, err := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", name, "msgs", "*.blk"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s's blocks: %v %v", name, files, err)
		}
		last := 0
		for _, f := range files {
			n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".blk"))
			last = max(last, n)
		}
		return last
	}
	chat := memory.Private("100")
	ask := func(i int) {
		t.Helper()
		mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User(chat.ID, "u"),
			Text: "/count 1", ID: fmt.Sprint(i)})
		if _, err := mem.WaitSent(ctxFor(t), chat.ID, i+1); err != nil {
			t.Fatal(err)
		}
		for name := range streams {
			waitFor(t, name+" to drain", func() bool { records, _ := held(name); return records == 0 })
		}
	}

	ask(0)
	for name := range streams {
		waitFor(t, name+"'s anchor", func() bool { _, anchors := held(name); return anchors == 1 })
	}
	before := map[string]int{}
	for name := range streams {
		before[name] = lastBlock(name)
	}
	const drains = 20
	for i := 1; i <= drains; i++ {
		ask(i)
	}
	for name := range streams {
		if got := lastBlock(name); got != before[name] {
			t.Errorf("%s's last block went from %d to %d over %d drains; want it kept", name, before[name], got, drains)
		}
		// The anchors written meanwhile replaced one another.
		waitFor(t, name+" to keep one anchor", func() bool { _, anchors := held(name); return anchors == 1 })
	}

	// A journal opened on the streams after the member reads no anchor
	// as a record.
	m.stop(t)
	nc, err := srv.s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	j, err := cluster.Open(ctxFor(t), nc, cluster.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := j.Pending(ctxFor(t))
	if err != nil {
		t.Fatalf("Pending with anchors in the streams: %v", err)
	}
	if len(p.Events) != 0 || len(p.Sends) != 0 {
		t.Fatalf("Pending: %d events and %d sends; want none", len(p.Events), len(p.Sends))
	}
}
