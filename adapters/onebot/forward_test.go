package onebot

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/internal/pipehttp"
	"github.com/heraldbot/herald/platform"
)

// impl is a fake OneBot implementation's forward WebSocket server on
// 127.0.0.1. Each accepted connection becomes a peer on peers; status, if
// set, answers every handshake with it.
type impl struct {
	t        *testing.T
	srv      *httptest.Server
	peers    chan *peer
	token    string
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

// pipeImpl is a fake implementation's forward WebSocket server reached
// over pipes, for tests on fake time. refuse, while positive, makes that
// many handshakes fail with 503; each accepted connection becomes a peer on
// peers; the fake time of every handshake is kept in dialed.
type pipeImpl struct {
	t      *testing.T
	ps     *pipehttp.Server
	peers  chan *peer
	refuse atomic.Int64
	dialed chan time.Time
}

func startPipeImpl(t *testing.T) *pipeImpl {
	m := &pipeImpl{t: t, peers: make(chan *peer, 16), dialed: make(chan time.Time, 64)}
	var up websocket.Upgrader
	m.ps = newPipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.dialed <- time.Now()
		if m.refuse.Add(-1) >= 0 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("impl upgrade: %v", err)
			return
		}
		p := newPeer(t, ws, peerOpts{})
		m.peers <- p
		<-p.done // the pipe's server end stays open until the connection ends
	}))
	return m
}

// config returns a forward-mode Config that dials m.
func (m *pipeImpl) config() Config {
	return Config{Mode: Forward, URL: "ws://impl.test/", Dialer: m.ps.Dialer()}
}

// nextDial returns the fake time of the next handshake.
func (m *pipeImpl) nextDial() time.Time {
	m.t.Helper()
	select {
	case at := <-m.dialed:
		return at
	default:
		m.t.Fatal("no handshake")
	}
	return time.Time{}
}

// TestForwardReconnect drops the connection and refuses handshakes, on
// fake time: the adapter fails the pending send, redials with capped
// exponential backoff (each wait between half and all of ReconnectMin·2^n,
// capped at ReconnectMax) until it is served again, and after a connection
// that lasted ReconnectMax starts again from ReconnectMin.
func TestForwardReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lo, hi = time.Second, 4 * time.Second
		m := startPipeImpl(t)
		cfg := m.config()
		cfg.ActionTimeout, cfg.ReconnectMin, cfg.ReconnectMax = time.Hour, lo, hi
		h := startAdapter(t, cfg)
		p1 := <-m.peers
		m.nextDial()
		p1.sendJSON(lifecycle(10001))
		h.waitBot(10001)

		errc := make(chan error, 1)
		go func() {
			_, err := h.a.Sender().Send(context.Background(), sendReq(GroupChat(10001, 1), "x"))
			errc <- err
		}()
		p1.next()
		m.refuse.Store(3) // the next three handshakes fail
		dropped := time.Now()
		p1.close()
		if err := <-errc; !errors.Is(err, ErrConnectionLost) || platform.IsPermanent(err) {
			t.Fatalf("pending send = %v; want retryable ErrConnectionLost", err)
		}

		p2 := <-m.peers
		prev := dropped
		for i, base := range []time.Duration{lo, 2 * lo, 4 * lo, hi} { // 8·lo is capped at hi
			at := m.nextDial()
			if wait := at.Sub(prev); wait < base/2 || wait > base {
				t.Errorf("wait before redial %d = %v; want between %v and %v", i+1, wait, base/2, base)
			}
			prev = at
		}
		select {
		case at := <-m.dialed:
			t.Fatalf("an extra handshake at %v", at.Sub(dropped))
		default:
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

		// A connection that stayed up for ReconnectMax resets the backoff.
		time.Sleep(hi)
		dropped = time.Now()
		p2.close()
		<-m.peers
		if wait := m.nextDial().Sub(dropped); wait < lo/2 || wait > lo {
			t.Errorf("wait after a long connection = %v; want between %v and %v", wait, lo/2, lo)
		}
	})
}

func TestForwardUnauthorized(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		m := startImpl(t, "", status)
		a, err := New(Config{Mode: Forward, URL: m.url(), ReconnectMin: time.Millisecond, ReconnectMax: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), obWait) // a bound: Run returns after one dial
		err = a.Run(ctx, platform.Inbound{})
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

// TestForwardCancelWhileWaiting stops Run while it waits, on fake time, to
// redial a server that is down: Run has dialled once and is waiting out an
// hour-long backoff when its context ends, and returns at once.
func TestForwardCancelWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int64
		d := &websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("connection refused")
		}}
		a, err := New(Config{Mode: Forward, URL: "ws://impl.test/", Dialer: d, ReconnectMin: time.Hour, ReconnectMax: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- a.Run(ctx, platform.Inbound{}) }()
		synctest.Wait() // Run has dialled, failed, and waits in its backoff
		if n := dials.Load(); n != 1 {
			t.Fatalf("%d dials before the backoff; want 1", n)
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned %v before its context ended", err)
		default:
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v; want nil", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Run returned %v after it started; want at once when cancelled, not after its backoff", took)
		}
	})
}
