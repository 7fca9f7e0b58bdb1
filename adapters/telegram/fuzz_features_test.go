package telegram

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heraldbot/herald/platform"
)

// FuzzCallParams decodes arbitrary parameters of a method call: never a
// panic; an object's members all become parameters (but nulls), each
// JSON string as the string and each other value as JSON that decodes.
func FuzzCallParams(f *testing.F) {
	for _, s := range []string{`{"chat_id":5,"text":"hi","reply_markup":{"inline_keyboard":[]},"x":null}`, `{}`, `null`, ``, `[]`, `"s"`, `{"a":"\u00e9"}`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		params, err := callParams(raw)
		if err != nil {
			if params != nil {
				t.Fatalf("params %v with error %v", params, err)
			}
			return
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			if len(params) != 0 {
				t.Fatalf("params %v from %q", params, raw)
			}
			return
		}
		for k, v := range fields {
			got, ok := params[k]
			var s string
			switch {
			case string(v) == "null":
				if ok {
					t.Fatalf("null %s sent as %q", k, got)
				}
			case json.Unmarshal(v, &s) == nil:
				if got != s {
					t.Fatalf("%s = %q; want the string %q", k, got, s)
				}
			case !json.Valid([]byte(got)):
				t.Fatalf("%s = %q: not JSON", k, got)
			}
		}
	})
}

// FuzzShownText cuts arbitrary streamed texts for a draft or an edit:
// the result is a prefix of the text, valid UTF-8 when the text is, at
// most one message long, and, in HTML and Markdown, has no element open.
func FuzzShownText(f *testing.F) {
	for _, s := range []string{"<b>bo", "<b>bold</b> and <i>it", "*bo", "`code` and ```pre", "[link](http", "&amp", "plain 😀 text", strings.Repeat("<b>x</b>", 1000)} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
	}
	modes := []platform.ParseMode{platform.ParsePlain, platform.ParseHTML, platform.ParseMarkdown}
	f.Fuzz(func(t *testing.T, text string, m uint8) {
		mode := modes[int(m)%len(modes)]
		got := shownText(text, mode)
		if !strings.HasPrefix(text, got) {
			t.Fatalf("%q is not a prefix of %q", got, text)
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("%q cut inside a character", got)
		}
		if n := utf16Len(got); n > maxTextUnits {
			t.Fatalf("%d characters", n)
		}
		if mode != platform.ParsePlain && got != "" {
			if class := markupState(got, mode); class[len(got)] != cutFree {
				t.Fatalf("%q (%s) ends with markup open", got, mode)
			}
		}
	})
}
