package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// BenchmarkJournalEvent is core/engine's BenchmarkEngineEvent with the
// journal: one op is one event end to end, recorded in IN before it is
// taken, its reply recorded in OUT before Reply returns, both removed once
// done, on the embedded server in a temporary directory. It reports the
// process's CPU time per event (cpu-µs/op: client and server, both in
// process), events per second and the messages an event costs on the
// journal's connection, its answers included (msgs/op); journal=off is the same without one.
// With producers=1 one goroutine hands the events over one after another
// (an adapter's poll loop); with producers=8, eight at once (a webhook's
// requests), so that the journal's writes of several chats overlap; with
// batch=100, one goroutine hands them over a hundred at a time
// (HandleEvents: a getUpdates answer), recorded with one wait.
//
// Run: go test -run='^$' -bench=JournalEvent -benchtime=20000x ./cluster
func BenchmarkJournalEvent(b *testing.B) {
	for _, mode := range []string{"off", "default", "always"} {
		for _, feed := range []struct {
			name             string
			producers, batch int
		}{{"producers=1", 1, 1}, {"producers=8", 8, 1}, {"batch=100", 1, 100}} {
			b.Run(fmt.Sprintf("journal=%s/%s", mode, feed.name), func(b *testing.B) {
				opts := []engine.Option{
					engine.WithInboundQueueSize(1 << 20),
					engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1 << 20}),
				}
				var conns []*nats.Conn
				if mode != "off" {
					nc := benchConn(b, embedded.Config{SyncAlways: mode == "always"})
					j, err := cluster.Open(context.Background(), nc, cluster.Config{})
					if err != nil {
						b.Fatal(err)
					}
					opts = append(opts, engine.WithJournal(j))
					conns = append(conns, nc)
				}
				benchEvents(b, feed.producers, feed.batch, opts, conns)
			})
		}
	}
}

// benchEvents runs BenchmarkJournalEvent's events through an engine with
// opts, from producers goroutines, batch at a time, reporting the messages
// an event costs on conns, the journal's connections.
func benchEvents(b *testing.B, producers, batch int, opts []engine.Option, conns []*nats.Conn) {
	const chats = 1000
	mem := memory.New()
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(mem)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	e.OnCommand("ping", func(c *engine.Context) error {
		c.ReplyText("pong")
		return nil
	})
	events := make([]platform.Event, chats)
	for i := range events {
		chat := memory.Private(fmt.Sprint(1000 + i))
		events[i] = platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat,
			From: memory.User(chat.ID, "user"), Text: "/ping", Time: time.Now()}
	}
	msgs0 := connMsgs(conns)
	cpu0 := cpuTime()
	start := time.Now()
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			if batch > 1 {
				evs := make([]platform.Event, 0, batch)
				for i := 0; i < b.N; i += batch {
					evs = evs[:0]
					for k := i; k < min(i+batch, b.N); k++ {
						ev := events[k%chats]
						ev.ID = fmt.Sprint(k)
						evs = append(evs, ev)
					}
					if n, err := e.HandleEvents(evs); err != nil {
						b.Errorf("%d of %d taken: %v", n, len(evs), err)
						return
					}
				}
				return
			}
			for i := p; i < b.N; i += producers {
				ev := events[i%chats]
				ev.ID = fmt.Sprint(i)
				if err := e.HandleEvent(ev); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for e.Stats().Sends.Delivered < uint64(b.N) || e.Stats().Journal != (journal.Stats{}) {
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	if conns != nil {
		b.ReportMetric(float64(connMsgs(conns)-msgs0)/float64(b.N), "msgs/op")
	}
	if err := e.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJournalFile records a send carrying a file of 4 MiB, reads it
// back as recovery does, and removes it, on the embedded server: the cost
// of a file a bot sends in durable mode, beyond the platform's own.
//
// Run: go test -run='^$' -bench=JournalFile -benchmem ./cluster
func BenchmarkJournalFile(b *testing.B) {
	ctx := context.Background()
	j := benchJournal(b, embedded.Config{})
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	req := platform.SendRequest{Platform: "webchat", Target: platform.Chat{ID: "c1"}, Message: platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachDocument, FileName: "f.bin", Data: data}}}}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		rec, _, err := j.RecordSend(ctx, journal.Send{Request: req})
		if err != nil {
			b.Fatal(err)
		}
		p, err := j.Pending(ctx)
		if err != nil || len(p.Sends) != 1 || len(p.Sends[0].Request.Message.Attachments[0].Data) != len(data) {
			b.Fatalf("pending %+v, %v", p.Sends, err)
		}
		if err := rec.Done(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// benchJournal returns a journal on an embedded server configured by cfg,
// its store in a temporary directory; both stop when b ends.
func benchJournal(b *testing.B, cfg embedded.Config) *cluster.Journal {
	b.Helper()
	j, err := cluster.Open(context.Background(), benchConn(b, cfg), cluster.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return j
}

// BenchmarkPublishFloor is the floor under the journal's writes: JetStream
// publishes of a 300-byte record with a Msg-Id, to a work-queue stream on
// the embedded server as the journal's streams are, one op one message.
// sync waits for each publish's answer before the next (as the journal
// records an event or a send today), from goroutines=N at once (as
// handlings of several chats do); async sends them all from one goroutine
// and waits once at the end. The difference is what the round trips cost
// (goroutines woken on both sides for every message), not the store.
//
// Run: go test -run='^$' -bench=PublishFloor -benchtime=50000x ./cluster
func BenchmarkPublishFloor(b *testing.B) {
	for _, mode := range []struct {
		name       string
		goroutines int
	}{{"sync/goroutines=1", 1}, {"sync/goroutines=8", 8}, {"sync/goroutines=64", 64}, {"async", 1}} {
		b.Run(mode.name, func(b *testing.B) {
			js, err := jetstream.New(benchConn(b, embedded.Config{}))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FLOOR", Subjects: []string{"floor.>"},
				Retention: jetstream.WorkQueuePolicy, Duplicates: time.Hour}); err != nil {
				b.Fatal(err)
			}
			data := make([]byte, 300)
			async := mode.name == "async"
			cpu0 := cpuTime()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range mode.goroutines {
				wg.Go(func() {
					for i := g; i < b.N; i += mode.goroutines {
						m := nats.NewMsg("floor.chat." + strconv.Itoa(i%1000))
						m.Data = data
						id := jetstream.WithMsgID("id" + strconv.Itoa(i))
						var err error
						if async {
							_, err = js.PublishMsgAsync(m, id)
						} else {
							_, err = js.PublishMsg(ctx, m, id)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			<-js.PublishAsyncComplete()
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// benchConn starts the embedded server with cfg in a temporary directory
// and returns a connection to it; both end with b.
func benchConn(b *testing.B, cfg embedded.Config) *nats.Conn {
	b.Helper()
	cfg.Dir = b.TempDir()
	s, err := embedded.Start(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	nc, err := s.Connect()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}
