package webchat_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/platform"
)

// TestRefusalsLogRateLimited sends the adapter a thousand of each thing it
// refuses — bad frames, messages while the bot is busy, WebSocket requests
// from another origin, requests naming a foreign Host, tabs over
// MaxConnections — in fake time that does not move: each refusal is
// logged once, not a thousand times. Once the log's interval has passed,
// the next refusal is logged again with the count of those left out.
func TestRefusalsLogRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		core, logs := observer.New(zap.DebugLevel)
		release := make(chan struct{})
		a, ps, stop := runInBubble(t, webchat.Config{Logger: zap.New(core), EventBuffer: 1, MaxConnections: 1},
			func(platform.Event) error { <-release; return nil })
		tab := ps.dial(t)
		sendHello(t, tab, "")
		readOne := func(want string) {
			t.Helper()
			var f frame
			if err := tab.ReadJSON(&f); err != nil || f.Type != want {
				t.Fatalf("got %+v, %v; want a %s frame", f, err, want)
			}
		}

		badFrame := func(i int) {
			var err error
			switch i % 3 {
			case 0:
				err = tab.WriteMessage(websocket.TextMessage, []byte("{"))
			case 1:
				err = tab.WriteMessage(websocket.BinaryMessage, []byte{1})
			default:
				err = tab.WriteJSON(map[string]string{"type": "nonsense"})
			}
			if err != nil {
				t.Fatal(err)
			}
			readOne("error")
		}
		for i := range n {
			badFrame(i)
		}

		// The first message holds the bot, the second waits in the
		// buffer, the rest are refused as busy.
		for i := range n {
			if err := tab.WriteJSON(map[string]string{"type": "message", "text": "hi"}); err != nil {
				t.Fatal(err)
			}
			var f frame
			if err := tab.ReadJSON(&f); err != nil || (f.Type != "echo" && f.Code != "busy") || (i >= 2 && f.Code != "busy") {
				t.Fatalf("message %d answered %+v, %v", i, f, err)
			}
		}

		for range n {
			_, resp, err := ps.Dialer().Dial("ws://webchat.test/ws", http.Header{"Origin": {"http://evil.example"}})
			if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("foreign origin: %v, %v; want 403", resp, err)
			}
		}

		loopback := context.WithValue(context.Background(), http.LocalAddrContextKey,
			&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})
		for range n {
			req := httptest.NewRequestWithContext(loopback, http.MethodGet, "http://evil.example/", nil)
			rec := httptest.NewRecorder()
			a.Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden {
				t.Fatalf("foreign Host answered %d; want 403", rec.Code)
			}
		}

		for range n {
			ws := ps.dial(t)
			_, _, err := ws.ReadMessage()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
				t.Fatalf("tab over MaxConnections: %v; want close 1013", err)
			}
			ws.Close()
		}

		refusals := []string{
			"webchat: bad frame",
			"webchat: event buffer full; refused a tab's frame",
			"webchat: websocket handshake refused",
			"webchat: request refused: Host is not a loopback name (DNS rebinding?); list the origin in Config.AllowedOrigins if it is yours",
			"webchat: tab refused: too many open tabs",
		}
		for _, msg := range refusals {
			if got := logs.FilterMessage(msg).Len(); got != 1 {
				t.Errorf("%q logged %d times for %d refusals; want once", msg, got, n)
			}
		}
		// Besides them, only the one tab's connecting and joining.
		if total := logs.Len(); total > len(refusals)+4 {
			for _, e := range logs.All() {
				t.Logf("%s %s", e.Level, e.Message)
			}
			t.Errorf("%d log lines for %d refusals", total, 5*n)
		}

		time.Sleep(ratelog.DefaultInterval)
		badFrame(0)
		lines := logs.FilterMessage("webchat: bad frame").All()
		if len(lines) != 2 || lines[1].ContextMap()["suppressed"] != int64(n-1) {
			t.Errorf("bad frame lines after the interval: %+v; want a second one with suppressed = %d", lines, n-1)
		}

		close(release)
		tab.Close()
		stop()
	})
}
