package webchat

import (
	"mime"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Bounds of the files sent to tabs by reference.
const (
	// fileFetchSlots bounds the files being sent to tabs at once; a
	// fetch waits at most WriteTimeout for a slot, then gets 503.
	fileFetchSlots = 16
	// fileFetchTime bounds the sending of one file.
	fileFetchTime = 2 * time.Minute
)

// fileCSP is the Content-Security-Policy of a file sent to a tab: should
// the browser show it as a page (it never should: see serveFile), it runs
// no script and loads nothing, sandboxed in an origin of its own.
const fileCSP = "default-src 'none'; sandbox"

// serveFile sends a tab a file of its chat by reference: GET
// file/ID?k=KEY, where ID is the reference a message's attachment
// carries and KEY the file_key of the tab's history frame. It answers
// 404 Not Found, the same for every case so that it tells an attacker
// nothing, unless KEY is the key of a tab open now and ID names a file
// kept for that tab's chat: a reference works only for the tabs of its
// chat, and only while one is open, and a key dies with its tab's
// connection (a reconnected tab gets a new one with its history). Both
// are 128 random bits. The file goes with the type the page shows it by
// if that is an image, video or audio type (but not SVG), else as an
// octet stream to be saved ("attachment"), never as anything a browser
// would run; with nosniff, a sandboxing Content-Security-Policy, and a
// Cross-Origin-Resource-Policy that keeps other sites' pages from
// embedding it. Range requests (a video's seek) and conditional ones are
// answered (http.ServeContent).
//
// At most fileFetchSlots files are sent at once; a request waits at most
// WriteTimeout for its turn, else gets 503 Service Unavailable. Each
// piece of 32 KiB must be taken within WriteTimeout and the whole within
// fileFetchTime, so a tab that stops reading cannot hold a slot, or keep
// a forgotten file's memory, for long.
func (a *Adapter) serveFile(w http.ResponseWriter, r *http.Request) {
	id, key := r.PathValue("id"), r.URL.Query().Get("k")
	if !validKey(id) || !validKey(key) {
		a.fileNotFound(w, r)
		return
	}
	a.mu.Lock()
	chat := ""
	if c := a.fileKeys[key]; c != nil && c.chat != nil {
		chat = c.chat.chat.ID
	}
	a.mu.Unlock()
	if chat == "" {
		a.fileNotFound(w, r)
		return
	}

	t := time.NewTimer(a.cfg.WriteTimeout)
	select {
	case a.fetches <- struct{}{}:
		t.Stop()
		defer func() { <-a.fetches }()
	case <-t.C:
		a.rlog.Warn("webchat: file request refused: too many files being sent to tabs",
			zap.Int("max", fileFetchSlots), zap.String("remote", r.RemoteAddr))
		w.Header().Set("Retry-After", "1")
		http.Error(w, "webchat: too many files being sent; try again", http.StatusServiceUnavailable)
		return
	case <-r.Context().Done():
		t.Stop()
		return
	}
	f, ref, ok := a.files.open(id, chat)
	if !ok {
		a.fileNotFound(w, r)
		return
	}
	defer a.files.unpin(f)

	ctype, disposition := "application/octet-stream", "attachment"
	if shownInline(ref.mime) {
		ctype, disposition = ref.mime, "inline"
	}
	if ref.fileName != "" {
		if d := mime.FormatMediaType(disposition, map[string]string{"filename": ref.fileName}); d != "" {
			disposition = d
		}
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", disposition)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", fileCSP)
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Referrer-Policy", "no-referrer")
	// The URL holds the tab's key, so it is the tab's own; its content
	// never changes.
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("ETag", `"`+id+`"`)
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), each: a.cfg.WriteTimeout,
		end: time.Now().Add(fileFetchTime)}
	http.ServeContent(dw, r, "", time.Time{}, f.content())
}

// fileNotFound answers a file request the adapter refuses, and logs it,
// rate-limited.
func (a *Adapter) fileNotFound(w http.ResponseWriter, r *http.Request) {
	a.rlog.Debug("webchat: file request refused: no such file for an open tab of its chat",
		zap.String("remote", r.RemoteAddr))
	http.Error(w, "webchat: no such file", http.StatusNotFound)
}

// validKey reports whether s can be a file reference or a tab's file key:
// what randomID makes, 26 characters of base32.
func validKey(s string) bool {
	if len(s) != 26 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// shownInline reports whether a file of media type mt may be sent as
// that type, for the page to show: images other than SVG (which can hold
// script), videos and audio.
func shownInline(mt string) bool {
	switch {
	case mt == "image/svg+xml":
		return false
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "video/"), strings.HasPrefix(mt, "audio/"):
		return !strings.ContainsAny(mt, ";, ")
	}
	return false
}

// deadlineWriter writes a response in pieces of at most writeChunk
// bytes, each within each (its own write deadline) and all before end,
// where the server allows it (http.ResponseController); with a server
// that does not, its own timeouts apply.
type deadlineWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	each time.Duration
	end  time.Time
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), writeChunk)
		d := time.Now().Add(w.each)
		if w.end.Before(d) {
			d = w.end
		}
		_ = w.rc.SetWriteDeadline(d) // http.ErrNotSupported: the server's own bounds
		m, err := w.ResponseWriter.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// Unwrap returns the ResponseWriter, for http.ResponseController.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
