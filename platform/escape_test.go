package platform_test

import (
	"fmt"
	"testing"

	"github.com/heraldbot/herald/platform"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, md, html string }{
		{"plain text. ok!", "plain text. ok!", "plain text. ok!"},
		{"snake_case *bold* `code` [link](x)", `snake\_case \*bold\* \` + "`code\\`" + ` \[link](x)`, "snake_case *bold* `code` [link](x)"},
		{`a\b`, `a\b`, `a\b`},
		{`<b>"Tom" & 'Jerry'</b>`, `<b>"Tom" & 'Jerry'</b>`, "&lt;b&gt;&#34;Tom&#34; &amp; &#39;Jerry&#39;&lt;/b&gt;"},
		{"", "", ""},
	} {
		if got := platform.EscapeMarkdown(tc.in); got != tc.md {
			t.Errorf("EscapeMarkdown(%q) = %q; want %q", tc.in, got, tc.md)
		}
		if got := platform.EscapeHTML(tc.in); got != tc.html {
			t.Errorf("EscapeHTML(%q) = %q; want %q", tc.in, got, tc.html)
		}
	}
}

func FuzzEscapeMarkdown(f *testing.F) {
	f.Add("snake_case *x* `y` [z]")
	f.Fuzz(func(t *testing.T, s string) {
		out := platform.EscapeMarkdown(s)
		// Every markup character comes out after a backslash, and taking
		// those backslashes out gives s back.
		var back []byte
		for i := 0; i < len(out); i++ {
			switch c := out[i]; c {
			case '_', '*', '`', '[':
				if i == 0 || out[i-1] != '\\' {
					t.Fatalf("EscapeMarkdown(%q) = %q: %q at %d unescaped", s, out, c, i)
				}
				back = append(back[:len(back)-1], c)
			default:
				back = append(back, c)
			}
		}
		if string(back) != s {
			t.Fatalf("EscapeMarkdown(%q) = %q, which unescapes to %q", s, out, back)
		}
	})
}

func ExampleEscapeMarkdown() {
	name := "snake_case_fan"
	msg := platform.OutboundMessage{Text: "*Welcome*, " + platform.EscapeMarkdown(name), ParseMode: platform.ParseMarkdown}
	fmt.Println(msg.Text)
	// Output: *Welcome*, snake\_case\_fan
}
