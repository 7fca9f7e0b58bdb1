//go:build unix

package webchat_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// stuckTabs starts an adapter for cfg with a room whose history holds
// about 3 MiB and a tab of the room that reads, whose frames arrive on
// the channel returned, then opens n more tabs of the room over TCP,
// with receive buffers of 32 KiB, that ask for the history and never
// read.
func stuckTabs(t *testing.T, cfg webchat.Config, n int) (*webchat.Adapter, <-chan frame, []*websocket.Conn) {
	t.Helper()
	cfg.MaxConnections = n + 1
	cfg.PingInterval, cfg.PongWait = 30*time.Minute, time.Hour // no keep-alive timeout applies
	a, _ := start(t, cfg)
	reader := connect(t, a, hello{Room: "big"})
	got := readFrames(reader.ws)
	fillRoom(t, a, "big", 3<<20, got)

	stuck := make([]*websocket.Conn, n)
	for i := range stuck {
		d := websocket.Dialer{HandshakeTimeout: ioTimeout, NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				err = nc.(*net.TCPConn).SetReadBuffer(32 << 10)
			}
			return nc, err
		}}
		ws, _, err := d.Dial(wsURL(a), http.Header{"Origin": {"http://" + a.Addr()}})
		if err != nil {
			t.Fatalf("tab %d: %v", i, err)
		}
		t.Cleanup(func() { ws.Close() })
		if err := ws.WriteJSON(map[string]string{"type": "hello", "room": "big"}); err != nil {
			t.Fatal(err)
		}
		stuck[i] = ws
	}
	return a, got, stuck
}

// roomSays sends text to the room and checks that the reader gets it.
func roomSays(t *testing.T, a *webchat.Adapter, got <-chan frame, text string) {
	t.Helper()
	if _, err := a.Sender().Send(context.Background(), platform.SendRequest{
		Target: platform.Chat{ID: webchat.RoomChatID("big")}, Message: platform.TextMessage(text)}); err != nil {
		t.Fatal(err)
	}
	if f := <-got; f.Message == nil || f.Message.Text != text {
		t.Fatalf("reader got %+v; want %q", f, text)
	}
}

// TestNeverReadingTabsKernelBuffer: the kernel send buffer of every tab,
// those that fetch a 3 MiB history and never read included, stays at the
// bound the adapter sets (64 KiB, which Linux doubles), where Linux would
// grow it to 4 MiB and take the whole history in. WriteTimeout is long,
// so the tabs stay open for the check.
func TestNeverReadingTabsKernelBuffer(t *testing.T) {
	const tabs = 20
	a, got, _ := stuckTabs(t, webchat.Config{WriteTimeout: time.Hour}, tabs)
	waitFor(t, "the tabs to join", func() bool { return webchat.OpenTabs(a) == tabs+1 })
	roomSays(t, a, got, "still here")
	bufs := webchat.TabSendBuffers(a)
	if len(bufs) != tabs+1 {
		t.Fatalf("%d tabs open; want %d", len(bufs), tabs+1)
	}
	for i, n := range bufs {
		if n <= 0 || n > 2*64<<10 {
			t.Errorf("tab %d: kernel send buffer %d bytes; want at most 128 KiB", i, n)
		}
	}
}

// TestNeverReadingTabsClosed: tabs that fetch a 3 MiB room history over
// TCP and never read, while no ping or pong timeout applies, are closed
// once a write has waited WriteTimeout; the close resets the connection,
// so the server's kernel drops what it still held for them rather than
// retrying it to a peer that does not read, and a tab is left only what
// its own receive buffer had taken; another tab of the room keeps getting
// its messages throughout.
func TestNeverReadingTabsClosed(t *testing.T) {
	const tabs = 20
	a, got, stuck := stuckTabs(t, webchat.Config{WriteTimeout: time.Second}, tabs)
	roomSays(t, a, got, "still here")
	waitFor(t, "the tabs that do not read to be closed", func() bool { return webchat.OpenTabs(a) == 1 })
	for i, ws := range stuck {
		nc := ws.NetConn()
		nc.SetReadDeadline(time.Now().Add(ioTimeout))
		left, err := io.Copy(io.Discard, nc)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("tab %d: read %v after it was closed; want a reset", i, err)
		}
		// About its receive buffer (32 KiB, doubled by Linux, which may
		// queue a little past it), far from the 3 MiB history.
		if left > 128<<10 {
			t.Errorf("tab %d: %d bytes left to read; want at most 128 KiB", i, left)
		}
	}
	roomSays(t, a, got, "after")
}
