package onebot

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Secrets are kept out of everything the adapter logs and of every error it
// returns: the access token, a URL's userinfo password and its query
// parameters that name a secret (access_token, and any whose name holds
// "token", "secret", "pass", "auth", "key" or "sig"). The Authorization
// header is never printed.

// redacted replaces a secret.
const redacted = "REDACTED"

// secretParam reports whether a URL query parameter named k holds a
// secret.
func secretParam(k string) bool {
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
		if k, v, ok := strings.Cut(part, "="); ok && secretParam(k) {
			keep(k + "=")
			secret(v)
		} else {
			keep(part)
		}
		keep(sep)
	}
}

// redactURL returns raw with the secrets scanURL finds replaced by
// REDACTED, and otherwise unchanged.
func redactURL(raw string) string {
	var b strings.Builder
	scanURL(raw, func(s string) { b.WriteString(s) }, func(s string) {
		if s != "" {
			b.WriteString(redacted)
		}
	})
	return b.String()
}

// redactor removes a configuration's secrets from text.
type redactor struct {
	secrets []string // longest first; every form a secret may be printed in
}

// newRedactor returns a redactor for the access token and the secrets in
// the URL.
func newRedactor(token, rawURL string) *redactor {
	var raw []string
	if token != "" {
		raw = append(raw, token)
	}
	if rawURL != "" {
		scanURL(rawURL, func(string) {}, func(s string) {
			if s != "" {
				raw = append(raw, s)
			}
		})
	}
	var all []string
	for _, s := range raw {
		all = append(all, s, url.QueryEscape(s), url.PathEscape(s))
		if u, err := url.QueryUnescape(s); err == nil {
			all = append(all, u)
		}
		if u, err := url.PathUnescape(s); err == nil {
			all = append(all, u)
		}
	}
	for _, s := range slices.Clone(all) {
		q := strconv.Quote(s) // as %q prints it (url.Error does)
		all = append(all, q[1:len(q)-1])
	}
	all = slices.DeleteFunc(all, func(s string) bool { return s == "" })
	slices.SortFunc(all, func(x, y string) int { return len(y) - len(x) })
	return &redactor{secrets: slices.Compact(all)}
}

// text returns s with every URL in it redacted (see redactURL) and every
// known secret replaced by REDACTED.
func (r *redactor) text(s string) string {
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
		b.WriteString(redactURL(s[start:end]))
		s = s[end:]
	}
	b.WriteString(s)
	out := b.String()
	if r != nil {
		for _, sec := range r.secrets {
			out = strings.ReplaceAll(out, sec, redacted)
		}
	}
	return out
}

// url returns raw redacted for a log line or an error.
func (r *redactor) url(raw string) string { return r.text(redactURL(raw)) }

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isURLEnd(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>' || c == 0x7f
}

// err returns err itself when its text holds no secret, and otherwise an
// error with the secrets redacted from its text. That error still matches
// what err matches with errors.Is (context.Canceled, say), but does not
// unwrap to err, whose text would give the secret away.
func (r *redactor) err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if safe := r.text(msg); safe != msg {
		return &redactedError{msg: safe, err: err}
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
