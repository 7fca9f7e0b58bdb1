// Package pipehttp serves HTTP requests that arrive on in-memory net.Pipe
// connections with an http.Handler, as an http.Server would, and dials
// WebSockets over such pipes. Herald's adapter tests use it to run
// WebSocket code inside a testing/synctest bubble: real sockets are not
// durably blocking, while a pipe's deadlines follow the bubble's clock.
package pipehttp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/gorilla/websocket"
)

// Server serves each pipe connection it hands out with its handler, one
// request per connection (enough for a WebSocket upgrade). Create it with
// NewServer; its methods are safe for concurrent use.
type Server struct {
	h  http.Handler
	wg sync.WaitGroup
}

// NewServer returns a Server for h.
func NewServer(h http.Handler) *Server { return &Server{h: h} }

// Conn returns the client end of a new pipe whose server end serves one
// request with the handler, on a goroutine that ends when the connection
// closes.
func (s *Server) Conn() net.Conn {
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

// Dialer returns a WebSocket dialer whose every dial reaches the server
// over a new pipe, whatever the URL's host.
func (s *Server) Dialer() *websocket.Dialer {
	return &websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) {
		return s.Conn(), nil
	}}
}

// Wait waits until the goroutines serving the connections have returned.
func (s *Server) Wait() { s.wg.Wait() }

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
