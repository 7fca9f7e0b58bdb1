package webchat

import (
	"embed"
	"net/http"
	"path"
)

// static holds the chat page: plain HTML, CSS and JavaScript, with no
// build step and nothing loaded from other sites.
//
//go:embed static/index.html static/app.js static/style.css
var static embed.FS

// contentSecurityPolicy lets the page load only its own files, connect
// only to its own WebSocket, and show images from messages (by URL or as
// data URLs).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data: http: https:; connect-src 'self' ws: wss:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// newHandler builds the adapter's HTTP handler on a ServeMux of its own.
func (a *Adapter) newHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", staticFile("static/index.html", "text/html; charset=utf-8"))
	mux.Handle("GET /static/app.js", staticFile("static/app.js", "text/javascript; charset=utf-8"))
	mux.Handle("GET /static/style.css", staticFile("static/style.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /ws", a.serveWS)
	return mux
}

// staticFile serves one embedded file with the page's security headers.
// The files are part of the binary, so a missing one is a build error
// caught by the tests; it is answered with 500 rather than a panic.
func staticFile(name, contentType string) http.Handler {
	body, err := static.ReadFile(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			http.Error(w, "webchat: missing page file "+path.Base(name), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		w.Write(body)
	})
}
