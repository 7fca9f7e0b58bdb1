package webchat_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
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
			`<label for="input"`, `<label class="name-box" for="name"`, `<script type="module" src="static/app.js">`,
			`href="static/style.css"`}},
		{"/static/app.js", "200 OK", "text/javascript; charset=utf-8", []string{"from './protocol.js'", "'hello'"}},
		{"/static/protocol.js", "200 OK", "text/javascript; charset=utf-8", []string{"new WebSocket("}},
		{"/static/storage.js", "200 OK", "text/javascript; charset=utf-8", []string{"localStorage", "sessionStorage"}},
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
			if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self';") ||
				strings.Contains(csp, "unsafe-") {
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
	go func() { done <- a.Run(ctx, bot.inbound()) }()
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

var (
	// scriptTag finds a page's script elements: their attributes and
	// content.
	scriptTag = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script\s*>`)
	// inlineHandler finds event handler attributes such as onclick.
	inlineHandler = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	// moduleImport finds the specifiers of a module's static imports and
	// re-exports.
	moduleImport = regexp.MustCompile(`(?m)^\s*(?:import\s*(?:[^'"();]*?\bfrom\s*)?|export\s*[^'"();]*?\bfrom\s*)['"]([^'"]+)['"]`)
	// dynamicImport finds import(), which could load code the walk in
	// TestPageModules does not see.
	dynamicImport = regexp.MustCompile(`\bimport\s*\(`)
	// unsafeDOM finds the ways a script could have the browser parse a
	// string as HTML or run it as code. The renderers build every node
	// with createElement and textContent instead.
	unsafeDOM = regexp.MustCompile(`\b(innerHTML|outerHTML|insertAdjacentHTML|createContextualFragment|parseFromString|srcdoc|eval)\b|` +
		`\bdocument\s*\.\s*write|\bnew\s+Function\b|\bset(Timeout|Interval)\s*\(\s*['"` + "`]")
)

// TestPageModules checks that the page's scripts are ES modules of its
// own, loaded by relative URLs from its origin (with the handler at the
// root, and mounted under a prefix), served as JavaScript, and that none
// of them, nor any other .js file of the page, uses an API that parses
// HTML or runs a string as code.
func TestPageModules(t *testing.T) {
	a, _ := start(t, webchat.Config{})
	mounted, err := webchat.New(webchat.Config{NoServer: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/chat/", http.StripPrefix("/chat", mounted.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	files, err := filepath.Glob(filepath.Join("static", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no static/*.js: %v", err)
	}
	var onDisk []string
	for _, f := range files {
		onDisk = append(onDisk, path.Base(f))
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := unsafeDOM.FindString(string(src)); m != "" {
			t.Errorf("%s uses %q", f, m)
		}
	}

	for _, tt := range []struct{ name, page string }{{"root", a.URL()}, {"mounted", srv.URL + "/chat/"}} {
		t.Run(tt.name, func(t *testing.T) {
			loaded := walkModules(t, tt.page)
			if !slices.Equal(loaded, onDisk) {
				t.Errorf("the page loads the modules %q; want every file of static/*.js, %q", loaded, onDisk)
			}
		})
	}
}

// walkModules loads the page at pageURL and every module its scripts
// import, checking each, and returns the modules' file names, sorted.
func walkModules(t *testing.T, pageURL string) []string {
	t.Helper()
	base, err := url.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	_, html := get(t, pageURL)
	if m := inlineHandler.FindString(html); m != "" {
		t.Errorf("the page has an inline event handler: %q", m)
	}
	seen := map[string]bool{}
	var queue []*url.URL
	// add queues the module at the relative URL ref of a script or import
	// in from.
	add := func(from *url.URL, ref string) {
		t.Helper()
		u, err := url.Parse(ref)
		if err != nil || u.Scheme != "" || u.Host != "" || !(strings.HasPrefix(ref, "./") || strings.HasPrefix(ref, "../") ||
			(from == base && !strings.HasPrefix(ref, "/"))) {
			t.Errorf("%s loads the module %q; want a URL relative to it", from, ref)
			return
		}
		u = from.ResolveReference(u)
		if u.Scheme != base.Scheme || u.Host != base.Host {
			t.Errorf("%s loads %s from another origin", from, u)
			return
		}
		if !seen[u.String()] {
			seen[u.String()] = true
			queue = append(queue, u)
		}
	}
	scripts := scriptTag.FindAllStringSubmatch(html, -1)
	if len(scripts) == 0 || strings.Count(strings.ToLower(html), "<script") != len(scripts) {
		t.Fatalf("the page has %d whole script elements, of %d", len(scripts), strings.Count(strings.ToLower(html), "<script"))
	}
	for _, s := range scripts {
		attrs, content := s[1], s[2]
		if !strings.Contains(attrs, `type="module"`) {
			t.Errorf("script %s is not a module", attrs)
		}
		if strings.TrimSpace(content) != "" {
			t.Errorf("the page has an inline script: %q", content)
		}
		src := regexp.MustCompile(`\bsrc="([^"]*)"`).FindStringSubmatch(attrs)
		if src == nil {
			t.Errorf("script %s has no src", attrs)
			continue
		}
		add(base, src[1])
	}

	var names []string
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		resp, body := get(t, u.String())
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", u, resp.Status)
			continue
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
			t.Errorf("%s served as %q; modules must be JavaScript", u, ct)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("%s served with Content-Security-Policy %q", u, csp)
		}
		if m := unsafeDOM.FindString(body); m != "" {
			t.Errorf("%s uses %q", u, m)
		}
		if m := dynamicImport.FindString(body); m != "" {
			t.Errorf("%s imports dynamically: %q", u, m)
		}
		for _, m := range moduleImport.FindAllStringSubmatch(body, -1) {
			add(u, m[1])
		}
		names = append(names, path.Base(u.Path))
	}
	slices.Sort(names)
	return names
}
