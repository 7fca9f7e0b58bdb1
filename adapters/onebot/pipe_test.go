package onebot

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"
)

// Tests of timing (keep-alive, action timeouts, reconnect backoff) run in a
// synctest bubble on fake time. Real sockets are not durably blocking, so
// in those tests the adapter and the fake implementation talk over
// net.Pipe, an in-memory connection whose deadlines follow the bubble's
// clock: pipeServer serves HTTP requests that arrive on pipes with a
// handler, as an http.Server would.

// pipeServer serves each pipe connection it hands out with h. Its
// goroutines end when their connections close; the test's cleanup waits
// for them.
type pipeServer struct {
	h     http.Handler
	wg    sync.WaitGroup
	dials atomic.Int64 // connections handed out
}

// newPipeServer returns a server for h whose goroutines the test waits for
// at cleanup.
func newPipeServer(t *testing.T, h http.Handler) *pipeServer {
	s := &pipeServer{h: h}
	t.Cleanup(s.wg.Wait)
	return s
}

// conn returns the client end of a new pipe whose server end serves one
// request with the handler.
func (s *pipeServer) conn() net.Conn {
	s.dials.Add(1)
	cli, srv := net.Pipe()
	s.wg.Go(func() {
		defer srv.Close()
		br := bufio.NewReader(srv)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		req.RemoteAddr = "pipe"
		s.h.ServeHTTP(&hijackWriter{conn: srv, brw: bufio.NewReadWriter(br, bufio.NewWriter(srv)), header: http.Header{}}, req)
	})
	return cli
}

// dialer returns a WebSocket dialer whose every dial reaches s.
func (s *pipeServer) dialer() *websocket.Dialer {
	return &websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) {
		return s.conn(), nil
	}}
}

// hijackWriter is the ResponseWriter of one piped request: it supports
// what a WebSocket upgrade needs (Hijack) and writes plain responses
// otherwise.
type hijackWriter struct {
	conn   net.Conn
	brw    *bufio.ReadWriter
	header http.Header
	wrote  bool
}

func (w *hijackWriter) Header() http.Header { return w.header }

func (w *hijackWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	fmt.Fprintf(w.conn, "HTTP/1.1 %d %s\r\nConnection: close\r\n", status, http.StatusText(status))
	w.header.Write(w.conn)
	fmt.Fprint(w.conn, "\r\n")
}

func (w *hijackWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.conn.Write(b)
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) { return w.conn, w.brw, nil }

// pipeConnect connects a fake implementation to the adapter's reverse
// endpoint over a pipe, as bot selfID, and waits until the adapter has
// registered it.
func (h *harness) pipeConnect(s *pipeServer, selfID int64, o peerOpts) *peer {
	h.t.Helper()
	hdr := http.Header{"X-Self-ID": {itoa(selfID)}, "X-Client-Role": {"Universal"}}
	ws, _, err := s.dialer().Dial("ws://onebot.test"+DefaultPath, hdr)
	if err != nil {
		h.t.Fatalf("dial over a pipe: %v", err)
	}
	p := newPeer(h.t, ws, o)
	h.waitBot(selfID)
	return p
}
