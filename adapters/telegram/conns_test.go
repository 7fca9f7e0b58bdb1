package telegram

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// The adapter's own client keeps enough idle connections for the sends
// that run at once, has no Timeout, and bounds dials, TLS handshakes and
// response headers without cutting long polls.
func TestDefaultHTTPClient(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		idle int
	}{
		{Config{Token: "1:tok"}, DefaultMaxIdleConns},
		{Config{Token: "1:tok", MaxIdleConns: 2000, PollTimeout: 50 * time.Second}, 2000},
	} {
		a, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := a.cfg.HTTPClient
		tr, ok := c.Transport.(*http.Transport)
		if !ok || c == http.DefaultClient || c.Timeout != 0 {
			t.Fatalf("client %+v: want the adapter's own, with no Timeout", c)
		}
		if tr.MaxIdleConnsPerHost != tc.idle || tr.MaxIdleConns != tc.idle {
			t.Errorf("idle connections %d per host, %d in all; want %d", tr.MaxIdleConnsPerHost, tr.MaxIdleConns, tc.idle)
		}
		if tr.ResponseHeaderTimeout <= a.cfg.PollTimeout || tr.TLSHandshakeTimeout <= 0 || tr.IdleConnTimeout <= 0 ||
			tr.DialContext == nil || tr.Proxy == nil || !tr.ForceAttemptHTTP2 {
			t.Errorf("transport %+v: want header, TLS and idle timeouts (the header one over PollTimeout %v), a dialer with a timeout, proxies and HTTP/2",
				tr, a.cfg.PollTimeout)
		}
	}
	if DefaultMaxIdleConns < 512 {
		t.Fatalf("DefaultMaxIdleConns %d is under the dispatcher's default MaxInflight, 512", DefaultMaxIdleConns)
	}
}

// sendRounds sends rounds of k concurrent messages to k chats over plain
// HTTP/1.1, each round after the last ended, and returns how many
// connections the server accepted.
func sendRounds(t *testing.T, client *http.Client, k, rounds int) int64 {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	srv := telegramtest.NewServer(telegramtest.WithListener(ln))
	defer srv.Close()
	a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer a.cfg.HTTPClient.CloseIdleConnections()
	for range rounds {
		var wg sync.WaitGroup
		for c := 1; c <= k; c++ {
			wg.Go(func() {
				if _, err := a.Send(context.Background(), sendTo(strconv.Itoa(c), platform.TextMessage("hi"))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if n := len(srv.AllSent()); n != k*rounds {
		t.Fatalf("%d messages sent; want %d", n, k*rounds)
	}
	return ln.accepted.Load()
}

// Connections are reused: rounds of 32 sends at once over HTTP/1.1 open 32
// connections in all, not 30 more every round as with net/http's default
// of 2 idle connections per host. (A send reads its answer to the end,
// which returns the connection to the idle pool before Send returns, so
// the count is exact.)
func TestConnectionsReused(t *testing.T) {
	t.Parallel()
	const k, rounds = 32, 10
	if n := sendRounds(t, nil, k, rounds); n > k {
		t.Errorf("the adapter's own client opened %d connections for %d rounds of %d sends; want at most %d", n, rounds, k, k)
	}
	// The test tells them apart: the old default, http.Client{} (its
	// transport a fresh copy of http.DefaultTransport's settings), opens
	// many more.
	tr := &http.Transport{}
	if n := sendRounds(t, &http.Client{Transport: tr}, k, rounds); n <= 2*k {
		t.Errorf("a transport keeping 2 idle connections per host opened only %d connections; the test cannot tell reuse apart", n)
	}
}
