package telegram

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
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

// splitText cuts s into parts of at most limit UTF-16 code units each,
// whose concatenation is s. Telegram counts a text's length after parsing
// its markup; counting the raw text, markup included, is never less, so the
// parts always fit (at the price of sometimes cutting earlier than needed).
//
// Each cut is made after the last newline that fits, else after the last
// other white space, else (one long word) at the last rune boundary that
// fits; separators stay at the end of the part before the cut. A cut never
// splits a UTF-8 sequence or a surrogate pair, so when limit is smaller
// than one character, that character is a part of its own. It does not
// know about markup: an HTML tag or Markdown entity spanning a cut breaks.
// A limit below 1 means 1.
func splitText(s string, limit int) []string {
	limit = max(limit, 1)
	var parts []string
	for len(s) > 0 {
		units, end, lastNL, lastSpace := 0, len(s), 0, 0
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			w := runeUnits(r)
			if units+w > limit {
				end = i
				break
			}
			units += w
			i += size
			if r == '\n' {
				lastNL = i
			} else if unicode.IsSpace(r) {
				lastSpace = i
			}
		}
		if end == len(s) {
			parts = append(parts, s)
			break
		}
		cut := end
		switch {
		case lastNL > 0:
			cut = lastNL
		case lastSpace > 0:
			cut = lastSpace
		case cut == 0: // the first character alone is over the limit
			_, cut = utf8.DecodeRuneInString(s)
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
	}
	return parts
}
