package telegram

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

func BenchmarkUpdateToEvents(b *testing.B) {
	raw := []byte(`{"update_id":11,"message":{"message_id":4,"from":` + annJSON + `,"chat":` + groupJSON + `,"date":1772362800,"text":"/start@herald_bot now please"}}`)
	for b.Loop() {
		u, err := decodeUpdate(raw)
		if err != nil {
			b.Fatal(err)
		}
		if evs := updateToEvents(DefaultName, u, "herald_bot", testNow); len(evs) != 1 {
			b.Fatal(evs)
		}
	}
}

func BenchmarkSplitText(b *testing.B) {
	text := strings.Repeat("строка с текстом 😀 and some words\n", 400) // ~14k units
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if parts := splitText(text, maxTextUnits, platform.ParsePlain); len(parts) < 3 {
			b.Fatal(len(parts))
		}
	}
}

func BenchmarkSplitTextHTML(b *testing.B) {
	text := strings.Repeat("<b>строка</b> с <i>текстом</i> 😀 &amp; <a href=\"https://e.x/\">words</a>\n", 250) // ~14k units
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if parts := splitText(text, maxTextUnits, platform.ParseHTML); len(parts) < 3 {
			b.Fatal(len(parts))
		}
	}
}

// BenchmarkSend is one sendMessage through the adapter to the fake server
// over loopback HTTP, from many goroutines to many chats.
func BenchmarkSend(b *testing.B) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint()})
	if err != nil {
		b.Fatal(err)
	}
	var chat atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		target := strconv.FormatInt(chat.Add(1), 10)
		for pb.Next() {
			if _, err := a.Send(context.Background(), sendTo(target, platform.TextMessage("hello"))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPollDelivery measures updates per second through Run's poll
// loop: b.N updates wait on the fake server, and the clock runs until the
// last is handed to handle.
func BenchmarkPollDelivery(b *testing.B) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint()})
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		srv.SendUserMessage(int64(1+i%50), ann, "m")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n atomic.Int64
	all := make(chan struct{})
	done := make(chan error, 1)
	b.ResetTimer()
	go func() {
		done <- a.Run(ctx, platform.Inbound{Handle: func(platform.Event) error {
			if n.Add(1) == int64(b.N) {
				close(all)
			}
			return nil
		}})
	}()
	select {
	case <-all:
	case err := <-done:
		b.Fatalf("Run = %v after %d updates", err, n.Load())
	}
	b.StopTimer()
	cancel()
	<-done
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReplies sends 52 replies to each of 1,000 chats through the
// engine's OutboundDispatcher (512 sends at once, each chat's in order) to
// the fake Bot API over plain HTTP/1.1, as to a local Bot API server, and
// reports the CPU time per reply (the adapter's and the fake server's: one
// process) and the TCP connections the server accepted, counted by a
// wrapping listener. "DefaultTransport" is http.DefaultTransport (2 idle
// connections kept per host, the adapter's default before), "adapter
// default" the client the adapter builds when Config.HTTPClient is nil.
//
//	go test -run XXX -bench Replies -benchtime 3x -cpu 2 ./adapters/telegram/
func BenchmarkReplies(b *testing.B) {
	const chats, perChat = 1000, 52
	for _, bc := range []struct {
		name   string
		client func() *http.Client
	}{
		{"DefaultTransport", func() *http.Client { return &http.Client{} }},
		{"adapter default", func() *http.Client { return nil }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var conns, replies int64
			var cpu, wall time.Duration
			for b.Loop() {
				b.StopTimer()
				inner, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				ln := &countingListener{Listener: inner}
				srv := telegramtest.NewServer(telegramtest.WithListener(ln))
				client := bc.client()
				a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: client})
				if err != nil {
					b.Fatal(err)
				}
				d := engine.NewOutboundDispatcher(context.Background(), engine.DispatcherConfig{SendTimeout: time.Minute})
				var failed atomic.Int64
				b.StartTimer()
				began, cpu0 := time.Now(), cpuTime()
				for round := range perChat {
					for c := 1; c <= chats; c++ {
						target := strconv.Itoa(c)
						err := d.Submit(target, func(ctx context.Context) error {
							_, err := a.Send(ctx, sendTo(target, platform.TextMessage("reply "+strconv.Itoa(round))))
							if err != nil && failed.Add(1) == 1 {
								b.Error(err)
							}
							return err
						})
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := d.Shutdown(context.Background()); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - cpu0
				wall += time.Since(began)
				b.StopTimer()
				conns += ln.accepted.Load()
				replies += chats * perChat
				if n := len(srv.AllSent()); n != chats*perChat || failed.Load() != 0 {
					b.Fatalf("%d replies delivered, %d failed; want %d", n, failed.Load(), chats*perChat)
				}
				if client != nil {
					client.CloseIdleConnections()
				} else {
					a.cfg.HTTPClient.CloseIdleConnections()
				}
				srv.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(replies), "cpu-µs/reply")
			b.ReportMetric(float64(conns)/float64(b.N), "conns/op")
			b.ReportMetric(float64(replies)/wall.Seconds(), "replies/s")
		})
	}
}
