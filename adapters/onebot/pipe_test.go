package onebot

import (
	"net/http"
	"testing"

	"github.com/heraldbot/herald/internal/pipehttp"
)

// Tests of timing (keep-alive, action timeouts, reconnect backoff) run in a
// synctest bubble on fake time. Real sockets are not durably blocking, so
// in those tests the adapter and the fake implementation talk over
// net.Pipe, an in-memory connection whose deadlines follow the bubble's
// clock: pipeServer serves HTTP requests that arrive on pipes with a
// handler, as an http.Server would.

// newPipeServer returns a pipe server for h whose goroutines the test
// waits for at cleanup.
func newPipeServer(t *testing.T, h http.Handler) *pipehttp.Server {
	s := pipehttp.NewServer(h)
	t.Cleanup(s.Wait)
	return s
}

// pipeConnect connects a fake implementation to the adapter's reverse
// endpoint over a pipe, as bot selfID, and waits until the adapter has
// registered it.
func (h *harness) pipeConnect(s *pipehttp.Server, selfID int64, o peerOpts) *peer {
	h.t.Helper()
	hdr := http.Header{"X-Self-ID": {itoa(selfID)}, "X-Client-Role": {"Universal"}}
	ws, _, err := s.Dialer().Dial("ws://onebot.test"+DefaultPath, hdr)
	if err != nil {
		h.t.Fatalf("dial over a pipe: %v", err)
	}
	p := newPeer(h.t, ws, o)
	h.waitBot(selfID)
	return p
}
