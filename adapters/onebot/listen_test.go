package onebot

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/platform"
)

// TestListenIdleFlood floods Run's own server with three times its cap of
// idle TCP connections, half of them never sending a byte and half idle
// after a refused handshake, as in the attack that exhausted the
// process's file descriptors. The server never holds more than
// MaxConnections + handshakeRoom connections, evicting the idle ones; a
// real implementation still connects, its event arrives and the bot's
// reply goes through; a second bot connects too, and one more than
// MaxConnections is answered 503 (there is room to answer it) while the
// served bots stay up.
func TestListenIdleFlood(t *testing.T) {
	const maxBots = 2
	const limit = maxBots + handshakeRoom
	const flood = 3 * limit
	h := startAdapter(t, Config{Listen: "127.0.0.1:0", AccessToken: "tok", MaxConnections: maxBots})
	waitFor(t, "listener", func() bool { return h.a.Addr() != nil })
	addr := h.a.Addr().String()
	h.a.mu.Lock()
	srv := h.a.srv
	h.a.mu.Unlock()
	if srv.HTTP.ReadHeaderTimeout <= 0 || srv.HTTP.ReadTimeout <= 0 || srv.HTTP.IdleTimeout <= 0 {
		t.Fatalf("server timeouts: header %v, read %v, idle %v; want all set",
			srv.HTTP.ReadHeaderTimeout, srv.HTTP.ReadTimeout, srv.HTTP.IdleTimeout)
	}
	capped := func(when string) {
		t.Helper()
		if n := srv.Open(); n > limit {
			t.Fatalf("%s: %d connections open; the cap is %d", when, n, limit)
		}
	}

	idle := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		idle = append(idle, c)
		if i%2 == 1 {
			// A handshake without the token, refused with 401; the
			// connection then idles, kept alive. (An evicted one fails.)
			_, _ = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: onebot\r\nX-Self-ID: 1\r\n\r\n", DefaultPath)
		}
	}
	capped("after the flood")

	// The implementation connects after the flood (the kernel hands
	// connections to the server in order, so every flood connection has
	// been accepted before it), and works.
	u := "ws://" + addr + DefaultPath
	p := dial(t, u, 10001, "tok", peerOpts{})
	h.waitBot(10001)
	capped("with a bot connected")
	if ev := srv.Evicted(); ev < flood-limit+1 {
		t.Errorf("%d connections evicted; want at least the %d beyond the cap", ev, flood-limit+1)
	}
	p.sendJSON(privateMsg(10001, 42, 1, "/ping"))
	ev := h.event()
	if ev.Text != "/ping" {
		t.Fatalf("event = %+v", ev)
	}
	go func() {
		a := p.next()
		p.respond(a, "ok", 0, map[string]any{"message_id": 7})
	}()
	res, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: ev.Chat, Message: platform.TextMessage("pong")})
	if err != nil || res.MessageID != "7" {
		t.Fatalf("reply = %+v, %v", res, err)
	}

	// A second bot fills MaxConnections; a third is refused with an
	// answer, not a dropped connection.
	dial(t, u, 10002, "tok", peerOpts{})
	h.waitBot(10002)
	_, resp, err := websocket.DefaultDialer.Dial(u, http.Header{"X-Self-ID": {"10003"}, "Authorization": {"Bearer tok"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a bot beyond MaxConnections: %v, %+v; want 503", err, resp)
	}
	capped("with MaxConnections bots")
	if bots := h.a.Bots(); len(bots) != 2 {
		t.Fatalf("Bots = %+v; want 10001 and 10002", bots)
	}
}
