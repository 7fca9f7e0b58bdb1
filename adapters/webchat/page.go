package webchat

import (
	"embed"
	"net/http"
	"path"
)

// static holds the chat page: plain HTML, CSS and JavaScript modules, with
// no build step and nothing loaded from other sites. index.html loads
// static/app.js as a module, which imports the others by relative URLs.
//
//go:embed static/index.html static/*.js static/*.css
var static embed.FS

// pageTypes maps the extensions of the files served under /static/ to
// their media types. Browsers run a module script only if it is served
// with a JavaScript type.
var pageTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// contentSecurityPolicy lets the page load only its own files (module
// scripts included, which 'self' allows only from the page's origin),
// connect only to its own WebSocket, and show images, videos and audio
// from messages (by URL or as data URLs). It allows no inline script and
// no eval.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data: http: https:; media-src 'self' data: http: https:; connect-src 'self' ws: wss:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// newHandler builds the adapter's HTTP handler on a ServeMux of its own:
// the page at "/", each embedded .js and .css file at "/static/NAME", the
// WebSocket at "/ws", and the files the page shows by reference at
// "/file/ID" (see serveFile).
func (a *Adapter) newHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", staticFile("static/index.html", "text/html; charset=utf-8"))
	files, _ := static.ReadDir("static") // embedded: cannot fail
	for _, f := range files {
		if ct, ok := pageTypes[path.Ext(f.Name())]; ok {
			mux.Handle("GET /static/"+f.Name(), staticFile("static/"+f.Name(), ct))
		}
	}
	mux.HandleFunc("GET /ws", a.serveWS)
	mux.HandleFunc("GET /file/{id}", a.serveFile)
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
