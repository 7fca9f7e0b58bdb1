package telegram

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// maxAnswerBytes bounds a Bot API answer read into memory. getUpdates's
// answer, the largest (100 updates at most), stays far below it; a proxy
// or a broken server answering without end is cut off here.
const maxAnswerBytes = 64 << 20

// maxPooledAnswer is the largest answer buffer kept for reuse: a send's
// answer (its Message) is a few hundred bytes, getUpdates's can be many
// kilobytes, and a rare large one is left to the GC.
const maxPooledAnswer = 64 << 10

// post calls method with params as an HTML form and hands the answer's
// result to use, which must not keep it: it lies in a buffer the adapter
// reuses once use returns. It does what tgbotapi's MakeRequest does (the
// same URL, body and header, the same *tgbotapi.Error for an answer with
// "ok": false), but the answer is read whole, which frees the connection
// for the next request at once, into a reused buffer, and its result is
// found without decoding it (see [answerResult]; checked is its). Its
// errors are the library's, for [Adapter.failure].
func (a *Adapter) post(bc *boundClient, method string, params tgbotapi.Params, checked bool, use func(json.RawMessage)) error {
	req, err := http.NewRequestWithContext(bc.tracedContext(), http.MethodPost, a.urls.get(a.cfg.APIEndpoint, a.cfg.Token, method), strings.NewReader(encodeForm(params)))
	if err != nil {
		// Its text, and the *url.Error inside it, may quote the URL, token
		// and all: only the redacted text is kept.
		return errors.New(a.red.String(err.Error()))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := bc.doTraced(req) // made with its context: no copy of req
	if err != nil {
		return err
	}
	ab, _ := a.answers.Get().(*answerBuf)
	if ab == nil {
		ab = new(answerBuf)
	}
	defer a.putAnswerBuf(ab)
	err = ab.read(resp, maxAnswerBytes)
	_ = resp.Body.Close()
	var result json.RawMessage
	if err != nil {
		// The library decodes the answer's first JSON value and reads no
		// further: a whole answer before a broken connection is the answer.
		var derr error
		if result, derr = decodeAnswer(ab.buf.Bytes()); derr == nil || isRefusal(derr) {
			err = derr
		}
	} else {
		result, err = answerResult(ab.buf.Bytes(), checked)
	}
	if err != nil {
		return err
	}
	use(result)
	return nil
}

// encodeForm is url.Values.Encode of params, as the library sends them:
// keys sorted, every key with its value, empty ones too.
func encodeForm(params tgbotapi.Params) string {
	var small [16]string // a send's parameters fit: no allocation
	keys, n := small[:0], 0
	for k, v := range params {
		keys = append(keys, k)
		n += 2 + escapedLen(k) + escapedLen(v)
	}
	slices.Sort(keys)
	var sb strings.Builder
	sb.Grow(n)
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte('&')
		}
		writeQueryEscape(&sb, k)
		sb.WriteByte('=')
		writeQueryEscape(&sb, params[k])
	}
	return sb.String()
}

// escapedLen returns the length of url.QueryEscape(s).
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && escapes(c) {
			n += 2
		}
	}
	return n
}

// writeQueryEscape writes url.QueryEscape(s) to sb: letters, digits and
// "-_.~" as they are, a space as "+", every other byte as %XX.
func writeQueryEscape(sb *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	kept := 0 // s[kept:i] is written as it is
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !escapes(c) {
			continue
		}
		sb.WriteString(s[kept:i])
		if c == ' ' {
			sb.WriteByte('+')
		} else {
			sb.WriteByte('%')
			sb.WriteByte(hex[c>>4])
			sb.WriteByte(hex[c&15])
		}
		kept = i + 1
	}
	sb.WriteString(s[kept:])
}

// escapes reports whether url.QueryEscape changes c.
func escapes(c byte) bool {
	return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~')
}

// urlCache holds the URLs of the Bot API methods an adapter called, so
// that a request does not format its URL again. It keeps at most
// maxCachedURLs: a method name a bot passes on from elsewhere cannot
// grow it without bound.
type urlCache struct {
	m sync.Map // method → URL
	n atomic.Int32
}

// maxCachedURLs bounds a urlCache; the Bot API has about 170 methods, a
// bot calls a few dozen.
const maxCachedURLs = 256

// get returns method's URL under endpoint (Config.APIEndpoint) with token.
func (c *urlCache) get(endpoint, token, method string) string {
	if u, ok := c.m.Load(method); ok {
		return u.(string)
	}
	u := fmt.Sprintf(endpoint, token, method)
	for {
		// A place taken before the URL is stored: however many calls
		// race, the cache never holds more than maxCachedURLs.
		n := c.n.Load()
		if n >= maxCachedURLs {
			return u
		}
		if c.n.CompareAndSwap(n, n+1) {
			break
		}
	}
	if _, loaded := c.m.LoadOrStore(method, u); loaded {
		c.n.Add(-1) // another call stored it first
	}
	return u
}

// answerBuf is where [Adapter.post] reads an answer, reused.
type answerBuf struct {
	buf   bytes.Buffer
	limit io.LimitedReader // the body, cut one byte past the bound
}

// read reads resp's body whole into b.buf, up to max bytes. It grows the
// buffer to the length the answer declares, up to maxPooledAnswer: a
// declared length is not trusted further.
func (b *answerBuf) read(resp *http.Response, max int64) error {
	if n := resp.ContentLength; n > 0 {
		// +MinRead: ReadFrom reads EOF without growing. n is bounded
		// first: a hostile length near the largest int64 must not wrap.
		b.buf.Grow(int(min(n, maxPooledAnswer-bytes.MinRead)) + bytes.MinRead)
	}
	b.limit = io.LimitedReader{R: resp.Body, N: max + 1}
	n, err := b.buf.ReadFrom(&b.limit)
	b.limit.R = nil
	if err != nil {
		return err
	}
	if n > max {
		return fmt.Errorf("answer over %d bytes", max)
	}
	return nil
}

// putAnswerBuf gives b back for reuse, unless it grew large.
func (a *Adapter) putAnswerBuf(b *answerBuf) {
	if b.buf.Cap() <= maxPooledAnswer {
		b.buf.Reset()
		a.answers.Put(b)
	}
}

// okPrefix opens every successful answer of the Bot API's: Telegram writes
// its JSON compact, "ok" first and "result" second.
var okPrefix = []byte(`{"ok":true,"result":`)

// answerResult returns the result of the Bot API answer body, or the
// *tgbotapi.Error of an answer with "ok": false. An answer that opens with
// okPrefix and closes right after one JSON value, as Telegram's do, gives
// that value as it lies in body, without a decode; any other answer is
// decoded as the library decodes it. Checked, the value must be valid JSON
// (json.Valid refuses what the library's decode refuses, a value nested
// too deep included), for a caller that keeps or passes on the result, or
// ignores it; unchecked, only its extent is found (see isOneValue), for a
// caller that reads what it needs of it and refuses what it cannot read.
func answerResult(body []byte, checked bool) (json.RawMessage, error) {
	if rest, ok := bytes.CutPrefix(bytes.TrimRight(body, " \t\r\n"), okPrefix); ok && len(rest) > 1 && rest[len(rest)-1] == '}' {
		v := rest[:len(rest)-1]
		// json.Valid finds the extent too: checked, one scan, not two.
		if checked && !isSpace(v[0]) && !isSpace(v[len(v)-1]) && json.Valid(v) || !checked && isOneValue(v) {
			return v, nil
		}
	}
	return decodeAnswer(body)
}

// isOneValue reports whether v's brackets and strings make it one JSON
// value and nothing around it: an object or an array whose last bracket
// closes it at v's end, or a scalar with no comma, colon, bracket or space
// outside a string. It checks the extent of a value, not its grammar: an
// answer with a field after its result ({"ok":true,"result":{...},"x":1})
// fails it, {"ok":true,"result":tru} passes.
func isOneValue(v []byte) bool {
	if len(v) == 0 || isSpace(v[0]) || isSpace(v[len(v)-1]) {
		return false // a decode would drop the space from the value
	}
	depth := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			// Most of a message is strings: skipped to their ends at once.
			if i = closingQuote(v, i+1); i < 0 {
				return false
			}
		case c == '{' || c == '[':
			if depth == 0 && i > 0 {
				return false // a container after a scalar
			}
			depth++
		case c == '}' || c == ']':
			depth--
			if depth < 0 || depth == 0 && i != len(v)-1 {
				return false
			}
		case depth == 0 && (c == ',' || c == ':' || isSpace(c)):
			return false
		}
	}
	return depth == 0
}

// closingQuote returns the index in v of the quote that closes a string
// whose contents start at from, or -1 if none does: the first quote after
// an even run of backslashes (none included), which escape each other.
func closingQuote(v []byte, from int) int {
	for i := from; ; {
		q := bytes.IndexByte(v[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		k := q - 1
		for k >= from && v[k] == '\\' {
			k--
		}
		if (q-1-k)%2 == 0 {
			return q
		}
		i = q + 1 // an escaped quote
	}
}

// decodeAnswer is answerResult by the library's decode: the first JSON
// value of body, an APIResponse.
func decodeAnswer(body []byte) (json.RawMessage, error) {
	var resp tgbotapi.APIResponse
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&resp); err != nil {
		return nil, err
	}
	if !resp.Ok {
		e := &tgbotapi.Error{Code: resp.ErrorCode, Message: resp.Description}
		if resp.Parameters != nil {
			e.ResponseParameters = *resp.Parameters
		}
		return nil, e
	}
	return resp.Result, nil
}

// isRefusal reports whether err is the library's error for an answer with
// "ok": false.
func isRefusal(err error) bool {
	var te *tgbotapi.Error
	return errors.As(err, &te)
}

// isSpace reports whether c is JSON's white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
