package onebot

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/platform"
)

// TestRefusalsRateLimited sends, on fake time, n of every kind of frame,
// event and handshake that the adapter refuses or skips with a log line —
// malformed frames of four kinds, unknown meta events, heartbeats,
// responses for no action, events whose self_id is not the connection's,
// events once Run takes no more, and handshakes without a token, with a wrong
// one, without X-Self-ID, with the API role, and beyond MaxConnections —
// and checks that each kind is logged once, not n times, and that the
// first line after ratelog's interval counts the ones left out. The bot
// keeps working throughout.
func TestRefusalsRateLimited(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		core, logs := observer.New(zap.DebugLevel)
		h := startAdapter(t, Config{AccessToken: "tok", MaxConnections: 1, Logger: zap.New(core)})
		ps := newPipeServer(t, h.a.Handler())
		auth := http.Header{"Authorization": {"Bearer tok"}}
		dialHeaders := func(hdr http.Header) (*websocket.Conn, *http.Response, error) {
			return ps.Dialer().Dial("ws://onebot.test"+DefaultPath, hdr)
		}
		ws, _, err := dialHeaders(http.Header{"X-Self-ID": {"1"}, "Authorization": auth["Authorization"]})
		if err != nil {
			t.Fatal(err)
		}
		p := newPeer(t, ws, peerOpts{})
		h.waitBot(1)

		frames := map[string][]string{
			"onebot: malformed frame skipped": {
				`not json`, `{"foo":1}`, `{"post_type":"message","user_id":"x"}`, `{"status":"ok","retcode":"x"}`,
			},
			"onebot: meta event skipped": {`{"self_id":1,"post_type":"meta_event","meta_event_type":"new"}`},
			"onebot: heartbeat":          {`{"self_id":1,"post_type":"meta_event","meta_event_type":"heartbeat","interval":5000}`},
			"onebot: lifecycle":          {`{"self_id":1,"post_type":"meta_event","meta_event_type":"lifecycle","sub_type":"connect"}`},
			"onebot: response for no pending action (late or unknown echo)": {`{"status":"ok","retcode":0,"echo":"none"}`},
			"onebot: event self_id differs from the connection's":           {`{"self_id":2,"post_type":"notice","notice_type":"x"}`},
		}
		want := map[string]int{} // lines each message stood for
		h.stopTaking()           // events are dropped, and logged
		for msg, fs := range frames {
			for _, f := range fs {
				for range n {
					p.sendRaw(f)
				}
				want[msg] += n
			}
		}
		for i := range n {
			p.sendJSON(privateMsg(1, 42, int64(i+1), "hi"))
		}
		want["onebot: event dropped: Run takes no more events"] = n + n // the self_id ones were dropped too
		synctest.Wait()

		for _, hs := range []struct {
			msg    string
			header http.Header
			status int
		}{
			{"onebot: connection without access token refused", http.Header{"X-Self-ID": {"2"}}, http.StatusUnauthorized},
			{"onebot: connection with wrong access token refused", http.Header{"X-Self-ID": {"2"}, "Authorization": {"Bearer no"}}, http.StatusForbidden},
			{"onebot: connection without a valid X-Self-ID refused", auth, http.StatusBadRequest},
			{"onebot: connection with unsupported role refused", http.Header{"X-Self-ID": {"2"}, "X-Client-Role": {"API"}, "Authorization": auth["Authorization"]}, http.StatusBadRequest},
			{"onebot: connection refused: too many connections", http.Header{"X-Self-ID": {"2"}, "Authorization": auth["Authorization"]}, http.StatusServiceUnavailable},
		} {
			for range n {
				_, resp, err := dialHeaders(hs.header)
				if err == nil || resp == nil || resp.StatusCode != hs.status {
					t.Fatalf("%s: dial = %v, %+v; want %d", hs.msg, err, resp, hs.status)
				}
			}
			want[hs.msg] = n
		}
		synctest.Wait()

		for msg := range want {
			if got := logs.FilterMessage(msg).Len(); got != 1 {
				t.Errorf("%q: %d lines for %d occurrences within the interval; want 1", msg, got, want[msg])
			}
		}
		if total := logs.Len(); total > len(want)+5 { // a few per-connection lines
			for _, e := range logs.All() {
				t.Log(e.Message)
			}
			t.Errorf("%d log lines in all", total)
		}

		// After the interval, the next line of each kind says how many
		// were left out.
		time.Sleep(ratelog.DefaultInterval)
		p.sendRaw(`not json`)
		synctest.Wait()
		lines := logs.FilterMessage("onebot: malformed frame skipped").AllUntimed()
		if len(lines) != 2 || lines[1].ContextMap()["suppressed"] != int64(want["onebot: malformed frame skipped"]-1) {
			t.Errorf("malformed-frame lines after the interval: %+v; want a second one with suppressed %d",
				lines, want["onebot: malformed frame skipped"]-1)
		}
		for _, l := range lines {
			if r, _ := l.ContextMap()["remote"].(string); r == "" || l.ContextMap()["self_id"] != int64(1) {
				t.Errorf("line %+v lacks the connection's remote address or self ID", l.ContextMap())
			}
		}

		// Still working: a send goes through.
		go func() {
			a := p.next()
			p.respond(a, "ok", 0, map[string]any{"message_id": 1})
		}()
		if _, err := h.a.Sender().Send(t.Context(), platform.SendRequest{Target: PrivateChat(1, 42), Message: platform.TextMessage("x")}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestServerLogRateLimited: the errors of Run's own server go to the
// rate-limited log, redacted.
func TestServerLogRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.DebugLevel)
		a, err := New(Config{AccessToken: "s3cret", Logger: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		l := a.serverLog()
		for range 1000 {
			l.Printf("http: panic serving 127.0.0.1:1: token s3cret")
		}
		lines := logs.FilterMessage("onebot: HTTP server error").AllUntimed()
		if len(lines) != 1 {
			t.Fatalf("%d lines for 1000 server errors within the interval; want 1", len(lines))
		}
		if e := lines[0].ContextMap()["error"]; e != "http: panic serving 127.0.0.1:1: token "+redact.Placeholder {
			t.Fatalf("error field %q; want the line, redacted", e)
		}
	})
}
