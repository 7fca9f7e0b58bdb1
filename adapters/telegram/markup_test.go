package telegram

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldbot/herald/platform"
)

func TestSplitTextMarkup(t *testing.T) {
	tests := []struct {
		name  string
		mode  platform.ParseMode
		s     string
		limit int
		want  []string
	}{
		// The old splitter cut after "bb " inside the bold element.
		{"HTML element kept whole", platform.ParseHTML, "aaa <b>bb cc</b> dd", 12, []string{"aaa ", "<b>bb cc</b>", " dd"}},
		{"HTML nested elements", platform.ParseHTML, "x <b>a <i>b</i> c</b> y z", 20, []string{"x ", "<b>a <i>b</i> c</b> ", "y z"}},
		{"HTML quoted > in a tag", platform.ParseHTML, `go <a href="x>y z">l</a> on`, 21, []string{"go ", `<a href="x>y z">l</a>`, " on"}},
		{"HTML quoted > does not end the tag", platform.ParseHTML, `<a href="x>y z">l</a>`, 12, []string{"<a ", `href="x>y `, `z">l</a>`}},
		{"HTML character references", platform.ParseHTML, "a &amp;&amp;&amp; b", 6, []string{"a ", "&amp;", "&amp;", "&amp; ", "b"}},
		{"HTML bare ampersand is text", platform.ParseHTML, "a & b c", 5, []string{"a & ", "b c"}},
		{"HTML line break outside beats one inside", platform.ParseHTML, "one\n<b>two\nthree</b>", 16, []string{"one\n", "<b>two\nthree</b>"}},
		{"HTML free place inside a word beats a space inside an element", platform.ParseHTML, "abcdef<b>g h</b>", 11, []string{"abcdef", "<b>g h</b>"}},
		// No place is free: the element is longer than the limit.
		{"HTML fallback: cut inside the element, between tags", platform.ParseHTML, "<b>aa bb cc</b>", 8, []string{"<b>aa ", "bb ", "cc</b>"}},
		{"HTML fallback: a tag longer than the limit", platform.ParseHTML, `<a href="https://e.x/">x</a>`, 10, []string{"<a ", `href="http`, `s://e.x/">`, "x</a>"}},
		{"plain text ignores markup", platform.ParsePlain, "aaa <b>bb cc</b> dd", 12, []string{"aaa <b>bb ", "cc</b> dd"}},

		{"Markdown bold kept whole", platform.ParseMarkdown, "plain *bold words here* end", 20, []string{"plain ", "*bold words here* ", "end"}},
		{"Markdown code", platform.ParseMarkdown, "run `go test ./...` now", 16, []string{"run ", "`go test ./...` ", "now"}},
		{"Markdown pre", platform.ParseMarkdown, "a\n```\nx y\n```\nb", 12, []string{"a\n", "```\nx y\n```\n", "b"}},
		{"Markdown link", platform.ParseMarkdown, "see [the docs](https://e.x/a_b) now", 28, []string{"see ", "[the docs](https://e.x/a_b) ", "now"}},
		{"Markdown escape not split", platform.ParseMarkdown, `ab\_cd`, 3, []string{"ab", `\_c`, "d"}},
		{"Markdown escaped star opens nothing", platform.ParseMarkdown, `a\* b c`, 5, []string{`a\* `, "b c"}},
		{"Markdown italic", platform.ParseMarkdown, "x _it al_ y z", 8, []string{"x ", "_it al_ ", "y z"}},
		{"Markdown fallback: entity over the limit", platform.ParseMarkdown, "*aa bb cc*", 6, []string{"*aa ", "bb cc*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitText(tt.s, tt.limit, tt.mode)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("splitText(%q, %d, %q) = %q; want %q", tt.s, tt.limit, tt.mode, got, tt.want)
			}
		})
	}
}

// htmlTokens matches, in Telegram's HTML, a tag (group 1: "/" for a
// closing one, group 2: the name) or a character reference.
var htmlTokens = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9-]*)(?:[^<>"']|"[^"]*"|'[^']*')*>|&(?:#[0-9]+|#x[0-9a-fA-F]+|[a-zA-Z]+);`)

// htmlWellFormed reports whether s is well-formed HTML as Telegram parses
// it: tags matched by name and properly nested, and no "<", ">" or "&"
// outside tags and character references. It shares no code with
// markupState, so the tests check one against the other.
func htmlWellFormed(s string) bool {
	var open []string
	rest := htmlTokens.ReplaceAllStringFunc(s, func(tok string) string {
		m := htmlTokens.FindStringSubmatch(tok)
		switch {
		case m[2] == "": // a character reference
		case m[1] == "":
			open = append(open, m[2])
		case len(open) > 0 && open[len(open)-1] == m[2]:
			open = open[:len(open)-1]
		default:
			open = append(open, "unmatched </"+m[2]+">")
		}
		return ""
	})
	return len(open) == 0 && !strings.ContainsAny(rest, "<>&")
}

// markdownEntities matches a legacy Markdown entity or escape.
var markdownEntities = regexp.MustCompile("```[\\s\\S]*?```|`[^`]*`|\\*[^*]*\\*|_[^_]*_|\\[[^\\]]*\\]\\([^)]*\\)|\\\\[_*`\\[]")

// markdownWellFormed reports whether s is well-formed legacy Markdown:
// once its entities and escapes are removed, no markup character is left.
func markdownWellFormed(s string) bool {
	return !strings.ContainsAny(markdownEntities.ReplaceAllString(s, ""), "*_`[")
}

// markupDoc builds a well-formed text in HTML (html) or legacy Markdown
// from the bytes of seed: words in several scripts, spaces and line
// breaks, elements or entities with words inside, character references or
// escapes. It returns the text and the length, in UTF-16 code units, of
// its longest atom: an element, entity, reference or escape, which a cut
// cannot split without breaking the markup, or a character (a word can be
// split).
func markupDoc(seed []byte, html bool) (string, int) {
	words := []string{"word", "привет", "😀", "日本語", "x", "a.b!", "(1)"}
	var b strings.Builder
	longest := 2 // a character outside the BMP is an atom too
	i := 0
	next := func() int {
		if i >= len(seed) {
			return 0
		}
		i++
		return int(seed[i-1])
	}
	inner := func() string {
		var ib strings.Builder
		for k := range 1 + next()%4 {
			if k > 0 {
				ib.WriteString([]string{" ", "\n", " "}[next()%3])
			}
			ib.WriteString(words[next()%len(words)])
		}
		return ib.String()
	}
	atom := func(s string) {
		b.WriteString(s)
		longest = max(longest, utf16Len(s))
	}
	for i < len(seed) {
		switch c := next(); c % 8 {
		case 0, 1, 2:
			b.WriteString(words[next()%len(words)])
		case 3:
			b.WriteString([]string{" ", "\n", "\t"}[next()%3])
		case 4, 5:
			if html {
				tags := []string{"b", "i", "u", "s", "tg-spoiler", "code"}
				t := tags[next()%len(tags)]
				atom("<" + t + ">" + inner() + "</" + t + ">")
			} else {
				marks := []string{"*", "_", "`"}
				m := marks[next()%len(marks)]
				atom(m + inner() + m)
			}
		case 6:
			if html {
				switch next() % 3 {
				case 0:
					atom(`<a href="https://example.com/?a=1&amp;b=2">` + inner() + "</a>")
				case 1:
					atom(`<pre><code class="language-go">` + inner() + "</code></pre>")
				default:
					atom("<b>" + inner() + " <i>" + inner() + "</i></b>")
				}
			} else if next()%2 == 0 {
				atom("[" + inner() + "](https://example.com/a_b*c)")
			} else {
				atom("```\n" + inner() + "\n```")
			}
		case 7:
			if html {
				atom([]string{"&lt;", "&gt;", "&amp;", "&quot;", "&#128512;", "&#x1F600;"}[next()%6])
			} else {
				atom([]string{`\_`, `\*`, "\\`", `\[`}[next()%4])
			}
		}
	}
	return b.String(), longest
}

// FuzzSplitMarkup splits well-formed HTML and Markdown texts: when no atom
// of markup is longer than the limit, every part is well-formed on its
// own, so Telegram accepts each one.
func FuzzSplitMarkup(f *testing.F) {
	f.Add([]byte("\x04\x01\x02\x03\x00\x06\x02\x01\x07\x03"), 30, true)
	f.Add([]byte("\x04\x01\x02\x03\x00\x06\x02\x01\x07\x03"), 30, false)
	f.Add([]byte(strings.Repeat("\x05\x03\x02\x01\x00\x03\x01", 40)), 50, true)
	f.Add([]byte(strings.Repeat("\x06\x01\x02\x03\x03\x00\x07\x02", 40)), 60, false)
	f.Fuzz(func(t *testing.T, seed []byte, limit int, html bool) {
		mode, wellFormed := platform.ParseMarkdown, markdownWellFormed
		if html {
			mode, wellFormed = platform.ParseHTML, htmlWellFormed
		}
		s, longest := markupDoc(seed, html)
		if !wellFormed(s) {
			t.Fatalf("the generator made an ill-formed text %q", s)
		}
		limit = longest + (limit%200+200)%200
		parts := splitText(s, limit, mode)
		if strings.Join(parts, "") != s {
			t.Fatalf("parts %q do not add up to %q", parts, s)
		}
		for i, p := range parts {
			if n := utf16Len(p); n > limit || p == "" {
				t.Fatalf("part %d %q has %d units; limit %d", i, p, n, limit)
			}
			if !wellFormed(p) {
				t.Fatalf("part %d of %q (limit %d, longest atom %d) is not well-formed: %q", i, s, limit, longest, p)
			}
		}
	})
}
