package onebot

import "strings"

// CQ codes are OneBot's string form of a message: plain text with segments
// written inline as [CQ:type,key=value,…]. Text escapes &, [ and ]; parameter
// values (and here also types and keys) additionally escape the comma.
var (
	textEscaper   = strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;")
	textUnescaper = strings.NewReplacer("&amp;", "&", "&#91;", "[", "&#93;", "]")
	argEscaper    = strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;", ",", "&#44;")
	argUnescaper  = strings.NewReplacer("&amp;", "&", "&#91;", "[", "&#93;", "]", "&#44;", ",")
)

// EscapeText escapes s for use as text in a CQ-code string, so that
// ParseCQ(EscapeText(s)) is a single text segment holding s (for non-empty
// s). Use it on untrusted input (a user's words) before mixing it with CQ
// codes when [Config.CQCodeText] is on.
func EscapeText(s string) string { return textEscaper.Replace(s) }

// UnescapeText reverses [EscapeText].
func UnescapeText(s string) string { return textUnescaper.Replace(s) }

// CQ returns segs as a CQ-code string: text segments escaped with
// [EscapeText], every other segment as [CQ:type,key=value,…] with its
// parameters in key order and escaped. ParseCQ(CQ(segs)) gives segs back,
// with adjacent text segments merged and empty ones dropped.
func CQ(segs ...Segment) string {
	var b strings.Builder
	for _, s := range segs {
		if s.Type == "text" {
			b.WriteString(EscapeText(s.Data["text"]))
			continue
		}
		b.WriteString("[CQ:")
		b.WriteString(argEscaper.Replace(s.Type))
		for _, k := range sortedKeys(s.Data) {
			b.WriteByte(',')
			b.WriteString(argEscaper.Replace(k))
			b.WriteByte('=')
			b.WriteString(argEscaper.Replace(s.Data[k]))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// ParseCQ parses a CQ-code string into segments. It never fails: text that
// is not a well-formed CQ code is kept as text. A code runs from "[CQ:" to
// the next "]", and since a valid CQ string escapes every "[" and "]" in
// text and parameters, a "[" before that "]" means the "[CQ:" was text: in
// "[CQ:[CQ:face,id=1]" the text "[CQ:" is followed by the face code. A
// "[CQ:" with no closing "]", and a code with an empty type, are text too.
// Adjacent text is merged into one text segment (a [CQ:text,text=…] code
// included), empty text is dropped, and the text is unescaped; a parameter
// without "=" gets the value "", and of repeated parameters the last one
// wins.
func ParseCQ(s string) Message {
	var m Message
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			m = append(m, Text(text.String()))
			text.Reset()
		}
	}
	const open = "[CQ:"
	for len(s) > 0 {
		i := strings.Index(s, open)
		if i < 0 {
			text.WriteString(UnescapeText(s))
			break
		}
		text.WriteString(UnescapeText(s[:i]))
		s = s[i:]
		end := strings.IndexAny(s[len(open):], "[]")
		if end < 0 {
			// An unterminated code is text; "[" cannot appear unescaped in
			// text, so keep it literally.
			text.WriteString(UnescapeText(s))
			break
		}
		end += len(open)
		if s[end] == '[' {
			// A raw "[" inside: what came before it is text, and a code
			// may start at it.
			text.WriteString(UnescapeText(s[:end]))
			s = s[end:]
			continue
		}
		seg, ok := parseCode(s[len(open):end])
		switch {
		case !ok:
			text.WriteString(UnescapeText(s[:end+1]))
		case seg.Type == "text":
			// [CQ:text,text=…] is unusual but valid: it is text.
			text.WriteString(seg.Data["text"])
		default:
			flush()
			m = append(m, seg)
		}
		s = s[end+1:]
	}
	flush()
	return m
}

// parseCode parses the inside of one CQ code, "type,key=value,…".
func parseCode(body string) (Segment, bool) {
	parts := strings.Split(body, ",")
	typ := argUnescaper.Replace(parts[0])
	if typ == "" {
		return Segment{}, false
	}
	seg := Segment{Type: typ, Data: make(map[string]string, len(parts)-1)}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		seg.Data[argUnescaper.Replace(k)] = argUnescaper.Replace(v)
	}
	return seg, true
}
