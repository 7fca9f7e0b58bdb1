package telegramtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
)

// memoryURL is the URL of a server made [InMemory]; no resolver knows the
// host, so only [Server.Client] reaches it.
const memoryURL = "http://telegramtest.invalid"

// InMemory makes [NewServer] open no socket: the server answers only the
// requests of the *http.Client its [Server.Client] returns, on the
// goroutine that makes each request, and its URL is
// "http://telegramtest.invalid". Everything else works as with a listening
// server. It is for tests in fake time: a socket is never durably blocking
// in a testing/synctest bubble, so time there would not move while a bot
// waits on one. Create the server inside the bubble, where its timers
// (long polls, [Fault] Delay, [Server.FloodWait]) then follow the bubble's
// clock, and close it there.
func InMemory() Option {
	return optionFunc(func(s *Server) { s.inMemory = true })
}

// Client returns an *http.Client that reaches the server: for a server
// made [InMemory] the only way to, and for a listening one a client
// configured for it like httptest.Server.Client. Point a bot at both
// Client and [Server.Endpoint] (for Herald's adapter, Config.HTTPClient
// and Config.APIEndpoint).
func (s *Server) Client() *http.Client {
	if s.ts != nil {
		return s.ts.Client()
	}
	return &http.Client{Transport: memoryTransport{s}}
}

// ErrReset is what a request through [Server.Client] of a server made
// [InMemory] fails with (wrapped) when a [Fault] with Reset or Drop hangs
// up on it, as a listening server resets the connection.
var ErrReset = errors.New("telegramtest: connection reset by peer")

// memoryTransport serves each request with the server's handler on the
// caller's goroutine.
type memoryTransport struct{ s *Server }

// RoundTrip serves req. It fails with the request context's error once
// that ended (the handler of a long poll then returns without answering),
// with [ErrClosed] after [Server.Close], as a dial of a closed server
// fails, and with [ErrReset] when a fault hangs up. It reports its
// progress to the request's httptrace.ClientTrace as a network transport
// does: GetConn when it starts, WroteRequest once it has read the whole
// body, before the handler runs; a request that fails before
// WroteRequest surely did not reach the server.
func (t memoryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := t.s
	defer func() {
		if req.Body != nil {
			_ = req.Body.Close()
		}
	}()
	trace := httptrace.ContextClientTrace(req.Context())
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(req.URL.Host)
	}
	s.mu.Lock() // orders Add with Close's Wait: no Add after Close began
	select {
	case <-s.closed:
		s.mu.Unlock()
		return nil, fmt.Errorf("telegramtest: %s %s: %w", req.Method, req.URL.Path, ErrClosed)
	default:
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	body := []byte{}
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, fmt.Errorf("telegramtest: %s %s: reading the body: %w", req.Method, req.URL.Path, err)
		}
	}
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}

	r := req.Clone(req.Context()) // the handler parses into r, not req
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.RequestURI = r.URL.RequestURI()
	r.RemoteAddr = "in-memory"
	rec := httptest.NewRecorder()
	if s.serve(rec, r) {
		return nil, fmt.Errorf("telegramtest: %s %s: %w", req.Method, req.URL.Path, ErrReset)
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
