package webchat_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
)

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	client := &http.Client{Timeout: ioTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// externalURL finds URLs of other sites that a file would load.
var externalURL = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?(https?:)?//`)

func TestPage(t *testing.T) {
	a, _ := start(t, webchat.Config{})
	tests := []struct {
		path, status, contentType string
		contains                  []string
	}{
		{"/", "200 OK", "text/html; charset=utf-8", []string{`id="input"`, `id="send"`, `id="status"`, `id="log"`,
			`<label for="input"`, `<label class="name-box" for="name"`, `src="static/app.js"`, `href="static/style.css"`}},
		{"/static/app.js", "200 OK", "text/javascript; charset=utf-8", []string{"new WebSocket(", "'hello'", "localStorage"}},
		{"/static/style.css", "200 OK", "text/css; charset=utf-8", []string{".msg.bot", ".msg.user"}},
		{"/static/index.html", "404 Not Found", "", nil},
		{"/nope", "404 Not Found", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := get(t, a.URL()+strings.TrimPrefix(tt.path, "/"))
			if resp.Status != tt.status {
				t.Fatalf("status %q; want %q", resp.Status, tt.status)
			}
			if tt.contentType == "" {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != tt.contentType {
				t.Errorf("Content-Type %q; want %q", ct, tt.contentType)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy = %q", csp)
			}
			for _, s := range tt.contains {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q", s)
				}
			}
			if m := externalURL.FindString(body); m != "" {
				t.Errorf("the page loads something from another site: %q", m)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodPost, a.URL(), nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d; want 405", resp.StatusCode)
	}
}

// TestNoServer mounts the Handler under a prefix on a server of the
// test's own, as a program with its own HTTP server would.
func TestNoServer(t *testing.T) {
	a, err := webchat.New(webchat.Config{NoServer: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/chat/", http.StripPrefix("/chat", a.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// Before Run, the page is served but the chat is not open.
	if resp, body := get(t, srv.URL+"/chat/"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="log"`) {
		t.Fatalf("page: %s", resp.Status)
	}
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/chat/ws"
	origin := http.Header{"Origin": {srv.URL}}
	if _, resp, err := websocket.DefaultDialer.Dial(wsURL, origin); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("WebSocket before Run: %v, %+v; want 503", err, resp)
	}

	bot := newTestBot(a.Sender())
	defer bot.stop()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, bot.handle) }()
	<-a.Ready()
	if a.Addr() != "" || a.URL() != "" {
		t.Errorf("Addr, URL = %q, %q with NoServer; want empty", a.Addr(), a.URL())
	}
	ws, _, err := websocket.DefaultDialer.Dial(wsURL, origin)
	if err != nil {
		t.Fatal(err)
	}
	c := &client{ws: ws}
	c.send(t, map[string]string{"type": "hello"})
	c.read(t)
	c.say(t, "/ping")
	if got := texts(c.readMessages(t, 2)); !slices.Equal(got, []string{"user:/ping", "pong"}) {
		t.Errorf("got %q", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Run did not return")
	}
	if code := c.expectClose(t); code != websocket.CloseGoingAway {
		t.Errorf("closed with %d; want 1001", code)
	}
	ws.Close()
}
