// Package redact keeps secrets out of what Herald logs and returns: a
// Redactor replaces every form a secret may be printed in, and the secrets
// any URL in a text holds, with one placeholder. The adapters and the
// example bot share it, so a secret never shows, whatever the path it
// takes to a log line or an error.
package redact

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Placeholder replaces a secret.
const Placeholder = "REDACTED"

// minPart is the shortest secret part after a token's colon that a
// Redactor replaces on its own (see New).
const minPart = 8

// Redactor removes a configuration's secrets from text. The zero value and
// a nil *Redactor know no secret but still redact the secrets of URLs. It
// is safe for concurrent use.
type Redactor struct {
	secrets []string // longest first: every form a secret may be printed in
}

// New returns a Redactor for secrets (empty ones are skipped): each is
// replaced as it is; path- and query-escaped, with upper- or lower-case
// hex digits; quoted as Go (also ASCII-only) and JSON quote it; and, for a
// token of the form "id:secret" whose secret part has at least 8 bytes,
// that part alone, which catches any other escaping of the colon. A
// secret with "://" in it is a URL: what it holds is secret — its userinfo
// password and the values of its secret query parameters (see
// SecretParam) — not the URL itself.
func New(secrets ...string) *Redactor {
	var raw []string
	for _, s := range secrets {
		switch {
		case s == "":
		case strings.Contains(s, "://"):
			// A URL: the secrets it holds are, not the URL.
			scanURL(s, func(string) {}, func(p string) {
				if p != "" {
					raw = append(raw, p)
				}
			})
		default:
			raw = append(raw, s)
			if _, part, ok := strings.Cut(s, ":"); ok && len(part) >= minPart {
				raw = append(raw, part)
			}
		}
	}
	var all []string
	for _, s := range raw {
		all = append(all, s, url.PathEscape(s), url.QueryEscape(s), lowerHex(url.PathEscape(s)), lowerHex(url.QueryEscape(s)))
		if u, err := url.QueryUnescape(s); err == nil {
			all = append(all, u)
		}
		if u, err := url.PathUnescape(s); err == nil {
			all = append(all, u)
		}
	}
	for _, s := range slices.Clone(all) {
		all = append(all, strings.Trim(strconv.Quote(s), `"`), strings.Trim(strconv.QuoteToASCII(s), `"`))
		if j, err := json.Marshal(s); err == nil {
			all = append(all, strings.Trim(string(j), `"`))
		}
	}
	all = slices.DeleteFunc(all, func(s string) bool { return s == "" })
	slices.SortFunc(all, func(x, y string) int { return len(y) - len(x) })
	return &Redactor{secrets: slices.Compact(all)}
}

// String returns s with the secrets of every URL in it replaced (see URL)
// and every form of r's secrets replaced by Placeholder.
func (r *Redactor) String(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !isURLEnd(s[end]) {
			end++
		}
		b.WriteString(s[:start])
		b.WriteString(URL(s[start:end]))
		s = s[end:]
	}
	b.WriteString(s)
	out := b.String()
	if r != nil {
		for _, sec := range r.secrets {
			out = strings.ReplaceAll(out, sec, Placeholder)
		}
	}
	return out
}

// Error returns err itself when its text holds no secret, and otherwise an
// error whose text is err's redacted. That error matches what err matches
// with errors.Is and errors.As (context.Canceled, a platform's error kind),
// so callers still classify it; it does not unwrap to err, and what
// errors.As finds in it is err's own, which may hold a secret: do not print
// that.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if safe := r.String(msg); safe != msg {
		return &redactedError{msg: safe, err: err}
	}
	return err
}

// URLError returns err with the URL of the *url.Error it is or wraps
// redacted (http.Client's errors carry the whole request URL), as a new
// *url.Error whose Err is err's: callers still find it with errors.As and
// ask it Timeout; other errors are returned as they are.
func (r *Redactor) URLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: r.String(ue.URL), Err: ue.Err}
	}
	return err
}

// redactedError is an error whose text had a secret in it.
type redactedError struct {
	msg string
	err error // the original; never unwrapped, never printed
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the original error matches target.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

// As finds target in the original error.
func (e *redactedError) As(target any) bool { return errors.As(e.err, target) }

// SecretParam reports whether a URL query parameter named k holds a
// secret: its name holds "token", "secret", "pass", "auth", "key" or "sig",
// whatever the case and escaping.
func SecretParam(k string) bool {
	k = strings.ToLower(k)
	if u, err := url.QueryUnescape(k); err == nil {
		k = strings.ToLower(u)
	}
	for _, s := range []string{"token", "secret", "pass", "auth", "key", "sig"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// URL returns raw with the secrets it holds — a userinfo password, the
// values of secret query and fragment parameters — replaced by
// Placeholder, and otherwise unchanged. It works on a URL url.Parse
// refuses.
func URL(raw string) string {
	var b strings.Builder
	scanURL(raw, func(s string) { b.WriteString(s) }, func(s string) {
		if s != "" {
			b.WriteString(Placeholder)
		}
	})
	return b.String()
}

// scanURL walks raw as a URL, without parsing it (so that it works on a
// URL url.Parse refuses): it calls keep for each piece that holds no secret
// and secret for each that does (a userinfo password, the value of a
// secret query or fragment parameter), in order; the pieces make up raw.
func scanURL(raw string, keep, secret func(string)) {
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		keep(rest[:i+3])
		rest = rest[i+3:]
		auth := rest
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			auth = rest[:j]
		}
		if at := strings.LastIndex(auth, "@"); at >= 0 {
			user := auth[:at]
			if c := strings.Index(user, ":"); c >= 0 {
				keep(user[:c+1])
				secret(user[c+1:])
			} else {
				keep(user)
			}
			keep(auth[at:])
			rest = rest[len(auth):]
		}
	}
	q := strings.IndexAny(rest, "?#")
	if q < 0 {
		keep(rest)
		return
	}
	keep(rest[:q+1])
	rest = rest[q+1:]
	for rest != "" {
		part := rest
		sep := ""
		if j := strings.IndexAny(rest, "&;?#"); j >= 0 {
			part, sep = rest[:j], rest[j:j+1]
		}
		rest = rest[len(part)+len(sep):]
		if k, v, ok := strings.Cut(part, "="); ok && SecretParam(k) {
			keep(k + "=")
			secret(v)
		} else {
			keep(part)
		}
		keep(sep)
	}
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isURLEnd(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>' || c == 0x7f
}

// lowerHex returns s with the hex digits of its %XX escapes in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerASCII(b[i+1]), lowerASCII(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
