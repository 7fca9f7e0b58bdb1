package cluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// cuttable connects in process to a server and can cut the last
// connection it made, as a broken link would.
type cuttable struct {
	ns   *server.Server
	mu   sync.Mutex
	conn net.Conn
}

func (c *cuttable) InProcessConn() (net.Conn, error) {
	conn, err := c.ns.InProcessConn()
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	return conn, err
}

func (c *cuttable) cut() {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	_ = conn.Close()
}

// A connection lost while a batch's records wait for their answers fails
// those sent before at once, maybe written (an outage), as the library
// fails its futures — not at the wave's timeout, 5 s later; those sent
// once the client reconnected are answered. (Found by a review: the
// records waited out asyncWriteTimeout.)
func TestRecordEventsConnectionLostMidWave(t *testing.T) {
	parallel(t, 2*time.Second)
	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: t.TempDir(), DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server is not ready")
	}
	link := &cuttable{ns: ns}
	nc, err := nats.Connect("", nats.InProcessServer(link), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	// A second connection watches the records land and cuts the first
	// one's link at the 500th.
	watcher, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watcher.Close)
	var mu sync.Mutex
	seen := 0
	if _, err := watcher.Subscribe("in.herald.memory.>", func(*nats.Msg) {
		mu.Lock()
		seen++
		cut := seen == 500
		mu.Unlock()
		if cut {
			link.cut()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx := doneCtx(t)
	j, err := Open(ctx, nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]platform.Event, 3000)
	for i := range evs {
		evs[i] = platform.Event{ID: fmt.Sprint(i), Platform: "memory", Kind: platform.EventMessage,
			Chat: platform.Chat{ID: fmt.Sprint(i)}, Text: "x"}
	}
	var written, lost int
	for i, r := range j.RecordEvents(ctx, evs) {
		switch {
		case r.Err == nil:
			written++
		case errors.Is(r.Err, jetstream.ErrAsyncPublishTimeout):
			t.Fatalf("event %d waited out the timeout: %v", i, r.Err)
		case errors.Is(r.Err, journal.ErrOutage):
			lost++ // maybe written, or not sent: the link broke as it went
		default:
			t.Fatalf("event %d: %v; want an outage", i, r.Err)
		}
	}
	if lost == 0 {
		t.Fatalf("%d written, none lost with the link: the cut came too late", written)
	}
	t.Logf("%d written, %d failed with the link", written, lost)
}
