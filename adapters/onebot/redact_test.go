package onebot

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/internal/testport"
	"github.com/heraldbot/herald/platform"
)

// The access token of TestSecretsRedacted: two halves joined by characters
// that URL escaping and Go quoting change, so that a text holding either
// half, in any of those forms, gives it away.
const (
	secretA = "Zq9vQk"
	secretB = "Xw7pLm"
	secret  = secretA + `+/&=%" ` + secretB
)

// leaks reports whether s holds the secret, or part of it, in any form.
func leaks(s string) bool {
	return strings.Contains(s, secretA) || strings.Contains(s, secretB) ||
		strings.Contains(s, base64.StdEncoding.EncodeToString([]byte(secret))) ||
		strings.Contains(s, base64.StdEncoding.EncodeToString([]byte("bot:"+secret)))
}

// TestSecretsRedacted sends the access token, as AccessToken and as the
// access_token query parameter of the forward URL (and once as a URL
// password), through every path that logs a URL or puts one in an error:
// config errors; dial errors (connection refused, a failed DNS lookup, an
// untrusted TLS certificate); handshake answers 401, 403 and 500; connect,
// identify, disconnect and reconnect lines at debug level; and reverse
// mode's connections with the token in the query. No error text and no log
// line, message or field, holds it; the URLs are still shown, with the
// secret replaced.
func TestSecretsRedacted(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core)
	q := "access_token=" + url.QueryEscape(secret)
	var errTexts []string

	// Config errors.
	for _, u := range []string{
		"ws://127.0.0.1:bad/?" + q,           // invalid port: url.Parse quotes the URL
		"ws://127.0.0.1:6700/?" + q + "\x7f", // a control character: url.Parse quotes it
		"ws:///?" + q,                        // no host
		"http://127.0.0.1:6700/?" + q,        // wrong scheme
		"ws://" + url.UserPassword("bot", secret).String() + "@127.0.0.1:6700/",     // user info
		"ws://" + url.UserPassword("bot", secret).String() + "@127.0.0.1:bad/?" + q, // both
	} {
		_, err := New(Config{Mode: Forward, URL: u, AccessToken: secret, Logger: log})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "URL") {
			t.Errorf("New with URL %q = %v; want an ErrInvalidConfig naming URL", u, err)
			continue
		}
		errTexts = append(errTexts, err.Error())
	}
	if _, err := New(Config{URL: "ws://127.0.0.1:6700/?" + q, AccessToken: secret}); err == nil {
		t.Error("a forward URL in reverse mode was accepted")
	} else {
		errTexts = append(errTexts, err.Error())
	}

	// runForward runs a forward-mode adapter dialling u until Run returns
	// or until holds, and returns Run's error.
	runForward := func(u string, d *websocket.Dialer, until func() bool) error {
		t.Helper()
		a, err := New(Config{Mode: Forward, URL: u, AccessToken: secret, Dialer: d, Logger: log,
			ReconnectMin: time.Hour, ReconnectMax: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, platform.Inbound{}) }()
		var runErr error
		returned := false
		waitFor(t, "Run to return, or "+u+" to be dialled", func() bool {
			select {
			case runErr = <-done:
				returned = true
				return true
			default:
				return until()
			}
		})
		cancel()
		if !returned {
			runErr = <-done
		}
		if runErr != nil {
			errTexts = append(errTexts, runErr.Error())
		}
		return runErr
	}
	dialFailures := func(n int) func() bool {
		return func() bool { return logs.FilterMessage("onebot: dial failed").Len() >= n }
	}

	// Connection refused.
	closed := testport.Addr(t) // no listener
	runForward("ws://"+closed+"/?"+q, nil, dialFailures(1))

	// A failed DNS lookup.
	noDNS := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS server in this test")
	}}
	runForward("ws://onebot.invalid:6700/?"+q, &websocket.Dialer{NetDialContext: (&net.Dialer{Resolver: noDNS}).DialContext},
		dialFailures(2))

	// An untrusted certificate.
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = stdlog.New(io.Discard, "", 0) // the refused handshake
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	runForward("wss://"+tlsSrv.Listener.Addr().String()+"/?"+q, nil, dialFailures(3))

	// Handshake answers.
	runForward(startImpl(t, "", http.StatusInternalServerError).url()+"?"+q, nil, dialFailures(4))
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		if err := runForward(startImpl(t, "", status).url()+"?"+q, nil, func() bool { return false }); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Run against %d = %v; want ErrUnauthorized", status, err)
		}
	}

	// Connect, identify, disconnect, reconnect.
	m := startImpl(t, secret, 0)
	before := logs.FilterMessage("onebot: reconnecting").Len()
	reconnecting := func() bool { return logs.FilterMessage("onebot: reconnecting").Len() > before }
	runForward(m.url()+"?"+q, nil, func() bool {
		select {
		case p := <-m.peers:
			p.sendJSON(lifecycle(10001))
			waitFor(t, "the bot to be identified", func() bool { return logs.FilterMessage("onebot: bot identified").Len() > 0 })
			p.close()
		default:
		}
		return reconnecting()
	})

	// Reverse mode, the token in the query.
	h := startAdapter(t, Config{Listen: "127.0.0.1:0", AccessToken: secret, Logger: log})
	waitFor(t, "listener", func() bool { return h.a.Addr() != nil })
	base := "ws://" + h.a.Addr().String() + DefaultPath
	ws, _, err := websocket.DefaultDialer.Dial(base+"?"+q, http.Header{"X-Self-ID": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPeer(t, ws, peerOpts{})
	h.waitBot(1)
	p.close()
	if _, _, err := websocket.DefaultDialer.Dial(base+"?access_token=wrong", http.Header{"X-Self-ID": {"1"}}); err == nil {
		t.Fatal("a wrong token was accepted")
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	for _, s := range errTexts {
		if leaks(s) {
			t.Errorf("error gives the token away: %s", s)
		}
	}
	shown := false
	for _, e := range logs.All() {
		line := fmt.Sprint(e.Level, " ", e.LoggerName, " ", e.Message, " ", e.ContextMap())
		if leaks(line) {
			t.Errorf("log line gives the token away: %s", line)
		}
		shown = shown || strings.Contains(line, "access_token="+redact.Placeholder)
	}
	for _, msg := range []string{"onebot: dial failed", "onebot: connected", "onebot: bot identified",
		"onebot: connection closed", "onebot: reconnecting", "onebot: bot connected"} {
		if logs.FilterMessage(msg).Len() == 0 {
			t.Errorf("no %q line: the test missed a path", msg)
		}
	}
	if !shown {
		t.Error("no log line shows a URL with its token redacted")
	}
	t.Logf("%d error texts and %d log lines checked; e.g. %s", len(errTexts), logs.Len(), errTexts[0])
}
