package webchat

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"
)

// guard holds the adapter's checks of where a request comes from: the Host
// check against DNS rebinding and the WebSocket's Origin check. It is
// built once by New and never changes.
type guard struct {
	anyOrigin bool            // AllowedOrigins has "*"
	origins   map[string]bool // AllowedOrigins, normalised
	hosts     map[string]bool // the host names of AllowedOrigins, lower case
}

// newGuard builds the checks for origins, already normalised by
// normalizeOrigin.
func newGuard(origins []string) *guard {
	g := &guard{origins: make(map[string]bool), hosts: make(map[string]bool)}
	for _, o := range origins {
		if o == "*" {
			g.anyOrigin = true
			continue
		}
		g.origins[o] = true
		if u, err := url.Parse(o); err == nil {
			g.hosts[strings.ToLower(u.Hostname())] = true
		}
	}
	return g
}

// hostGuard refuses, with 403 Forbidden, a request that reached the
// adapter on a loopback address but names a Host that is not a loopback
// one (see allowedHost): after DNS rebinding, a page of another site sends
// its own host name to this machine's loopback port, and a same-origin
// check alone would accept it, since Origin and Host then agree.
func (a *Adapter) hostGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if onLoopback(r) && !a.guard.allowedHost(r.Host) {
			a.rlog.Warn("webchat: request refused: Host is not a loopback name (DNS rebinding?); "+
				"list the origin in Config.AllowedOrigins if it is yours",
				zap.String("host", r.Host), zap.String("remote", r.RemoteAddr), zap.String("path", r.URL.Path))
			http.Error(w, "webchat: Host not allowed on this loopback address", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// onLoopback reports whether r arrived on a loopback address of this
// machine, as it always does when Run listens on one (the default). A
// request whose local address is unknown (a handler called directly, not by
// an http.Server) is not checked.
func onLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// allowedHost reports whether a request on a loopback address may name
// host (the Host header, "name[:port]"): "localhost", a loopback IP
// address such as 127.0.0.1 or [::1] (which covers the listening address
// itself), or a host of Config.AllowedOrigins, with any port; anything
// when AllowedOrigins has "*". An IP address cannot be rebound, and a
// browser resolves localhost itself, so only names the owner listed are
// trusted.
func (g *guard) allowedHost(host string) bool {
	if g.anyOrigin {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"))
	if name == "" {
		return false
	}
	if name == "localhost" || g.hosts[name] {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// checkOrigin accepts WebSocket requests without an Origin header (not from
// a browser), from the page's own origin, and from Config.AllowedOrigins.
func (a *Adapter) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || a.guard.anyOrigin || a.guard.origins[strings.ToLower(origin)] {
		return true
	}
	u, err := parseOrigin(origin)
	return err == nil && strings.EqualFold(u, r.Host)
}

// parseOrigin returns the host[:port] of an Origin header value.
func parseOrigin(origin string) (string, error) {
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@") {
		return "", fmt.Errorf("webchat: malformed origin %q", origin)
	}
	return rest, nil
}
