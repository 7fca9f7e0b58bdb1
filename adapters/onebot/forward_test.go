package onebot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/platform"
)

// impl is a fake OneBot implementation's forward WebSocket server. Each
// accepted connection becomes a peer on peers. refuse, while positive, makes
// that many handshakes fail with 503 first; status, if set, answers every
// handshake with it.
type impl struct {
	t        *testing.T
	srv      *httptest.Server
	peers    chan *peer
	token    string
	refuse   atomic.Int64
	status   int
	dials    atomic.Int64
	upgrader websocket.Upgrader
}

func startImpl(t *testing.T, token string, status int) *impl {
	m := &impl{t: t, peers: make(chan *peer, 16), token: token, status: status}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.dials.Add(1)
		if m.status != 0 {
			http.Error(w, "no", m.status)
			return
		}
		if m.refuse.Add(-1) >= 0 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		if m.token != "" && r.Header.Get("Authorization") != "Bearer "+m.token {
			http.Error(w, "token", http.StatusForbidden)
			return
		}
		ws, err := m.upgrader.Upgrade(w, r, http.Header{})
		if err != nil {
			t.Errorf("impl upgrade: %v", err)
			return
		}
		m.peers <- newPeer(t, ws, peerOpts{})
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *impl) url() string { return "ws" + strings.TrimPrefix(m.srv.URL, "http") + "/" }

// accept returns the next connection the adapter made, failing after 5s.
func (m *impl) accept() *peer {
	m.t.Helper()
	select {
	case p := <-m.peers:
		return p
	case <-time.After(5 * time.Second):
		m.t.Fatal("adapter did not connect within 5s")
	}
	return nil
}

func lifecycle(self int64) map[string]any {
	return map[string]any{"time": 1700000000, "self_id": self, "post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect"}
}

func TestForward(t *testing.T) {
	m := startImpl(t, "tok", 0)
	h := startAdapter(t, Config{Mode: Forward, URL: m.url(), AccessToken: "tok"})
	p := m.accept()

	// Before the lifecycle event the bot's self ID is unknown, but a bare
	// chat ID already routes to the only connection.
	waitFor(t, "connection", func() bool { return len(h.a.Bots()) == 1 })
	if b := h.a.Bots()[0]; b.SelfID != 0 {
		t.Fatalf("self ID known too early: %+v", b)
	}
	go func() {
		a := p.next()
		p.respond(a, "ok", 0, map[string]any{"message_id": 5})
	}()
	if _, err := h.a.Sender().Send(context.Background(), sendReq(platform.Chat{ID: "9", Type: platform.ChatGroup}, "early")); err != nil {
		t.Fatal(err)
	}

	p.sendJSON(lifecycle(10001))
	h.waitBot(10001)
	p.sendJSON(groupMsg(10001, 555, 42, 3, "/ping"))
	ev := h.event()
	if ev.Chat != GroupChat(10001, 555) || ev.Text != "/ping" {
		t.Fatalf("event = %+v", ev)
	}
	go func() {
		a := p.next()
		if a.Action != "send_group_msg" || param[int64](t, a, "group_id") != 555 {
			t.Errorf("action = %+v", a)
		}
		p.respond(a, "ok", 0, map[string]any{"message_id": 6})
	}()
	res, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: ev.Chat, Message: platform.OutboundMessage{Text: "pong", ReplyToID: ev.MessageID}})
	if err != nil || res.MessageID != "6" {
		t.Fatalf("reply = %+v, %v", res, err)
	}
	if err := h.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	p.waitClosed()
}

func TestForwardSelfIDFromEvent(t *testing.T) {
	m := startImpl(t, "", 0)
	h := startAdapter(t, Config{Mode: Forward, URL: m.url()})
	p := m.accept()
	// No lifecycle event: the first event's self_id identifies the bot.
	p.sendJSON(privateMsg(10002, 42, 1, "hi"))
	if ev := h.event(); ev.Chat != PrivateChat(10002, 42) {
		t.Fatalf("event = %+v", ev)
	}
	h.waitBot(10002)
}

// TestForwardReconnect drops the connection and refuses handshakes: the
// adapter keeps redialling with small real backoffs and serves again.
func TestForwardReconnect(t *testing.T) {
	m := startImpl(t, "", 0)
	h := startAdapter(t, Config{Mode: Forward, URL: m.url(), ActionTimeout: time.Hour,
		ReconnectMin: 5 * time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	p1 := m.accept()
	p1.sendJSON(lifecycle(10001))
	h.waitBot(10001)

	errc := make(chan error, 1)
	go func() {
		_, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(10001, 1), "x"))
		errc <- err
	}()
	p1.next()
	m.refuse.Store(3) // the next three handshakes fail
	p1.close()
	if err := <-errc; !errors.Is(err, ErrConnectionLost) || platform.IsPermanent(err) {
		t.Fatalf("pending send = %v", err)
	}

	p2 := m.accept()
	if d := m.dials.Load(); d != 5 {
		t.Fatalf("%d dials; want 5 (1 + 3 refused + 1)", d)
	}
	p2.sendJSON(lifecycle(10001))
	h.waitBot(10001)
	p2.sendJSON(privateMsg(10001, 42, 2, "back"))
	if ev := h.event(); ev.Text != "back" {
		t.Fatalf("event = %+v", ev)
	}
	go func() {
		a := p2.next()
		p2.respond(a, "ok", 0, map[string]any{"message_id": 1})
	}()
	if _, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(10001, 1), "y")); err != nil {
		t.Fatal(err)
	}
}

func TestForwardUnauthorized(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		m := startImpl(t, "", status)
		a, err := New(Config{Mode: Forward, URL: m.url(), ReconnectMin: time.Millisecond, ReconnectMax: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = a.Run(ctx, nil)
		ctxErr := ctx.Err()
		cancel()
		if !errors.Is(err, ErrUnauthorized) || ctxErr != nil {
			t.Fatalf("Run against %d = %v; want ErrUnauthorized", status, err)
		}
		if m.dials.Load() != 1 {
			t.Fatalf("%d dials; want 1", m.dials.Load())
		}
	}
}

// TestForwardCancelWhileWaiting stops Run while it waits to redial a
// server that is down.
func TestForwardCancelWhileWaiting(t *testing.T) {
	m := startImpl(t, "", 0)
	url := m.url()
	m.srv.Close()
	h := startAdapter(t, Config{Mode: Forward, URL: url, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	start := time.Now()
	if err := h.stop(); err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("Run = %v after %v", err, time.Since(start))
	}
}
