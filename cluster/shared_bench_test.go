package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
	"github.com/nats-io/nats.go"
)

// BenchmarkSharedReplies is one bot run as 1, 2 or 3 members of a
// cluster (each an engine on a connection of its own, as a process
// would be, all in this process with the NATS server): one op is one
// reply end to end — the event recorded in IN, handled by the member
// owning its chat's partition, its reply recorded in OUT, made by the
// gateway, marked and acknowledged, its outcome answered to the handler's
// member. It reports replies per second, the CPU time per reply of
// everything together (members and server) and the messages per reply on
// the members' connections. limits=on applies
// Telegram's budget (30/s): the budget, not Herald, must be the limit.
//
// batch=100 hands the events over a hundred at a time (HandleEvents: a
// getUpdates answer), limits off.
//
// Run: go test -run='^$' -bench='SharedReplies/limits=off' -benchtime=20000x ./cluster
// and: go test -run='^$' -bench='SharedReplies/limits=on' -benchtime=600x ./cluster
// and: go test -run='^$' -bench='SharedReplies/batch=100' -benchtime=20000x ./cluster
func BenchmarkSharedReplies(b *testing.B) {
	for _, limits := range []string{"off", "on"} {
		for members := 1; members <= 3; members++ {
			b.Run(fmt.Sprintf("limits=%s/members=%d", limits, members), func(b *testing.B) {
				benchShared(b, members, limits == "on", 1)
			})
		}
	}
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("batch=100/members=%d", members), func(b *testing.B) {
			benchShared(b, members, false, 100)
		})
	}
}

func benchShared(b *testing.B, members int, limited bool, batch int) {
	const chats = 1000
	s, err := embedded.Start(embedded.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	mem := memory.New()
	var engines []*engine.Engine
	var conns []*nats.Conn
	done := make(chan error, members)
	for i := range members {
		nc, err := s.Connect()
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		conns = append(conns, nc)
		j, err := cluster.OpenShared(context.Background(), nc, cluster.SharedConfig{Node: fmt.Sprint("m", i)})
		if err != nil {
			b.Fatal(err)
		}
		opts := []engine.Option{
			engine.WithAdapter(mem), engine.WithJournal(j),
			engine.WithInboundQueueSize(1 << 20),
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1 << 20}),
		}
		if limited {
			opts = append(opts, engine.WithRateLimit(mem.Name(), sender.TelegramLimits()))
		} else {
			opts = append(opts, engine.WithRateLimit(mem.Name(), sender.RateLimitConfig{Off: true}))
		}
		e, err := engine.New(opts...)
		if err != nil {
			b.Fatal(err)
		}
		e.OnCommand("ping", func(c *engine.Context) error {
			c.ReplyText("pong")
			return nil
		})
		engines = append(engines, e)
		go func() { done <- e.Run(context.Background()) }()
	}
	defer func() {
		for _, e := range engines {
			_ = e.Shutdown(context.Background())
		}
		for range engines {
			<-done
		}
	}()
	// Wait for the members to share the partitions and one to lead.
	for {
		delivered := 0
		if err := engines[0].HandleEvent(pingEvent(mem, 0, "warm-up")); err != nil {
			b.Fatal(err)
		}
		for _, e := range engines {
			delivered += int(e.Stats().Sends.Delivered)
		}
		if delivered > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // the partitions settle
	base := 0
	for _, e := range engines {
		base += int(e.Stats().Sends.Delivered)
	}

	msgs0 := connMsgs(conns)
	cpu0 := cpuTime()
	start := time.Now()
	b.ResetTimer()
	evs := make([]platform.Event, 0, batch)
	for i := 0; i < b.N && batch == 1; i++ {
		if err := engines[i%members].HandleEvent(pingEvent(mem, i%chats, fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < b.N && batch > 1; i += batch {
		evs = evs[:0]
		for k := i; k < min(i+batch, b.N); k++ {
			evs = append(evs, pingEvent(mem, k%chats, fmt.Sprint(k)))
		}
		if n, err := engines[(i/batch)%members].HandleEvents(evs); err != nil || n != len(evs) {
			b.Fatalf("%d of %d taken: %v", n, len(evs), err)
		}
	}
	for {
		delivered := 0
		for _, e := range engines {
			delivered += int(e.Stats().Sends.Delivered)
		}
		if delivered-base >= b.N {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "replies/s")
	b.ReportMetric(float64(connMsgs(conns)-msgs0)/float64(b.N), "msgs/op")
}

// connMsgs returns the messages the connections sent and received, all
// told: with the members' beats and the partitions' pulls, a measure of
// what a reply costs the server.
func connMsgs(conns []*nats.Conn) uint64 {
	var n uint64
	for _, nc := range conns {
		st := nc.Stats()
		n += st.InMsgs + st.OutMsgs
	}
	return n
}

func pingEvent(mem *memory.Adapter, chat int, id string) platform.Event {
	c := memory.Private(fmt.Sprint(1000 + chat))
	return platform.Event{ID: id, Platform: mem.Name(), Kind: platform.EventMessage, Chat: c,
		From: memory.User(c.ID, "user"), Text: "/ping", Time: time.Now()}
}
