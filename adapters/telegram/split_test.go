package telegram

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/heraldbot/herald/platform"
)

func TestUTF16Len(t *testing.T) {
	for s, want := range map[string]int{
		"":         0,
		"abc":      3,
		"яблоко":   6,
		"😀":        2,
		"a😀b":      4,
		"\xff\xfe": 2,
		"日本":       2,
	} {
		if got := utf16Len(s); got != want {
			t.Errorf("utf16Len(%q) = %d; want %d", s, got, want)
		}
	}
}

func TestSplitText(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		limit int
		want  []string
	}{
		{"empty", "", 10, nil},
		{"fits", "hello", 10, []string{"hello"}},
		{"exactly the limit", "0123456789", 10, []string{"0123456789"}},
		{"one over", "0123456789a", 10, []string{"0123456789", "a"}},
		{"line boundary", "one two\nthree four", 12, []string{"one two\n", "three four"}},
		{"last line boundary wins", "a\nb\nc\ndddddd", 8, []string{"a\nb\nc\n", "dddddd"}},
		{"word boundary", "one two three four", 10, []string{"one two ", "three four"}},
		{"line beats a later space", "ab\ncd ef gh", 9, []string{"ab\n", "cd ef gh"}},
		{"hard cut in a long word", "abcdefghijkl", 5, []string{"abcde", "fghij", "kl"}},
		{"cyrillic counts one each", "яяяяя яяяя", 5, []string{"яяяяя", " яяяя"}},
		{"emoji count two and are not split", "😀😀😀", 5, []string{"😀😀", "😀"}},
		{"emoji alone over the limit", "😀x", 1, []string{"😀", "x"}},
		{"tab is white space", "aaaa\tbbbb", 6, []string{"aaaa\t", "bbbb"}},
		{"limit below one", "ab", 0, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitText(tt.s, tt.limit, platform.ParsePlain)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("splitText(%q, %d) = %q; want %q", tt.s, tt.limit, got, tt.want)
			}
		})
	}
}

func TestSplitTextTelegramSizes(t *testing.T) {
	// 3 lines of 2000 characters: parts end at line breaks.
	line := strings.Repeat("x", 1999) + "\n"
	text := strings.Repeat(line, 3)
	parts := splitText(text, maxTextUnits, platform.ParsePlain)
	if len(parts) != 2 || parts[0] != line+line || parts[1] != line {
		t.Fatalf("lines: %d parts of %d, %d units", len(parts), utf16Len(parts[0]), utf16Len(parts[len(parts)-1]))
	}
	// 4096 emoji units exactly fit; one more character does not.
	exact := strings.Repeat("😀", 2048)
	if parts := splitText(exact, maxTextUnits, platform.ParsePlain); len(parts) != 1 {
		t.Fatalf("4096 units split into %d parts", len(parts))
	}
	if parts := splitText(exact+"a", maxTextUnits, platform.ParsePlain); len(parts) != 2 || parts[0] != exact || parts[1] != "a" {
		t.Fatalf("4097 units: %d parts", len(parts))
	}
}

// FuzzSplitText splits any text, in every parse mode, markup well-formed
// or not: the parts add up to the text, none is empty or over the limit
// (but a single character), and none splits a UTF-8 sequence. In plain
// text a part cut in the middle of a word is as long as it can be.
func FuzzSplitText(f *testing.F) {
	f.Add("hello world\nsecond line", 7, uint8(0))
	f.Add("😀😀😀 日本語 текст", 3, uint8(0))
	f.Add("\n\n\n\n", 2, uint8(0))
	f.Add("\xff\xfe\xfd", 1, uint8(0))
	f.Add(strings.Repeat("word ", 30), 11, uint8(0))
	f.Add("<b>bold <i>and</i></b> &amp; <a href=\"x>y\">l</a> <unclosed", 9, uint8(1))
	f.Add("</b></i>&&;<<>>\"'", 3, uint8(1))
	f.Add("*bold* _it_ `code` ```pre``` [l](u) \\_ *open _x", 7, uint8(2))
	f.Fuzz(func(t *testing.T, s string, limit int, mode uint8) {
		pm := []platform.ParseMode{platform.ParsePlain, platform.ParseHTML, platform.ParseMarkdown}[mode%3]
		limit = 1 + (limit%64+64)%64
		parts := splitText(s, limit, pm)
		if strings.Join(parts, "") != s {
			t.Fatalf("parts %q do not add up to %q", parts, s)
		}
		for i, p := range parts {
			if p == "" {
				t.Fatalf("part %d is empty", i)
			}
			if n := utf16Len(p); n > limit && utf8.RuneCountInString(p) != 1 {
				t.Fatalf("part %d %q has %d units; limit %d", i, p, n, limit)
			}
			if utf8.ValidString(s) && !utf8.ValidString(p) {
				t.Fatalf("part %d %q split a UTF-8 sequence", i, p)
			}
		}
		if pm != platform.ParsePlain {
			return
		}
		// Greedy: a part cut in the middle of a word was as long as it
		// could be.
		for i := 0; i+1 < len(parts); i++ {
			if strings.IndexFunc(parts[i], unicode.IsSpace) < 0 {
				r, _ := utf8.DecodeRuneInString(parts[i+1])
				if utf16Len(parts[i])+runeUnits(r) <= limit {
					t.Fatalf("part %d %q stopped early before %q", i, parts[i], parts[i+1])
				}
			}
		}
	})
}
