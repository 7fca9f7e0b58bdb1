package httpserve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// start serves h with lim on a loopback port and returns its address.
func start(t *testing.T, lim Limits, h http.Handler) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(h, lim, nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if s.HTTP.Shutdown(ctx) != nil {
			s.HTTP.Close()
		}
		<-done
	})
	return s, ln.Addr().String()
}

// serving reports whether a connection of s has a request in progress.
func (s *Server) serving() bool {
	s.ln.mu.Lock()
	defer s.ln.mu.Unlock()
	for c := range s.ln.conns {
		if c.active {
			return true
		}
	}
	return false
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "ok")
})

// get makes one request on a fresh connection and returns the body.
func get(t *testing.T, addr string) (string, error) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestIdleFloodDoesNotShutOut holds the server's whole cap of connections
// open, idle after a request or never sending one, and checks that real
// requests still get answered, the cap is never exceeded, and the idle
// connections are the ones closed.
func TestIdleFloodDoesNotShutOut(t *testing.T) {
	const max = 20
	s, addr := start(t, Limits{MaxConns: max, IdleTimeout: time.Hour, ReadHeaderTimeout: time.Hour}, okHandler)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := range 3 * max {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
		if i%2 == 0 {
			// A keep-alive request, then silence.
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	for range 10 {
		body, err := get(t, addr)
		if err != nil || body != "ok" {
			t.Fatalf("request during an idle flood: %q, %v", body, err)
		}
		if n := s.Open(); n > max {
			t.Fatalf("%d connections open; cap %d", n, max)
		}
	}
	if s.Evicted() == 0 {
		t.Fatal("no idle connection was evicted")
	}
}

// TestBusyConnectionsAreNotEvicted: at the cap with every connection in a
// request, a newcomer is refused rather than a request cut.
func TestBusyConnectionsAreNotEvicted(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "done")
	})
	_, addr := start(t, Limits{MaxConns: 2}, h)
	results := make(chan string, 2)
	for range 2 {
		go func() {
			body, err := get(t, addr)
			if err != nil {
				body = err.Error()
			}
			results <- body
		}()
	}
	<-started
	<-started
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection over the cap was served")
	}
	close(release)
	for range 2 {
		if got := <-results; got != "done" {
			t.Fatalf("busy request: %q", got)
		}
	}
}

// TestSlowHeaderIsCut: a client that never finishes its header is closed
// after ReadHeaderTimeout.
func TestSlowHeaderIsCut(t *testing.T) {
	_, addr := start(t, Limits{ReadHeaderTimeout: 200 * time.Millisecond}, okHandler)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(c)
	if strings.Contains(string(b), "200 OK") {
		t.Fatalf("half a header was answered: %q", b)
	}
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); err != nil && asNetTimeout(err, &ne) {
		t.Fatal("the server kept the connection open past ReadHeaderTimeout")
	}
}

func asNetTimeout(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	if ok {
		*ne = e
	}
	return ok && e.Timeout()
}

func TestLimitsDefaults(t *testing.T) {
	got := Limits{}.normalized()
	want := Limits{ReadHeaderTimeout: DefaultReadHeaderTimeout, ReadTimeout: DefaultReadTimeout,
		IdleTimeout: DefaultIdleTimeout, MaxConns: DefaultMaxConns}
	if got != want {
		t.Fatalf("defaults = %+v; want %+v", got, want)
	}
	off := Limits{ReadHeaderTimeout: -1, ReadTimeout: -1, IdleTimeout: -1, MaxConns: -1, WriteTimeout: -1}.normalized()
	if off != (Limits{}) {
		t.Fatalf("negative = %+v; want all off", off)
	}
}

// TestShutdownClosesUnusedConnections: a connection that never sent a
// request (a browser's spare one) does not hold Shutdown, which net/http
// otherwise waits 5 s on; the one serving a request is let finish.
func TestShutdownClosesUnusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = io.WriteString(w, "ok")
	}), Limits{}, nil)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()

	spare, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	busy, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := io.WriteString(busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); s.Open() != 2 || !s.serving(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, a request in progress: %v; want 2 and true", s.Open(), s.serving())
		}
	}

	// Shutdown's own wait for a connection that sent nothing is 5 s: with
	// it, this context ends first.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.HTTP.Shutdown(ctx) }()
	if err := spare.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := spare.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the unused connection: read %d bytes, %v; want it closed (EOF)", n, err)
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the request in progress: %v; want its answer", err)
	}
	resp.Body.Close()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown = %v; want nil, before its context's end", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve = %v; want http.ErrServerClosed", err)
	}
}

// TestUnreadBodyClosesAtOnce: a request whose body the handler does not
// read (refused for a wrong secret) is answered at once and its
// connection closed, though its client sends the body a byte at a time —
// net/http would read the rest first, and a few hundred such clients, each
// holding a busy connection the cap never closes, shut the real ones out.
// A body read to its end keeps the connection for the next request.
func TestUnreadBodyClosesAtOnce(t *testing.T) {
	refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/read" {
			okHandler(w, r)
			return
		}
		http.Error(w, "wrong secret", http.StatusForbidden)
	})
	s, addr := start(t, Limits{MaxConns: 4}, refuse)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nab"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // the server's ReadTimeout is 30 s
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("the answer to a request whose body comes slowly: %v after %q", err, b)
	}
	if got := string(b); !strings.Contains(got, "403 Forbidden") || !strings.Contains(got, "Connection: close") {
		t.Fatalf("answer %q; want a 403 that closes the connection", got)
	}
	waitUntil(t, func() bool { return s.Open() == 0 })

	// A body read to its end: the connection stays for the next request.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	br := bufio.NewReader(c2)
	for i := range 2 {
		if _, err := io.WriteString(c2, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on one connection: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			t.Fatalf("request %d: a request whose body was read closed its connection", i)
		}
	}
}

// waitUntil waits, up to 10 s, for cond.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockedBuffer is a bytes.Buffer for a logger written from the server's
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestCapLogged: a connection closed at the cap — an idle one closed to
// make room, a newcomer refused — is told to the server's error log (a
// flood, most likely), which its owner limits in rate.
func TestCapLogged(t *testing.T) {
	var logged lockedBuffer
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(h, Limits{MaxConns: 1}, log.New(&logged, "", 0))
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ln) }()
	defer func() {
		close(release)
		_ = s.HTTP.Close()
		<-done
	}()
	addr := ln.Addr().String()

	idle, err := net.Dial("tcp", addr) // sends nothing: idle
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	waitUntil(t, func() bool { return s.Open() == 1 })
	busy, err := net.Dial("tcp", addr) // the idle one makes room for it
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := io.WriteString(busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	refused, err := net.Dial("tcp", addr) // nothing to make room with
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	waitUntil(t, func() bool {
		out := logged.String()
		return strings.Contains(out, "closed to make room") && strings.Contains(out, "refused")
	})
}

// TestStuckWriterMakesRoom: a client that sends a request and takes none
// of its answer holds a busy connection; at the cap, once the server's
// write to it has been blocked for a while, it is closed to make room, as
// an idle one is, rather than refusing every newcomer until WriteTimeout.
func TestStuckWriterMakesRoom(t *testing.T) {
	big := strings.Repeat("x", 64<<20) // more than the kernel's buffers hold
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			_, _ = io.WriteString(w, big)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	s, addr := start(t, Limits{MaxConns: 1}, h)
	stuck, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if tc, ok := stuck.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(1024)
	}
	if _, err := io.WriteString(stuck, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, s.serving)
	var body string
	waitUntil(t, func() bool { // refused until the write has been stuck stuckWrite
		body, err = get(t, addr)
		return err == nil
	})
	if body != "ok" {
		t.Fatalf("the newcomer got %q", body)
	}
}

// TestHijackedKeepsItsReads: a handler that takes over the connection of
// a request whose body it has not read owns it: no read deadline is set
// on it when the handler returns.
func TestHijackedKeepsItsReads(t *testing.T) {
	got := make(chan string, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			got <- "hijack: " + err.Error()
			return
		}
		go func() { // reads after the handler returned
			defer c.Close()
			time.Sleep(50 * time.Millisecond)
			b := make([]byte, 5)
			if _, err := io.ReadFull(rw, b); err != nil {
				got <- "read: " + err.Error()
				return
			}
			got <- string(b)
		}()
	})
	_, addr := start(t, Limits{}, h)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the handler returned
	if _, err := io.WriteString(c, "hello"); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "hello" {
		t.Fatalf("the hijacked connection read %q; want hello", s)
	}
}
