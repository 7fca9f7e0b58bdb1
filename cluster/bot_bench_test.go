package cluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
// Under apart/, the fake Bot API runs in a process of its own (this test
// binary, started again): the CPU reported is then the bot's alone, as a
// bot and Telegram are apart in production, which the ratio of the
// durable bot to the one in memory is about.
//
// Run: go test -run='^$' -bench=BotReplies -benchtime=1x ./cluster
func BenchmarkBotReplies(b *testing.B) {
	for _, bc := range []struct {
		name, mode         string
		tls, pinged, apart bool
	}{
		{"journal=off", "off", false, false, false},
		{"journal=embedded", "embedded", false, false, false},
		{"https/journal=off", "off", true, false, false},
		{"https/journal=embedded", "embedded", true, false, false},
		{"pings/journal=off", "off", false, true, false},
		{"pings/journal=embedded", "embedded", false, true, false},
		{"apart/journal=off", "off", false, false, true},
		{"apart/journal=embedded", "embedded", false, false, true},
	} {
		mode := bc.mode
		perChat := botRepliesPerChat(bc.pinged)
		b.Run(bc.name, func(b *testing.B) {
			var cpu, wall time.Duration
			for b.Loop() {
				b.StopTimer()
				var srv *telegramtest.Server
				var apart *apartBotAPI
				cfg := telegram.Config{Token: "123:bench", Limits: &platform.Limits{}}
				switch {
				case bc.apart:
					apart = startApartBotAPI(b, bc.pinged)
					cfg.APIEndpoint = apart.endpoint
				case bc.tls:
					srv = telegramtest.NewServer(telegramtest.WithTLS())
					cfg.HTTPClient = srv.Client()
				default:
					srv = telegramtest.NewServer()
				}
				if srv != nil {
					cfg.APIEndpoint = srv.Endpoint()
				}
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
				if srv != nil {
					botLoad(srv, bc.pinged)
				}
				ran := make(chan error, 1)
				b.StartTimer()
				began, cpu0 := time.Now(), cpuTime()
				go func() { ran <- e.Run(context.Background()) }()
				for e.Stats().Sends.Delivered < uint64(botChats*perChat) {
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
				if apart != nil {
					err = apart.check()
				} else {
					err = botCheck(srv, bc.pinged)
					srv.Close()
				}
				if err != nil {
					b.Fatal(err)
				}
				if stop != nil {
					stop()
				}
				b.StartTimer()
			}
			replies := float64(b.N * botChats * perChat)
			b.ReportMetric(float64(cpu.Microseconds())/replies, "cpu-µs/reply")
			b.ReportMetric(replies/wall.Seconds(), "replies/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// The benchmark's load: botChats chats each send /ping, /echo and /count
// botCount, or (pinged) /ping botPings times.
const botChats, botCount, botPings = 1000, 50, 10

func botRepliesPerChat(pinged bool) int {
	if pinged {
		return botPings
	}
	return 2 + botCount
}

// botLoad says the benchmark's messages to srv.
func botLoad(srv *telegramtest.Server, pinged bool) {
	for c := range botChats {
		id := int64(1000 + c)
		from := platform.User{ID: strconv.FormatInt(id, 10), Name: "user"}
		if pinged {
			for range botPings {
				srv.Say(id, from, "/ping")
			}
			continue
		}
		srv.Say(id, from, "/ping")
		srv.Say(id, from, "/echo hello "+strconv.Itoa(c))
		srv.Say(id, from, "/count "+strconv.Itoa(botCount))
	}
}

// botCheck returns an error unless srv took every reply to botLoad's
// messages, in order.
func botCheck(srv *telegramtest.Server, pinged bool) error {
	perChat := botRepliesPerChat(pinged)
	for c := range botChats {
		got := srv.Sent(int64(1000 + c))
		if len(got) != perChat {
			return fmt.Errorf("chat %d got %d replies; want %d", 1000+c, len(got), perChat)
		}
		want := func(i int) string { return "pong" }
		if !pinged {
			want = func(i int) string {
				switch i {
				case 0:
					return "pong"
				case 1:
					return "hello " + strconv.Itoa(c)
				}
				return strconv.Itoa(i - 1)
			}
		}
		for i, m := range got {
			if m.Text != want(i) {
				return fmt.Errorf("chat %d: reply %d is %q; want %q", 1000+c, i, m.Text, want(i))
			}
		}
	}
	return nil
}

// apartBotAPIEnv, set in the environment of this test binary, makes it
// the fake Bot API of BenchmarkBotReplies/apart/ (see serveApartBotAPI):
// "pings" or "commands".
const apartBotAPIEnv = "HERALD_BENCH_BOT_API"

// apartBotAPI is the fake Bot API in a process of its own.
type apartBotAPI struct {
	endpoint string
	cmd      *exec.Cmd
	in       io.WriteCloser
	out      *bufio.Reader
}

// startApartBotAPI starts this test binary as the fake Bot API, loaded
// with the benchmark's messages; it is stopped when b ends.
func startApartBotAPI(b *testing.B, pinged bool) *apartBotAPI {
	b.Helper()
	load := "commands"
	if pinged {
		load = "pings"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), apartBotAPIEnv+"="+load)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	a := &apartBotAPI{cmd: cmd, in: in, out: bufio.NewReader(stdout)}
	b.Cleanup(func() {
		_ = a.in.Close() // the server's stdin at its end: it stops
		_ = a.cmd.Wait()
	})
	line, err := a.out.ReadString('\n')
	if err != nil {
		b.Fatalf("the fake Bot API did not start: %v", err)
	}
	a.endpoint = strings.TrimSpace(line)
	return a
}

// check asks the fake Bot API to check what it took (botCheck).
func (a *apartBotAPI) check() error {
	if _, err := io.WriteString(a.in, "check\n"); err != nil {
		return err
	}
	line, err := a.out.ReadString('\n')
	if err != nil {
		return fmt.Errorf("the fake Bot API's check: %w", err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		return errors.New(line)
	}
	return nil
}

// serveApartBotAPI is this test binary as the fake Bot API of
// BenchmarkBotReplies/apart/: it loads the benchmark's messages (load is
// "pings" or "commands"), writes its endpoint on a line, then answers each
// "check" line from its standard input with "ok" or what is wrong, and
// ends when the input ends. It returns the exit code.
func serveApartBotAPI(load string) int {
	srv := telegramtest.NewServer()
	defer srv.Close()
	pinged := load == "pings"
	botLoad(srv, pinged)
	fmt.Println(srv.Endpoint())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() != "check" {
			continue
		}
		if err := botCheck(srv, pinged); err != nil {
			fmt.Println(err)
		} else {
			fmt.Println("ok")
		}
	}
	return 0
}
