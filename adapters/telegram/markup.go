package telegram

import "github.com/heraldbot/herald/platform"

// cutClass says how safe it is to cut a text at a place: the lower, the
// better. The classes nest: a cutFree place is cutOpen and cutInside too.
type cutClass uint8

const (
	// cutFree: no markup is open; the parts on both sides keep their
	// formatting.
	cutFree cutClass = iota
	// cutOpen: between tags or Markdown tokens, but inside an element or
	// entity that the cut would break.
	cutOpen
	// cutInside: inside a tag, an HTML character reference or a Markdown
	// escape or token.
	cutInside
)

// markupState returns, for each byte offset p of s and len(s), the class
// of a cut before s[p] when s is written in parse mode mode, or nil for
// plain text, where every place is cutFree.
//
// For [platform.ParseHTML] it follows Telegram's HTML: "<" opens a tag
// (quoted attribute values may hold ">"), "</" a closing one, "&" a
// character reference up to ";". A place is cutFree where every element
// opened is closed. Tags are counted, not matched by name: the text is
// Telegram's to validate.
//
// For [platform.ParseMarkdown] it follows Telegram's legacy Markdown,
// whose entities do not nest: *bold*, _italic_, `code`, ```pre```, and
// [text](url), with "\" escaping "_", "*", "`" and "[" outside entities.
// A place is cutFree outside every entity.
func markupState(s string, mode platform.ParseMode) []cutClass {
	switch mode {
	case platform.ParseHTML:
		return htmlState(s)
	case platform.ParseMarkdown:
		return markdownState(s)
	}
	return nil
}

func htmlState(s string) []cutClass {
	class := make([]cutClass, len(s)+1)
	const (
		text = iota
		tag
		ref
	)
	state, depth := text, 0
	var quote byte
	closing, selfClosing := false, false
	for i := 0; i < len(s); {
		c := s[i]
		switch state {
		case text:
			class[i] = cutFree
			if depth > 0 {
				class[i] = cutOpen
			}
			switch c {
			case '<':
				state, quote = tag, 0
				closing = i+1 < len(s) && s[i+1] == '/'
				selfClosing = false
			case '&':
				state = ref
			}
			i++
		case tag:
			class[i] = cutInside
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '>':
				state = text
				switch {
				case closing:
					depth = max(depth-1, 0)
				case !selfClosing:
					depth++
				}
			}
			selfClosing = c == '/' && quote == 0
			i++
		case ref:
			if c == ';' {
				class[i] = cutInside
				state = text
				i++
				continue
			}
			if isRefByte(c) {
				class[i] = cutInside
				i++
				continue
			}
			state = text // a bare "&": look at c again as text
		}
	}
	class[len(s)] = cutInside
	if state == text {
		class[len(s)] = cutFree
		if depth > 0 {
			class[len(s)] = cutOpen
		}
	}
	return class
}

// isRefByte reports whether c can be part of a character reference's name
// or number.
func isRefByte(c byte) bool {
	return c == '#' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func markdownState(s string) []cutClass {
	class := make([]cutClass, len(s)+1)
	const (
		none = iota
		bold
		italic
		code
		pre
		linkText
		linkURL
	)
	state := none
	fence := func(i int) bool { return i+3 <= len(s) && s[i:i+3] == "```" }
	for i := 0; i < len(s); {
		c := s[i]
		if state == none {
			class[i] = cutFree
		} else {
			class[i] = cutOpen
		}
		switch state {
		case none:
			switch {
			case c == '\\' && i+1 < len(s) && (s[i+1] == '_' || s[i+1] == '*' || s[i+1] == '`' || s[i+1] == '['):
				class[i+1] = cutInside
				i += 2
				continue
			case fence(i):
				class[i+1], class[i+2] = cutInside, cutInside
				state = pre
				i += 3
				continue
			case c == '`':
				state = code
			case c == '*':
				state = bold
			case c == '_':
				state = italic
			case c == '[':
				state = linkText
			}
		case bold:
			if c == '*' {
				state = none
			}
		case italic:
			if c == '_' {
				state = none
			}
		case code:
			if c == '`' {
				state = none
			}
		case pre:
			if fence(i) {
				class[i+1], class[i+2] = cutInside, cutInside
				state = none
				i += 3
				continue
			}
		case linkText:
			if c == ']' {
				if i+1 < len(s) && s[i+1] == '(' {
					class[i+1] = cutInside
					state = linkURL
					i += 2
					continue
				}
				state = none
			}
		case linkURL:
			if c == ')' {
				state = none
			}
		}
		i++
	}
	class[len(s)] = cutOpen
	if state == none {
		class[len(s)] = cutFree
	}
	return class
}
