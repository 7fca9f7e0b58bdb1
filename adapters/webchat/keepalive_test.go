package webchat_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/internal/pipehttp"
	"github.com/heraldbot/herald/platform"
)

// These tests run in a synctest bubble on fake time. Real sockets are not
// durably blocking, so the tab is connected to the adapter's Handler over
// net.Pipe: an in-memory, unbuffered connection whose deadlines follow the
// bubble's clock.

// pipeServer serves the adapter's Handler over pipes.
type pipeServer struct{ *pipehttp.Server }

// dial opens a WebSocket to the handler over a new pipe.
func (s pipeServer) dial(t *testing.T) *websocket.Conn {
	t.Helper()
	ws, _, err := s.Dialer().Dial("ws://webchat.test/ws", http.Header{"Origin": {"http://webchat.test"}})
	if err != nil {
		t.Fatalf("dial over pipe: %v", err)
	}
	return ws
}

// runInBubble starts a NoServer adapter for cfg and returns it with its
// pipe server and a stop func that ends Run and waits for everything.
func runInBubble(t *testing.T, cfg webchat.Config, handle func(platform.Event) error) (*webchat.Adapter, pipeServer, func()) {
	t.Helper()
	cfg.NoServer = true
	a, err := webchat.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, platform.Inbound{Handle: handle}) }()
	<-a.Ready()
	ps := pipeServer{pipehttp.NewServer(a.Handler())}
	return a, ps, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		ps.Wait()
	}
}

func sendHello(t *testing.T, ws *websocket.Conn, chatID string) frame {
	t.Helper()
	if err := ws.WriteJSON(map[string]string{"type": "hello", "chat_id": chatID}); err != nil {
		t.Fatal(err)
	}
	var f frame
	if err := ws.ReadJSON(&f); err != nil || f.Type != "history" {
		t.Fatalf("hello answered %+v, %v", f, err)
	}
	return f
}

// TestKeepAlive checks the ping schedule and that a tab that stops
// answering pings is dropped exactly PongWait after it was last heard.
func TestKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ping, pong = 10 * time.Second, 25 * time.Second
		_, ps, stop := runInBubble(t, webchat.Config{PingInterval: ping, PongWait: pong, WriteTimeout: 5 * time.Second}, func(platform.Event) error { return nil })

		// A tab that answers pings, as browsers do, stays connected.
		live := ps.dial(t)
		var (
			mu    sync.Mutex
			pings []time.Duration
		)
		start := time.Now()
		live.SetPingHandler(func(data string) error {
			mu.Lock()
			pings = append(pings, time.Since(start))
			mu.Unlock()
			return live.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		})
		sendHello(t, live, "")
		liveDone := make(chan error, 1)
		go func() {
			for {
				if _, _, err := live.ReadMessage(); err != nil {
					liveDone <- err
					return
				}
			}
		}()

		// A tab that reads but never answers pings.
		mute := ps.dial(t)
		mute.SetPingHandler(func(string) error { return nil })
		sendHello(t, mute, "")
		heard := time.Now()
		_, _, err := mute.ReadMessage() // blocks until the server gives up
		if err == nil {
			t.Fatal("mute tab got a data frame")
		}
		if gone := time.Since(heard); gone != pong {
			t.Errorf("mute tab dropped after %v; want PongWait = %v", gone, pong)
		}

		time.Sleep(4*ping - time.Since(start) + ping/2) // past PongWait: only its pongs keep it open
		select {
		case err := <-liveDone:
			t.Fatalf("answering tab dropped: %v", err)
		default:
		}
		mu.Lock()
		if want := []time.Duration{ping, 2 * ping, 3 * ping, 4 * ping}; fmt.Sprint(pings) != fmt.Sprint(want) {
			t.Errorf("pings at %v; want %v", pings, want)
		}
		mu.Unlock()

		stop()
		var ce *websocket.CloseError
		if err := <-liveDone; !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
			t.Errorf("answering tab ended with %v; want close 1001", err)
		}
		live.Close()
		mute.Close()
	})
}

// TestSlowTab fills the queue of a tab that does not read, by frame count
// (QueueSize) and by bytes (QueueBytes): the send that overflows it fails
// with ErrNoConnection instead of blocking, the tab is disconnected,
// another chat is not disturbed, and the tab gets the accepted messages
// from the history when it comes back.
func TestSlowTab(t *testing.T) {
	tests := []struct {
		name string
		cfg  webchat.Config
		text int // bytes of each message's text
		want int // messages accepted before the overflow
	}{
		// The writer holds message 1 (the pipe has no buffer) and the
		// queue holds the next four; one more does not fit.
		{"frames", webchat.Config{QueueSize: 4}, 1, 5},
		// Frames of a little over 4000 bytes, the one being written
		// included: two fit in 10000 bytes, a third does not.
		{"bytes", webchat.Config{QueueSize: 1000, QueueBytes: 10000}, 4000, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testSlowTab(t, tt.cfg, tt.text, tt.want) })
		})
	}
}

func testSlowTab(t *testing.T, cfg webchat.Config, textLen, want int) {
	a, ps, stop := runInBubble(t, cfg, func(platform.Event) error { return nil })
	slow := ps.dial(t)
	slowChat := sendHello(t, slow, "").Chat.ID
	fast := ps.dial(t)
	fastChat := sendHello(t, fast, "").Chat.ID
	fastGot := make(chan string, 100)
	go func() {
		for {
			var f frame
			if err := fast.ReadJSON(&f); err != nil {
				close(fastGot)
				return
			}
			fastGot <- f.Message.Text
		}
	}()

	text := func(i int) string {
		s := strconv.Itoa(i)
		return s + strings.Repeat(".", max(0, textLen-len(s)))
	}
	send := func(chat, text string) error {
		_, err := a.Sender().Send(context.Background(), platform.SendRequest{
			Target: platform.Chat{ID: chat}, Message: platform.TextMessage(text)})
		return err
	}
	accepted := 0
	for i := 1; ; i++ {
		err := send(slowChat, text(i))
		synctest.Wait() // let the writer take what it can
		if errors.Is(err, webchat.ErrNoConnection) {
			break
		}
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		accepted++
		if err := send(fastChat, text(i)); err != nil {
			t.Fatalf("send %d to the fast tab: %v", i, err)
		}
		if got := <-fastGot; got != text(i) {
			t.Fatalf("fast tab got %.20q; want %.20q", got, text(i))
		}
		if i > 2*want {
			t.Fatalf("%d messages accepted; want %d", i, want)
		}
	}
	if accepted != want {
		t.Errorf("%d messages accepted; want %d", accepted, want)
	}
	// The slow tab was disconnected; reading shows at most the message
	// that was being written, then the end.
	n := 0
	for {
		if _, _, err := slow.ReadMessage(); err != nil {
			break
		}
		n++
	}
	if n > 1 {
		t.Errorf("slow tab read %d messages after being dropped", n)
	}
	// Back again, it gets every accepted message from the history.
	back := ps.dial(t)
	hist := sendHello(t, back, slowChat)
	var wantTexts []string
	for i := 1; i <= accepted; i++ {
		wantTexts = append(wantTexts, text(i))
	}
	if got := texts(hist.Messages); fmt.Sprint(got) != fmt.Sprint(wantTexts) {
		t.Errorf("history after reconnect has %d messages; want the %d accepted", len(got), accepted)
	}
	stop()
	for range fastGot {
	}
	slow.Close()
	fast.Close()
	back.Close()
}
