package command

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		text string
		want Command
		ok   bool
	}{
		{"/start", Command{Name: "start"}, true},
		{"/echo  hello  world ", Command{Name: "echo", Raw: "hello  world"}, true},
		{"/help@HeraldBot", Command{Name: "help", Bot: "HeraldBot"}, true},
		{"/count@Bot 5", Command{Name: "count", Bot: "Bot", Raw: "5"}, true},
		{"/echo\nline two", Command{Name: "echo", Raw: "line two"}, true},
		{"/", Command{}, false},
		{"/ start", Command{}, false},
		{"/@bot", Command{}, false},
		{"start", Command{}, false},
		{"", Command{}, false},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.text, []string{"/"})
		if ok != tt.ok || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
	if got, ok := Parse("!ping", []string{"/", "!"}); !ok || got.Name != "ping" {
		t.Errorf("second prefix: %+v, %v", got, ok)
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"a b  c", []string{"a", "b", "c"}},
		{`'hello world' x`, []string{"hello world", "x"}},
		{`"a \"b\" \\ \n"`, []string{`a "b" \ \n`}},
		{`it\'s fine`, []string{"it's", "fine"}},
		{`a\ b`, []string{"a b"}},
		{`''`, []string{""}},
		{`x"y z"w`, []string{"xy zw"}},
		{`'unterminated quote`, []string{"unterminated quote"}},
		{`"unterminated \" double`, []string{`unterminated " double`}},
		{`trailing\`, []string{`trailing\`}},
		{"привет 'мир 世界'", []string{"привет", "мир 世界"}},
		{"tab\tand\nnewline", []string{"tab", "and", "newline"}},
	}
	for _, tt := range tests {
		if got := Split(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Split(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzParseCommand: command parsing of arbitrary user text never panics,
// and what it returns is consistent with its input.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"/start", "/echo a b", "/x@bot y", "/", "/@", "plain", "/\u00a0x", "/a@b@c d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cmd, ok := Parse(text, []string{"/", "!"})
		if !ok {
			return
		}
		if cmd.Name == "" || strings.ContainsAny(cmd.Name, "@ \t\n") {
			t.Fatalf("bad name %q from %q", cmd.Name, text)
		}
		if !strings.Contains(text, cmd.Name) || !strings.Contains(text, cmd.Raw) {
			t.Fatalf("parts %+v not in %q", cmd, text)
		}
		if cmd.Raw != strings.TrimSpace(cmd.Raw) {
			t.Fatalf("raw args %q not trimmed", cmd.Raw)
		}
	})
}

// FuzzSplit: splitting never panics, never returns a word with an
// unquoted separator's whitespace at its ends when the input had no quotes
// or escapes, and round-trips simple words.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"a b", `'x y' "z \" w"`, `\`, `"`, `'`, "a\\\x80b", "\xff 'q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := Split(s)
		if !strings.ContainsAny(s, `'"\`) {
			if want := strings.Fields(s); !slices.Equal(args, want) && !(len(args) == 0 && len(want) == 0) {
				if utf8.ValidString(s) {
					t.Fatalf("Split(%q) = %q; want strings.Fields %q", s, args, want)
				}
			}
		}
		if !utf8.ValidString(s) {
			return
		}
		for _, a := range args {
			if !utf8.ValidString(a) {
				t.Fatalf("Split(%q) made invalid UTF-8 %q", s, a)
			}
		}
	})
}
