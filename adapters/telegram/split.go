package telegram

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/heraldbot/herald/platform"
)

// Telegram's length limits, in UTF-16 code units.
const (
	maxTextUnits    = 4096
	maxCaptionUnits = 1024
	maxCallbackData = 64 // bytes
)

// utf16Len returns the length of s in UTF-16 code units, which is how
// Telegram counts characters (an emoji outside the BMP counts twice).
// Invalid UTF-8 bytes count one each, as they become U+FFFD.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += runeUnits(r)
	}
	return n
}

func runeUnits(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
}

// splitText cuts s, a text in parse mode mode, into parts of at most limit
// UTF-16 code units each, whose concatenation is s. Telegram counts a
// text's length after parsing its markup; counting the raw text, markup
// included, is never less, so the parts always fit (at the price of
// sometimes cutting earlier than needed).
//
// Each cut is made at the best place that fits, by these preferences in
// order:
//
//  1. where no markup is open ([markupState] cutFree): after the last
//     newline, else after the last other white space, else at the last
//     such place, even inside a word;
//  2. where markup is open but the cut is not inside a tag, an HTML
//     entity or a Markdown escape (cutOpen), with the same preference for
//     newlines and spaces; the entity open across the cut then breaks,
//     and Telegram refuses the parts it spans;
//  3. anywhere, with the same preference: the cut of a splitter that knows
//     nothing of markup, used only when the whole window lies inside one
//     tag.
//
// Separators stay at the end of the part before the cut. A cut never
// splits a UTF-8 sequence or a surrogate pair, so when limit is smaller
// than one character, that character is a part of its own. In plain
// text every place is free, so cuts go after the last newline, else
// space, else at the limit. A limit below 1 means 1.
func splitText(s string, limit int, mode platform.ParseMode) []string {
	limit = max(limit, 1)
	if utf16Len(s) <= limit {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	class := markupState(s, mode)
	classAt := func(p int) cutClass {
		if class == nil {
			return cutFree
		}
		return class[p]
	}
	var parts []string
	for base := 0; base < len(s); {
		rest := s[base:]
		// best[c][k] is the last place (an offset into rest) of class c
		// or better after a newline (k = 0), white space (1) or anything
		// (2); 0 means none.
		var best [cutInside + 1][3]int
		units, end := 0, len(rest)
		for i := 0; i < len(rest); {
			r, size := utf8.DecodeRuneInString(rest[i:])
			w := runeUnits(r)
			if units+w > limit {
				end = i
				break
			}
			units += w
			i += size
			if i == len(rest) {
				break
			}
			kind := 2
			if r == '\n' {
				kind = 0
			} else if unicode.IsSpace(r) {
				kind = 1
			}
			for c := classAt(base + i); c <= cutInside; c++ {
				best[c][kind] = i
				if kind < 2 {
					best[c][2] = i
				}
			}
		}
		if end == len(rest) {
			parts = append(parts, rest)
			break
		}
		cut := 0
	pick:
		for c := range best {
			for _, p := range best[c] {
				if p > 0 {
					cut = p
					break pick
				}
			}
		}
		if cut == 0 { // the first character alone is over the limit
			_, cut = utf8.DecodeRuneInString(rest)
		}
		parts = append(parts, rest[:cut])
		base += cut
	}
	return parts
}
