// Package command reads commands from messages' text: "/name@bot args",
// and arguments split as a shell splits words. Both take any text a user
// sends: they never fail and never panic (fuzzed).
package command

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Command is a command found at the start of a message's text:
// "/name@bot raw args".
type Command struct {
	Name string // without prefix and @bot
	Bot  string // after '@', or ""
	Raw  string // text after the command, trimmed
}

// Parse reads a command from text: one of prefixes, then a name that
// runs to the first space or '@', then optionally '@' and a bot username,
// then the arguments. It reports false when text does not start with a
// command.
func Parse(text string, prefixes []string) (Command, bool) {
	var rest string
	found := false
	for _, p := range prefixes {
		if p != "" && strings.HasPrefix(text, p) {
			rest, found = text[len(p):], true
			break
		}
	}
	if !found {
		return Command{}, false
	}
	end := strings.IndexFunc(rest, unicode.IsSpace)
	head, raw := rest, ""
	if end >= 0 {
		head, raw = rest[:end], strings.TrimSpace(rest[end:])
	}
	name, bot, _ := strings.Cut(head, "@")
	if name == "" {
		return Command{}, false
	}
	return Command{Name: name, Bot: bot, Raw: raw}, true
}

// Split splits s into words the way a POSIX shell does, without
// expansions: unquoted spaces separate words; single quotes keep everything
// up to the next single quote; double quotes keep everything up to the next
// unescaped double quote, where a backslash escapes '"' and '\'; outside
// quotes a backslash escapes the next character. Quotes group and are
// removed: `say 'hello world' "a \"b\""` gives [say, hello world, a "b"].
//
// Split never fails: an unterminated quote runs to the end of s, and a
// trailing backslash is kept. Invalid UTF-8 is passed through unchanged.
func Split(s string) []string {
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\'':
			inWord = true
			i += size
			end := strings.IndexByte(s[i:], '\'')
			if end < 0 {
				cur.WriteString(s[i:])
				i = len(s)
			} else {
				cur.WriteString(s[i : i+end])
				i += end + 1
			}
		case r == '"':
			inWord = true
			i += size
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
				i++
			}
			i++ // the closing quote, or past the end
		case r == '\\':
			inWord = true
			i += size
			if i < len(s) {
				r2, size2 := utf8.DecodeRuneInString(s[i:])
				if r2 == utf8.RuneError && size2 == 1 {
					cur.WriteByte(s[i])
				} else {
					cur.WriteRune(r2)
				}
				i += size2
			} else {
				cur.WriteByte('\\')
			}
		case unicode.IsSpace(r):
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
			i += size
		default:
			inWord = true
			if r == utf8.RuneError && size == 1 {
				cur.WriteByte(s[i])
			} else {
				cur.WriteString(s[i : i+size])
			}
			i += size
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args
}
