package onebot

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/platform"
)

func TestReverseHandshake(t *testing.T) {
	h := startAdapter(t, Config{AccessToken: "s3cret"})
	base := h.reverseServer()
	tests := []struct {
		name   string
		header http.Header
		query  string
		want   int
	}{
		{"no token", http.Header{"X-Self-ID": {"1"}}, "", http.StatusUnauthorized},
		{"no token and no self id", nil, "", http.StatusUnauthorized},
		{"unknown scheme", http.Header{"X-Self-ID": {"1"}, "Authorization": {"Basic czNjcmV0"}}, "", http.StatusUnauthorized},
		{"wrong bearer", http.Header{"X-Self-ID": {"1"}, "Authorization": {"Bearer nope"}}, "", http.StatusForbidden},
		{"wrong query", http.Header{"X-Self-ID": {"1"}}, "access_token=nope", http.StatusForbidden},
		{"empty query token", http.Header{"X-Self-ID": {"1"}}, "access_token=", http.StatusForbidden},
		{"token prefix", http.Header{"X-Self-ID": {"1"}, "Authorization": {"Bearer s3cre"}}, "", http.StatusForbidden},
		{"bearer", http.Header{"X-Self-ID": {"1"}, "Authorization": {"Bearer s3cret"}}, "", http.StatusSwitchingProtocols},
		{"bearer lower case", http.Header{"X-Self-ID": {"2"}, "Authorization": {"bearer s3cret"}}, "", http.StatusSwitchingProtocols},
		{"token scheme", http.Header{"X-Self-ID": {"3"}, "Authorization": {"Token s3cret"}}, "", http.StatusSwitchingProtocols},
		{"query", http.Header{"X-Self-ID": {"4"}}, "access_token=s3cret", http.StatusSwitchingProtocols},
		{"missing self id", http.Header{"Authorization": {"Bearer s3cret"}}, "", http.StatusBadRequest},
		{"bad self id", http.Header{"X-Self-ID": {"abc"}, "Authorization": {"Bearer s3cret"}}, "", http.StatusBadRequest},
		{"zero self id", http.Header{"X-Self-ID": {"0"}, "Authorization": {"Bearer s3cret"}}, "", http.StatusBadRequest},
		{"API role", http.Header{"X-Self-ID": {"5"}, "X-Client-Role": {"API"}, "Authorization": {"Bearer s3cret"}}, "", http.StatusBadRequest},
		{"Event role", http.Header{"X-Self-ID": {"5"}, "X-Client-Role": {"Event"}, "Authorization": {"Bearer s3cret"}}, "", http.StatusBadRequest},
		{"universal role", http.Header{"X-Self-ID": {"6"}, "X-Client-Role": {"universal"}, "Authorization": {"Bearer s3cret"}}, "", http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := base
			if tt.query != "" {
				u += "?" + tt.query
			}
			ws, resp, err := websocket.DefaultDialer.Dial(u, tt.header)
			if resp == nil {
				t.Fatalf("no HTTP response: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %s; want %d", resp.Status, tt.want)
			}
			if tt.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if ws != nil {
				p := newPeer(t, ws, peerOpts{})
				//lint:ignore SA1008 the table's literal keys are spelled as OneBot implementations send them
				id, err := strconv.ParseInt(tt.header["X-Self-ID"][0], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				waitFor(t, "bot to register", func() bool {
					return slices.ContainsFunc(h.a.Bots(), func(b Bot) bool { return b.SelfID == id })
				})
				p.close()
			}
		})
	}
}

func TestHandlerRefusesWhenNotRunning(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want int
	}{
		{Config{}, http.StatusServiceUnavailable},
		{Config{Mode: Forward, URL: "ws://127.0.0.1:1/"}, http.StatusNotFound},
	} {
		a, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{t: t, a: a}
		u := h.reverseServer()
		_, resp, err := websocket.DefaultDialer.Dial(u, http.Header{"X-Self-ID": {"1"}})
		if resp == nil || resp.StatusCode != tc.want {
			t.Fatalf("mode %v: dial = %v, %v; want %d", tc.cfg.Mode, resp, err, tc.want)
		}
	}
}

func TestReverseEvents(t *testing.T) {
	h := startAdapter(t, Config{})
	p := h.connect(h.reverseServer(), 10001)

	p.sendJSON(map[string]any{"time": 1700000000, "self_id": 10001, "post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect"})
	p.sendJSON(map[string]any{"time": 1700000000, "self_id": 10001, "post_type": "meta_event", "meta_event_type": "heartbeat", "interval": 5000, "status": map[string]any{"online": true}})
	p.sendJSON(privateMsg(10001, 42, 1, "hi &amp; &#91;x&#93;[CQ:face,id=1]"))
	p.sendJSON(groupMsg(10001, 555, 42, 2, []map[string]any{
		{"type": "reply", "data": map[string]any{"id": "1"}},
		{"type": "text", "data": map[string]any{"text": "[CQ:at,qq=1] &amp;"}},
	}))
	p.sendJSON(map[string]any{"time": 1700000000, "self_id": 10001, "post_type": "notice", "notice_type": "group_increase", "group_id": 555, "user_id": 43})
	p.sendJSON(map[string]any{"time": 1700000000, "self_id": 10001, "post_type": "notice", "notice_type": "group_decrease", "group_id": 555, "user_id": 44})
	p.sendJSON(map[string]any{"time": 1700000000, "self_id": 10001, "post_type": "request", "request_type": "group", "group_id": 555, "user_id": 45, "flag": "x"})

	want := []struct {
		kind platform.EventKind
		chat platform.Chat
		text string
	}{
		{platform.EventMessage, platform.Chat{ID: "10001:42", Type: platform.ChatPrivate}, "hi & [x]"},
		{platform.EventMessage, platform.Chat{ID: "10001:555", Type: platform.ChatGroup}, "[CQ:at,qq=1] &amp;"},
		{platform.EventMemberJoined, platform.Chat{ID: "10001:555", Type: platform.ChatGroup}, ""},
		{platform.EventMemberLeft, platform.Chat{ID: "10001:555", Type: platform.ChatGroup}, ""},
		{platform.EventOther, platform.Chat{ID: "10001:555", Type: platform.ChatGroup}, ""},
	}
	for i, w := range want {
		ev := h.event()
		if ev.Kind != w.kind || ev.Chat != w.chat || ev.Text != w.text || ev.Platform != "onebot" {
			t.Fatalf("event %d = %+v; want %v in %v with text %q", i, ev, w.kind, w.chat, w.text)
		}
		if i == 1 && ev.ReplyToID != "1" {
			t.Fatalf("ReplyToID = %q", ev.ReplyToID)
		}
	}
	select {
	case ev := <-h.events:
		t.Fatalf("unexpected event %+v (meta events must not be delivered)", ev)
	default:
	}
	bots := h.a.Bots()
	if len(bots) != 1 || bots[0].SelfID != 10001 || bots[0].HeartbeatInterval != 5*time.Second {
		t.Fatalf("Bots = %+v", bots)
	}
}

func TestMalformedFramesSkipped(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	h := startAdapter(t, Config{Logger: zap.New(core)})
	p := h.connect(h.reverseServer(), 10001)
	bad := []string{
		`not json`,
		`{"foo":1}`,
		`[1,2]`,
		`{"post_type":"message","message_type":"private","user_id":"x","message":"a"}`,
		`{"post_type":"message","message":12}`,
		`{"status":"ok","retcode":0,"echo":"no-such-action"}`, // unknown echo: debug, not an error
	}
	for _, b := range bad {
		p.sendRaw(b)
	}
	p.wmu.Lock()
	err := p.ws.WriteMessage(websocket.BinaryMessage, []byte{0xff, 0x00})
	p.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	p.sendJSON(privateMsg(10001, 42, 9, "still here"))
	if ev := h.event(); ev.Text != "still here" {
		t.Fatalf("event = %+v", ev)
	}
	// The first is logged; the rest, within ratelog's interval, are
	// counted (TestRefusalsRateLimited checks the counts on fake time).
	if n := logs.FilterMessage("onebot: malformed frame skipped").Len(); n < 1 || n > 6 {
		t.Fatalf("%d malformed-frame log lines; want 1 to 6: %v", n, logs.All())
	}
	// The connection is still up: a send goes through.
	go func() {
		a := p.next()
		p.respond(a, "ok", 0, map[string]any{"message_id": 1})
	}()
	if _, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: PrivateChat(10001, 42), Message: platform.TextMessage("x")}); err != nil {
		t.Fatal(err)
	}
}

func TestReplaceSameSelfID(t *testing.T) {
	h := startAdapter(t, Config{})
	u := h.reverseServer()
	p1 := h.connect(u, 10001)
	errc := make(chan error, 1)
	go func() {
		_, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: GroupChat(10001, 5), Message: platform.TextMessage("x")})
		errc <- err
	}()
	p1.next() // in flight on the first connection, never answered
	p2 := dial(t, u, 10001, "", peerOpts{})
	select {
	case err := <-errc:
		if !errors.Is(err, ErrConnectionLost) || platform.IsPermanent(err) {
			t.Fatalf("pending send on the replaced connection: %v; want retryable ErrConnectionLost", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending send did not fail when its connection was replaced")
	}
	p1.waitClosed()
	go func() {
		a := p2.next()
		p2.respond(a, "ok", 0, map[string]any{"message_id": 2})
	}()
	res, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: GroupChat(10001, 5), Message: platform.TextMessage("y")})
	if err != nil || res.MessageID != "2" {
		t.Fatalf("send on the new connection = %+v, %v", res, err)
	}
	if bots := h.a.Bots(); len(bots) != 1 {
		t.Fatalf("Bots = %+v; want one", bots)
	}
}

func TestMultiBotRouting(t *testing.T) {
	h := startAdapter(t, Config{})
	u := h.reverseServer()
	p1 := h.connect(u, 10001)
	send := func(chat platform.Chat) error {
		_, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: chat, Message: platform.TextMessage("x")})
		return err
	}
	answer := func(p *peer, wantGroup int64) {
		a := p.next()
		if g := param[int64](t, a, "group_id"); g != wantGroup {
			t.Errorf("group_id = %d; want %d", g, wantGroup)
		}
		p.respond(a, "ok", 0, map[string]any{"message_id": 1})
	}

	// One bot: bare IDs go to it.
	go answer(p1, 5)
	if err := send(platform.Chat{ID: "5", Type: platform.ChatGroup}); err != nil {
		t.Fatal(err)
	}

	p2 := h.connect(u, 10002)
	for _, tc := range []struct {
		p    *peer
		self int64
	}{{p1, 10001}, {p2, 10002}, {p2, 10002}, {p1, 10001}} {
		go answer(tc.p, 7)
		if err := send(GroupChat(tc.self, 7)); err != nil {
			t.Fatal(err)
		}
	}
	if err := send(platform.Chat{ID: "5", Type: platform.ChatGroup}); !errors.Is(err, ErrAmbiguousChat) || !platform.IsPermanent(err) {
		t.Fatalf("bare ID with two bots: %v; want permanent ErrAmbiguousChat", err)
	}
	if err := send(GroupChat(10003, 5)); !errors.Is(err, ErrNotConnected) || platform.IsPermanent(err) {
		t.Fatalf("unknown bot: %v; want retryable ErrNotConnected", err)
	}
	select {
	case a := <-p1.actions:
		t.Fatalf("p1 got a stray action %+v", a)
	case a := <-p2.actions:
		t.Fatalf("p2 got a stray action %+v", a)
	default:
	}
}

// TestMaxConnections fills the reverse endpoint: one more connection gets
// 503 before the upgrade, and is accepted once a connection has closed.
func TestMaxConnections(t *testing.T) {
	h := startAdapter(t, Config{MaxConnections: 2})
	u := h.reverseServer()
	p1 := h.connect(u, 1)
	h.connect(u, 2)
	_, resp, err := websocket.DefaultDialer.Dial(u, http.Header{"X-Self-ID": {"3"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third connection: %v, %+v; want 503", err, resp)
	}
	p1.close()
	waitFor(t, "the closed connection to be let go", func() bool {
		h.a.mu.Lock()
		defer h.a.mu.Unlock()
		return h.a.served == 1
	})
	h.connect(u, 3)
	if bots := h.a.Bots(); len(bots) != 2 || bots[0].SelfID != 2 || bots[1].SelfID != 3 {
		t.Fatalf("Bots = %+v; want 2 and 3", bots)
	}
}

func TestRunListen(t *testing.T) {
	h := startAdapter(t, Config{Listen: "127.0.0.1:0", AccessToken: "tok"})
	waitFor(t, "listener", func() bool { return h.a.Addr() != nil })
	u := "ws://" + h.a.Addr().String() + DefaultPath
	p := dial(t, u, 10001, "tok", peerOpts{})
	h.waitBot(10001)
	p.sendJSON(privateMsg(10001, 42, 1, "hello"))
	if ev := h.event(); ev.Text != "hello" {
		t.Fatalf("event = %+v", ev)
	}
	// Other paths are not served.
	resp, err := http.Get("http://" + h.a.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET / = %s", resp.Status)
	}
	addr := h.a.Addr().String()
	if err := h.stop(); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	p.waitClosed()
	if h.a.Addr() != nil {
		t.Fatal("Addr not cleared after Run")
	}
	if _, _, err := websocket.DefaultDialer.Dial("ws://"+addr+DefaultPath, nil); err == nil {
		t.Fatal("server still accepting after Run returned")
	}
}

func TestRunListenError(t *testing.T) {
	h := startAdapter(t, Config{Listen: "127.0.0.1:0"})
	waitFor(t, "listener", func() bool { return h.a.Addr() != nil })
	a, err := New(Config{Listen: h.a.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), obWait) // a bound: Run fails at once
	defer cancel()
	if err := a.Run(ctx, platform.Inbound{}); err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "onebot: listen") {
		t.Fatalf("Run on a busy port = %v", err)
	}
}

func TestRunTwiceAndRerun(t *testing.T) {
	h := startAdapter(t, Config{})
	if err := h.a.Run(context.Background(), platform.Inbound{}); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Run = %v; want ErrAlreadyRunning", err)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// After Run returned, connections are refused, then accepted again by a
	// new Run.
	u := h.reverseServer()
	if _, resp, _ := websocket.DefaultDialer.Dial(u, http.Header{"X-Self-ID": {"1"}}); resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Run returned: %v", resp)
	}
	h2 := &harness{t: t, a: h.a, events: make(chan platform.Event, 8), runErr: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	h2.cancel = cancel
	go func() {
		h2.runErr <- h.a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error { h2.events <- ev; return nil }})
	}()
	t.Cleanup(func() { h2.stop() })
	waitFor(t, "rerun", func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return h.a.acceptingLocked() })
	p := h2.connect(u, 1)
	p.sendJSON(privateMsg(1, 2, 3, "again"))
	if ev := h2.event(); ev.Text != "again" {
		t.Fatalf("event = %+v", ev)
	}
}

// TestRunWhileStopping ends a Run whose handle is stuck, so that it stays
// stopping: meanwhile another Run is refused with ErrAlreadyRunning, at once and
// without disturbing the first, and so are new connections; once the
// first Run has returned, a new Run works.
func TestRunWhileStopping(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	block, entered := make(chan struct{}), make(chan string, 1)
	var unblock sync.Once
	release := func() { unblock.Do(func() { close(block) }) }
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		first <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
			entered <- ev.Text
			<-block
			return nil
		}})
	}()
	t.Cleanup(func() {
		cancel()
		release()
		<-first
	})
	h := &harness{t: t, a: a}
	waitFor(t, "Run to start", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.acceptingLocked()
	})
	url := h.reverseServer()
	p := h.connect(url, 1)
	p.sendJSON(privateMsg(1, 2, 3, "stuck"))
	<-entered
	cancel()
	waitFor(t, "Run to begin stopping", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.stopping
	})

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	second := make(chan error, 1)
	go func() {
		second <- a.Run(ended, platform.Inbound{Handle: func(platform.Event) error { t.Error("the refused Run's handle was called"); return nil }})
	}()
	select {
	case err := <-second:
		if !errors.Is(err, ErrAlreadyRunning) {
			t.Errorf("Run while another is stopping = %v; want ErrAlreadyRunning", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Run while another is stopping did not return at once")
		release()
		<-second
		return
	}
	if _, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"X-Self-ID": {"2"}}); err == nil || resp == nil ||
		resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("dial while stopping: %v, %+v; want 503", err, resp)
	}

	release()
	if err := <-first; err != nil {
		t.Fatalf("first Run = %v", err)
	}
	first <- nil // for the cleanup
	h2 := runAdapter(t, a)
	p2 := h2.connect(url, 1)
	p2.sendJSON(privateMsg(1, 2, 4, "next"))
	if ev := h2.event(); ev.Text != "next" {
		t.Fatalf("event %q; want the next Run to deliver", ev.Text)
	}
}

func TestCancelStopsRunAndFailsPending(t *testing.T) {
	h := startAdapter(t, Config{})
	u := h.reverseServer()
	p1 := h.connect(u, 1)
	p2 := h.connect(u, 2)
	errc := make(chan error, 2)
	for _, self := range []int64{1, 2} {
		go func() {
			_, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: PrivateChat(self, 9), Message: platform.TextMessage("x")})
			errc <- err
		}()
	}
	p1.next()
	p2.next()
	if err := h.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	for range 2 {
		if err := <-errc; !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("pending send after cancel: %v", err)
		}
	}
	p1.waitClosed()
	p2.waitClosed()
	if len(h.a.Bots()) != 0 {
		t.Fatalf("Bots after Run = %+v", h.a.Bots())
	}
	_, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: PrivateChat(1, 9), Message: platform.TextMessage("x")})
	if !errors.Is(err, ErrNotConnected) {
		t.Fatalf("send after Run = %v", err)
	}
}

// TestKeepAlive checks the ping schedule on fake time: each connection is
// pinged every PingInterval, one that answers stays, and one from which
// nothing arrives is dropped exactly two intervals after it was last
// heard.
func TestKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ping = 10 * time.Second
		h := startAdapter(t, Config{PingInterval: ping})
		ps := newPipeServer(t, h.a.Handler())
		start := time.Now()
		silent := h.pipeConnect(ps, 1, peerOpts{noPong: true})
		alive := h.pipeConnect(ps, 2, peerOpts{})
		<-silent.done
		if gone := time.Since(start); gone != 2*ping {
			t.Errorf("silent connection dropped after %v; want 2×PingInterval = %v", gone, 2*ping)
		}
		if n := silent.pings.Load(); n < 1 {
			t.Errorf("silent connection got %d pings before the drop", n)
		}

		time.Sleep(10*ping + ping/2)
		select {
		case <-alive.done:
			t.Fatal("the connection that answers pings was dropped")
		default:
		}
		if got, want := alive.pings.Load(), int64(time.Since(start)/ping); got != want {
			t.Errorf("%d pings in %v; want one every %v, %d", got, time.Since(start), ping, want)
		}
		if bots := h.a.Bots(); len(bots) != 1 || bots[0].SelfID != 2 {
			t.Fatalf("Bots = %+v; want only bot 2", bots)
		}
	})
}

func TestReadLimit(t *testing.T) {
	h := startAdapter(t, Config{ReadLimit: 1024})
	p := h.connect(h.reverseServer(), 1)
	p.sendJSON(privateMsg(1, 2, 3, strings.Repeat("x", 2000)))
	p.waitClosed()
	select {
	case ev := <-h.events:
		t.Fatalf("oversized frame delivered: %+v", ev)
	default:
	}
}

func TestQueryTokenEscaped(t *testing.T) {
	h := startAdapter(t, Config{AccessToken: "a b&c"})
	u := h.reverseServer() + "?access_token=" + url.QueryEscape("a b&c")
	ws, resp, err := websocket.DefaultDialer.Dial(u, http.Header{"X-Self-ID": {"1"}})
	if err != nil {
		t.Fatalf("dial: %v %v", err, resp)
	}
	newPeer(t, ws, peerOpts{})
	h.waitBot(1)
}
