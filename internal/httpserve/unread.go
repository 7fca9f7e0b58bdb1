package httpserve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// closeUnread makes the answer to an HTTP/1 request whose body its handler
// did not read to the end close the connection at once. net/http would
// otherwise read the rest of the body (up to 256 KiB, to keep the
// connection for a next request) after the answer: a client that sends
// its body a byte at a time — refused at once for a wrong secret, say —
// held a busy connection, which the cap never closes, until the read
// deadline, and a few hundred such clients shut every real one out.
func closeUnread(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 1 || r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		b := &eofBody{ReadCloser: r.Body}
		r.Body = b
		cw := &closingWriter{ResponseWriter: w, body: b}
		h.ServeHTTP(cw, r)
		if cw.hijacked {
			return // the connection is the handler's
		}
		cw.closeIfUnread() // the handler wrote nothing: net/http answers for it
		if !b.eof.Load() {
			// net/http reads what is left of the body even of an answer
			// that closes its connection (to look for its end): a read
			// deadline passed ends that at once.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
	})
}

// eofBody is a request body that knows whether it was read to its end.
type eofBody struct {
	io.ReadCloser
	eof atomic.Bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

// closingWriter asks for the connection's close when its answer begins
// while its request's body is not read to the end.
type closingWriter struct {
	http.ResponseWriter
	body     *eofBody
	started  bool
	hijacked bool
}

func (w *closingWriter) closeIfUnread() {
	if w.started {
		return
	}
	w.started = true
	if !w.body.eof.Load() {
		w.Header().Set("Connection", "close")
	}
}

func (w *closingWriter) WriteHeader(code int) {
	if code >= 200 { // not an informational answer (100 Continue)
		w.closeIfUnread()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *closingWriter) Write(p []byte) (int, error) {
	w.closeIfUnread()
	return w.ResponseWriter.Write(p)
}

// Flush flushes the answer, as http.Flusher.
func (w *closingWriter) Flush() { _ = w.FlushError() }

// FlushError flushes the answer and returns its error, for
// http.ResponseController.
func (w *closingWriter) FlushError() error {
	w.closeIfUnread()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection to the handler, as http.Hijacker: it is no
// longer the server's to close.
func (w *closingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

// Unwrap returns the ResponseWriter underneath, for http.ResponseController.
func (w *closingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
