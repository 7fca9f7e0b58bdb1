package platform

import (
	"encoding/json"
	"unicode/utf8"
)

// appendEventJSON appends e's fields as JSON, byte for byte what
// encoding/json writes for eventJSON, when e is a plain event — no
// attachments, inline query, reactions, member, payment, business
// connection or deleted messages, and a time encoding/json can write —
// and reports whether it did; otherwise it appends nothing. A journaled
// event is encoded once on its way in (BenchmarkJournalEvent): this is a
// sixth of the reflection's cost, without its allocations.
func appendEventJSON(b []byte, e *Event) ([]byte, bool) {
	if len(e.Attachments) > 0 || e.Inline != (InlineQuery{}) || e.Reactions != nil || e.Member != nil ||
		e.Payment != nil || e.Business != nil || len(e.MessageIDs) > 0 {
		return b, false
	}
	start := len(b)
	b = append(b, `{"id":`...)
	b = appendJSONString(b, e.ID)
	b = append(b, `,"platform":`...)
	b = appendJSONString(b, e.Platform)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(e.Kind))
	b = append(b, `,"chat":{"id":`...)
	b = appendJSONString(b, e.Chat.ID)
	b = appendOptString(b, `,"type":`, string(e.Chat.Type))
	b = appendOptString(b, `,"title":`, e.Chat.Title)
	b = appendOptString(b, `,"thread":`, e.Chat.Thread)
	b = appendOptString(b, `,"business_connection_id":`, e.Chat.BusinessConnectionID)
	b = append(b, `},"from":{"id":`...)
	b = appendJSONString(b, e.From.ID)
	b = appendOptString(b, `,"name":`, e.From.Name)
	b = appendOptString(b, `,"username":`, e.From.Username)
	if e.From.IsBot {
		b = append(b, `,"is_bot":true`...)
	}
	b = appendOptString(b, `,"language_code":`, e.From.LanguageCode)
	b = append(b, '}')
	b = appendOptString(b, `,"text":`, e.Text)
	b = appendOptString(b, `,"message_id":`, e.MessageID)
	b = appendOptString(b, `,"reply_to_id":`, e.ReplyToID)
	b = append(b, `,"time":"`...)
	t, err := e.Time.AppendText(b)
	if err != nil {
		return b[:start], false // a year encoding/json refuses: its error
	}
	b = append(t, '"')
	b = appendOptString(b, `,"query_id":`, e.QueryID)
	return append(b, '}'), true
}

// invalidUTF8 is what encoding/json writes for a byte that is not UTF-8:
// \ufffd, or U+FFFD itself where it is built on encoding/json/v2
// (GOEXPERIMENT=jsonv2). It is set once, never changed.
var invalidUTF8 = func() string {
	b, err := json.Marshal("\xff")
	if err != nil || len(b) < 2 {
		return `\ufffd`
	}
	return string(b[1 : len(b)-1])
}()

// appendOptString appends name and s as JSON unless s is empty (a field
// tagged omitempty).
func appendOptString(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, name...), s)
}

// appendJSONString appends s as a JSON string as encoding/json writes it:
// HTML's <, > and & escaped, as are U+2028 and U+2029, and bytes that are
// not UTF-8 replaced by U+FFFD (see invalidUTF8).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, invalidUTF8...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
