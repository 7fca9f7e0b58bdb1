package onebot

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// This file is a fake OneBot implementation: peers that dial the reverse
// endpoint or are dialled in forward mode, send events and answer actions.

// gotAction is an action frame as the peer received it.
type gotAction struct {
	Action string                     `json:"action"`
	Params map[string]json.RawMessage `json:"params"`
	Echo   json.RawMessage            `json:"echo"`
}

// param returns a parameter decoded into a fresh value of type T.
func param[T any](t *testing.T, a gotAction, name string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.Params[name], &v); err != nil {
		t.Fatalf("action %s param %s = %s: %v", a.Action, name, a.Params[name], err)
	}
	return v
}

// peer is the implementation's end of one connection. Its reader goroutine
// queues every action on actions and stops when the connection closes,
// closing done.
type peer struct {
	t       *testing.T
	ws      *websocket.Conn
	actions chan gotAction
	done    chan struct{}
	pings   atomic.Int64
	wmu     sync.Mutex
}

type peerOpts struct {
	noPong bool // answer pings with nothing
}

func newPeer(t *testing.T, ws *websocket.Conn, o peerOpts) *peer {
	p := &peer{t: t, ws: ws, actions: make(chan gotAction, 4096), done: make(chan struct{})}
	ws.SetPingHandler(func(data string) error {
		p.pings.Add(1)
		if o.noPong {
			return nil
		}
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	go func() {
		defer close(p.done)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var a gotAction
			if err := json.Unmarshal(data, &a); err != nil {
				t.Errorf("peer: adapter sent a bad frame %q: %v", data, err)
				continue
			}
			p.actions <- a
		}
	}()
	t.Cleanup(p.close)
	return p
}

// close drops the connection without a close handshake and waits for the
// reader.
func (p *peer) close() {
	_ = p.ws.Close()
	<-p.done
}

func (p *peer) sendRaw(data string) {
	p.t.Helper()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := p.ws.WriteMessage(websocket.TextMessage, []byte(data)); err != nil {
		p.t.Errorf("peer write: %v", err)
	}
}

func (p *peer) sendJSON(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	p.sendRaw(string(b))
}

// respond answers action a.
func (p *peer) respond(a gotAction, status string, retcode int, data any) {
	p.t.Helper()
	p.sendJSON(map[string]any{"status": status, "retcode": retcode, "data": data, "echo": a.Echo})
}

// next returns the next action the adapter sent, failing after 5s.
func (p *peer) next() gotAction {
	p.t.Helper()
	select {
	case a := <-p.actions:
		return a
	case <-time.After(5 * time.Second):
		p.t.Fatal("peer: no action within 5s")
	}
	return gotAction{}
}

// waitClosed fails unless the adapter closes the connection within 5s.
func (p *peer) waitClosed() {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.t.Fatal("peer: connection still open after 5s")
	}
}

func privateMsg(self, user, msgID int64, message any) map[string]any {
	return map[string]any{"time": 1700000000, "self_id": self, "post_type": "message", "message_type": "private",
		"sub_type": "friend", "message_id": msgID, "user_id": user, "message": message, "font": 0,
		"sender": map[string]any{"user_id": user, "nickname": "u"}}
}

func groupMsg(self, group, user, msgID int64, message any) map[string]any {
	return map[string]any{"time": 1700000000, "self_id": self, "post_type": "message", "message_type": "group",
		"sub_type": "normal", "message_id": msgID, "group_id": group, "user_id": user, "message": message,
		"sender": map[string]any{"user_id": user, "nickname": "u", "card": ""}}
}

// waitFor polls cond until it holds, failing after 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// harness runs an adapter's Run for one test and records its events.
type harness struct {
	t         *testing.T
	a         *Adapter
	events    chan platform.Event
	cancel    context.CancelFunc
	runErr    chan error
	receiving chan struct{} // Run's Inbound.Receiving
	stopOnce  sync.Once
}

// stopTaking closes Run's Inbound.Receiving: it takes no more events.
func (h *harness) stopTaking() { h.stopOnce.Do(func() { close(h.receiving) }) }

func startAdapter(t *testing.T, cfg Config) *harness {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return runAdapter(t, a)
}

// runAdapter runs a's Run for the test and waits until it accepts
// connections; the test's cleanup stops it.
func runAdapter(t *testing.T, a *Adapter) *harness {
	t.Helper()
	return runAdapterTaking(t, a, make(chan struct{}))
}

// runAdapterTaking is runAdapter with receiving as Run's
// Inbound.Receiving.
func runAdapterTaking(t *testing.T, a *Adapter, receiving chan struct{}) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, a: a, events: make(chan platform.Event, 1024), cancel: cancel, runErr: make(chan error, 1), receiving: receiving}
	go func() {
		h.runErr <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error { h.events <- ev; return nil }, Receiving: receiving})
	}()
	t.Cleanup(func() { h.stop() })
	waitFor(t, "Run to start", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.acceptingLocked()
	})
	return h
}

// stop cancels Run and returns its result, failing if it takes over 5s.
func (h *harness) stop() error {
	h.t.Helper()
	h.cancel()
	select {
	case err := <-h.runErr:
		h.runErr <- err // later calls see it too
		return err
	case <-time.After(5 * time.Second):
		h.t.Fatal("Run did not return within 5s of cancel")
	}
	return nil
}

// event returns the next delivered event, failing after 5s.
func (h *harness) event() platform.Event {
	h.t.Helper()
	select {
	case ev := <-h.events:
		return ev
	case <-time.After(5 * time.Second):
		h.t.Fatal("no event within 5s")
	}
	return platform.Event{}
}

// reverseServer serves the adapter's Handler on 127.0.0.1.
func (h *harness) reverseServer() string {
	srv := httptest.NewServer(h.a.Handler())
	h.t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + DefaultPath
}

// dial connects a peer to a reverse endpoint as bot selfID, with the
// token in the Authorization header when token is not empty.
func dial(t *testing.T, url string, selfID int64, token string, o peerOpts) *peer {
	t.Helper()
	hdr := http.Header{"X-Self-ID": {itoa(selfID)}, "X-Client-Role": {"Universal"}}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := websocket.DefaultDialer.Dial(url, hdr)
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("dial %s: %v %s", url, err, status)
	}
	return newPeer(t, ws, o)
}

// connect dials as bot selfID and waits until the adapter has registered it.
func (h *harness) connect(url string, selfID int64) *peer {
	h.t.Helper()
	p := dial(h.t, url, selfID, "", peerOpts{})
	h.waitBot(selfID)
	return p
}

func (h *harness) waitBot(selfID int64) {
	h.t.Helper()
	waitFor(h.t, "bot to register", func() bool {
		h.a.mu.Lock()
		defer h.a.mu.Unlock()
		c := h.a.bySelf[selfID]
		return c != nil && !c.closed()
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
