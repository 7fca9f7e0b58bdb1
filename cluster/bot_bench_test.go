package cluster_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// BenchmarkBotReplies is a bot on the library as its users write it — a
// Telegram adapter polling the fake Bot API of telegramtest over plain
// HTTP/1.1 or, under https/, over HTTPS with HTTP/2 as the real Bot API is
// reached, with no send budget — answering 1,000 chats that each send
// /ping, /echo and /count 50: 52,000 replies, every one checked. It
// reports the process's CPU time per reply (bot, fake server and, with
// the journal, the embedded NATS server: all one process) and replies per
// second, in memory (journal=off) and with the journal on the embedded
// server (journal=embedded), as `go run ./examples/bot` runs by default.
// Under pings/, each chat sends /ping ten times instead: 10,000 events of
// one reply each, where an event's record is half of what the journal
// writes.
//
// Run: go test -run='^$' -bench=BotReplies -benchtime=1x ./cluster
func BenchmarkBotReplies(b *testing.B) {
	const chats, count, pings = 1000, 50, 10
	for _, bc := range []struct {
		name, mode  string
		tls, pinged bool
	}{
		{"journal=off", "off", false, false},
		{"journal=embedded", "embedded", false, false},
		{"https/journal=off", "off", true, false},
		{"https/journal=embedded", "embedded", true, false},
		{"pings/journal=off", "off", false, true},
		{"pings/journal=embedded", "embedded", false, true},
	} {
		mode := bc.mode
		perChat := 2 + count
		if bc.pinged {
			perChat = pings
		}
		b.Run(bc.name, func(b *testing.B) {
			var cpu, wall time.Duration
			for b.Loop() {
				b.StopTimer()
				var srv *telegramtest.Server
				cfg := telegram.Config{Token: "123:bench", Limits: &platform.Limits{}}
				if bc.tls {
					srv = telegramtest.NewServer(telegramtest.WithTLS())
					cfg.HTTPClient = srv.Client()
				} else {
					srv = telegramtest.NewServer()
				}
				cfg.APIEndpoint = srv.Endpoint()
				tg, err := telegram.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				opts := []engine.Option{engine.WithAdapter(tg)}
				var stop func()
				if mode == "embedded" {
					s, err := embedded.Start(embedded.Config{Dir: b.TempDir()})
					if err != nil {
						b.Fatal(err)
					}
					nc, err := s.Connect()
					if err != nil {
						b.Fatal(err)
					}
					j, err := cluster.Open(context.Background(), nc, cluster.Config{})
					if err != nil {
						b.Fatal(err)
					}
					opts = append(opts, engine.WithJournal(j))
					stop = func() { nc.Close(); s.Shutdown() }
				}
				e, err := engine.New(opts...)
				if err != nil {
					b.Fatal(err)
				}
				e.OnCommand("ping", func(c *engine.Context) error {
					c.ReplyText("pong")
					return nil
				})
				e.OnCommand("echo", func(c *engine.Context) error {
					c.ReplyText(c.RawArgs())
					return nil
				})
				e.OnCommand("count", func(c *engine.Context) error {
					n, _ := strconv.Atoi(c.RawArgs())
					for i := range n {
						c.ReplyText(strconv.Itoa(i + 1))
					}
					return nil
				})
				for c := range chats {
					id := int64(1000 + c)
					from := platform.User{ID: strconv.FormatInt(id, 10), Name: "user"}
					if bc.pinged {
						for range pings {
							srv.Say(id, from, "/ping")
						}
						continue
					}
					srv.Say(id, from, "/ping")
					srv.Say(id, from, "/echo hello "+strconv.Itoa(c))
					srv.Say(id, from, "/count "+strconv.Itoa(count))
				}
				ran := make(chan error, 1)
				b.StartTimer()
				began, cpu0 := time.Now(), cpuTime()
				go func() { ran <- e.Run(context.Background()) }()
				for e.Stats().Sends.Delivered < uint64(chats*perChat) {
					select {
					case err := <-ran:
						b.Fatalf("Run = %v after %d replies", err, e.Stats().Sends.Delivered)
					case <-time.After(20 * time.Millisecond): // the count looked at again
					}
				}
				cpu += cpuTime() - cpu0
				wall += time.Since(began)
				b.StopTimer()
				if err := e.Shutdown(context.Background()); err != nil {
					b.Fatal(err)
				}
				if err := <-ran; err != nil {
					b.Fatal(err)
				}
				for c := range chats {
					got := srv.Sent(int64(1000 + c))
					if bc.pinged {
						for i, m := range got {
							if m.Text != "pong" {
								b.Fatalf("chat %d: reply %d is %q; want pong", 1000+c, i, m.Text)
							}
						}
						if len(got) != perChat {
							b.Fatalf("chat %d got %d replies; want %d", 1000+c, len(got), perChat)
						}
						continue
					}
					if len(got) != perChat || got[0].Text != "pong" || got[1].Text != "hello "+strconv.Itoa(c) || got[perChat-1].Text != strconv.Itoa(count) {
						b.Fatalf("chat %d got %d replies; want %d, in order", 1000+c, len(got), perChat)
					}
					for i := range count {
						if got[2+i].Text != strconv.Itoa(i+1) {
							b.Fatalf("chat %d: reply %d is %q; want %d", 1000+c, 2+i, got[2+i].Text, i+1)
						}
					}
				}
				if stop != nil {
					stop()
				}
				srv.Close()
				b.StartTimer()
			}
			replies := float64(b.N * chats * perChat)
			b.ReportMetric(float64(cpu.Microseconds())/replies, "cpu-µs/reply")
			b.ReportMetric(replies/wall.Seconds(), "replies/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
