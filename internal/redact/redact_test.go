package redact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldbot/herald/internal/redact"
)

// Every form of a token is replaced: as it is, escaped, quoted, and its
// secret part alone when it is long enough.
func TestRedactForms(t *testing.T) {
	const token = "123:AB/C d"
	for _, s := range []string{
		"http://x/bot123:AB/C d/getMe",
		"http://x/bot123:AB%2FC%20d/getMe",
		"http://x/?t=123%3AAB%2FC+d",
	} {
		if got := redact.New(token).String(s); strings.Contains(got, "AB") || !strings.Contains(got, redact.Placeholder) {
			t.Errorf("redact(%q) = %q", s, got)
		}
	}
	// Escaped forms, as errors print URLs and strings: Go quoting (%q
	// turns a control character into \x7f), JSON, and percent escapes with
	// lower-case hex digits.
	const odd = "123:abc\x7fSECRET\"é"
	for _, s := range []string{
		fmt.Sprintf("parse %q: net/url: invalid control character in URL", "http://x/bot"+odd+"/getMe"),
		fmt.Sprintf("%+q", odd),
		string(must(json.Marshal(map[string]string{"url": "http://x/bot" + odd}))),
		"http://x/bot123%3aabc%7fSECRET%22%c3%a9/getMe",
	} {
		if got := redact.New(odd).String(s); strings.Contains(got, "SECRET") || !strings.Contains(got, redact.Placeholder) {
			t.Errorf("redact(%q) = %q", s, got)
		}
	}
	// A valid token's secret part is redacted on its own, whatever became
	// of the colon.
	const valid = "123456:AAE-x_yz0123"
	if got := redact.New(valid).String("bot123456\\u003aAAE-x_yz0123/getMe"); strings.Contains(got, "AAE") {
		t.Errorf("secret part kept: %q", got)
	}
	// A short secret is not: it would mangle ordinary words.
	if got := redact.New("1:x").String("taxi x"); got != "taxi x" {
		t.Errorf("short secret redacted on its own: %q", got)
	}
	if redact.New("").String("abc") != "abc" {
		t.Error("empty token changed the text")
	}
	err := redact.New(token).Error(errors.New("oops 123:AB/C d"))
	if err.Error() != "oops REDACTED" {
		t.Errorf("Error = %q", err)
	}
}

// URLs lose their secrets wherever they are, and errors keep their kinds.
func TestRedactURLs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ws://127.0.0.1:6700/", "ws://127.0.0.1:6700/"},
		{"ws://h/?access_token=abc", "ws://h/?access_token=REDACTED"},
		{"ws://h/p?x=1&Access_Token=abc&y=2", "ws://h/p?x=1&Access_Token=REDACTED&y=2"},
		{"ws://h/?a=1;api_key=k#token=t", "ws://h/?a=1;api_key=REDACTED#token=REDACTED"},
		{"ws://h/?access%5Ftoken=abc", "ws://h/?access%5Ftoken=REDACTED"},
		{"ws://h/?access_token=", "ws://h/?access_token="},
		{"ws://h/?flag&password=p", "ws://h/?flag&password=REDACTED"},
		{"ws://bot:pw@h/", "ws://bot:REDACTED@h/"},
		{"ws://bot@h/", "ws://bot@h/"},
		{"ws://bot:p@w@h:1/?q=1", "ws://bot:REDACTED@h:1/?q=1"},
		{"h:6700/?access_token=abc", "h:6700/?access_token=REDACTED"},
	} {
		if got := redact.URL(tc.in); got != tc.want {
			t.Errorf("redact.URL(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
	r := redact.New("tok en", "ws://h/?access_token=q%2Bv")
	for _, tc := range []struct{ in, want string }{
		{`proxy "http://u:pw@proxy:3128" refused`, `proxy "http://u:REDACTED@proxy:3128" refused`},
		{"the token is tok en, tok+en or tok%20en", "the token is REDACTED, REDACTED or REDACTED"},
		{"value q+v and q%2Bv", "value REDACTED and REDACTED"},
		{"nothing secret", "nothing secret"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("text(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
	orig := fmt.Errorf("dial: tok en: %w", context.Canceled)
	err := r.Error(orig)
	if err.Error() != "dial: REDACTED: context canceled" || !errors.Is(err, context.Canceled) || errors.Unwrap(err) != nil {
		t.Errorf("err(%v) = %v (unwraps to %v); want the text redacted, still a context.Canceled, not unwrapping", orig, err, errors.Unwrap(err))
	}
	if plain := errors.New("plain"); r.Error(plain) != plain {
		t.Error("an error with no secret was replaced")
	}
}

// URLError keeps a *url.Error for errors.As, with its URL redacted.
func TestURLError(t *testing.T) {
	const token = "123456:AAE-x_yz0123"
	err := redact.New(token).URLError(fmt.Errorf("send: %w", &url.Error{Op: "Post", URL: "https://api/bot" + token + "/x", Err: context.DeadlineExceeded}))
	var ue *url.Error
	if !errors.As(err, &ue) || strings.Contains(err.Error(), "AAE") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("URLError = %v", err)
	}
	if plain := errors.New("plain"); redact.New(token).URLError(plain) != plain {
		t.Fatal("an error without a URL was replaced")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
