package telegram

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

func TestAnswerResult(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	const same = "same"
	for _, tc := range []struct {
		name, body string
		want       string // the result, checked; "" when an error is expected
		unchecked  string // the result unchecked, if not the same
		fast       bool   // found without a decode: the result lies in the body
	}{
		{"message", `{"ok":true,"result":{"message_id":7,"chat":{"id":1,"type":"private"},"text":"}]\"{"}}`, `{"message_id":7,"chat":{"id":1,"type":"private"},"text":"}]\"{"}`, same, true},
		{"the fake's newline", "{\"ok\":true,\"result\":[1,2]}\n", `[1,2]`, same, true},
		{"scalar", `{"ok":true,"result":true}`, `true`, same, true},
		{"string with escapes", `{"ok":true,"result":"a\\\"b"}`, `"a\\\"b"`, same, true},
		{"a field after the result", `{"ok":true,"result":true,"description":"Webhook was set"}`, `true`, same, false},
		{"an object's field after the result", `{"ok":true,"result":{"a":1},"ok":false,"description":"x"}`, "", same, false},
		{"spaced", `{ "ok": true, "result": {"a": 1} }`, `{"a": 1}`, same, false},
		{"a space before the result", `{"ok":true,"result": 0}`, `0`, same, false},
		{"result first", `{"result":[],"ok":true}`, `[]`, same, false},
		{"a bad scalar", `{"ok":true,"result":tru}`, "", `tru`, false},
		{"two strings", `{"ok":true,"result":"a" "b"}`, "", same, false},
		{"an array without commas", `{"ok":true,"result":[1 2]}`, "", `[1 2]`, false},
		{"nested too deep", `{"ok":true,"result":` + deep + `}`, "", deep, false},
		{"not JSON", `<html>Bad Gateway</html>`, "", same, false},
		{"empty", ``, "", same, false},
		{"cut", `{"ok":true,"result":{"message_id":7`, "", same, false},
	} {
		for _, checked := range []bool{true, false} {
			want := tc.want
			if !checked && tc.unchecked != same {
				want = tc.unchecked
			}
			t.Run(fmt.Sprintf("%s/checked=%v", tc.name, checked), func(t *testing.T) {
				body := []byte(tc.body)
				got, err := answerResult(body, checked)
				if want == "" {
					if err == nil {
						t.Fatalf("answerResult(%.80s) = %.80s, want an error", tc.body, got)
					}
					return
				}
				if err != nil || string(got) != want {
					t.Fatalf("answerResult(%.80s) = %.80s, %v; want %.80s", tc.body, got, err, want)
				}
				for i := range body {
					body[i] = 'x'
				}
				if fast := got[0] == 'x'; fast != (tc.fast || want != tc.want) {
					t.Errorf("the result lies in the body: %v, want %v", fast, !fast)
				}
			})
		}
	}
}

func TestAnswerResultRefusal(t *testing.T) {
	_, err := answerResult([]byte(`{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`), true)
	var te *tgbotapi.Error
	if !errors.As(err, &te) || te.Code != 429 || te.Message != "Too Many Requests: retry after 3" || te.RetryAfter != 3 {
		t.Fatalf("answerResult = %#v, want the library's *tgbotapi.Error with code, description and retry_after", err)
	}
}

func TestEncodeForm(t *testing.T) {
	params := tgbotapi.Params{"text": "a&b=c d", "chat_id": "1", "empty": "", "reply_markup": `{"k":[1]}`}
	v := url.Values{}
	for k, s := range params {
		v.Set(k, s)
	}
	if got, want := encodeForm(params), v.Encode(); got != want {
		t.Fatalf("encodeForm = %q, want url.Values.Encode's %q", got, want)
	}
	if got := encodeForm(nil); got != "" {
		t.Fatalf("encodeForm(nil) = %q", got)
	}
	many := tgbotapi.Params{}
	for i := range 40 { // more than encodeForm's keys on the stack
		many[fmt.Sprintf("k%d é", i)] = fmt.Sprintf("%d ~ü\x00", i)
	}
	if got, want := encodeForm(many), formOf(many); got != want {
		t.Fatalf("encodeForm of 40 = %q, want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = encodeForm(params) }); n != 1 {
		t.Errorf("encodeForm of 4 parameters: %v allocations; want 1", n)
	}
}

// formOf is url.Values.Encode of params.
func formOf(params tgbotapi.Params) string {
	v := url.Values{}
	for k, s := range params {
		v.Set(k, s)
	}
	return v.Encode()
}

// FuzzEncodeForm holds encodeForm to url.Values.Encode.
func FuzzEncodeForm(f *testing.F) {
	f.Add("text", "a&b=c d", "chat_id", "-100")
	f.Add("", "", "x y", "\xff%+")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		params := tgbotapi.Params{k1: v1, k2: v2}
		if got, want := encodeForm(params), formOf(params); got != want {
			t.Fatalf("encodeForm = %q, want %q", got, want)
		}
	})
}

// A method's URL is the endpoint formatted with the token and the method,
// from the cache or not, and the cache stays bounded.
func TestURLCache(t *testing.T) {
	const endpoint = "https://example.test/bot%s/%s"
	var c urlCache
	for i := range 2 * maxCachedURLs {
		m := fmt.Sprintf("method%d", i)
		for range 2 {
			if got, want := c.get(endpoint, "1:tok", m), fmt.Sprintf(endpoint, "1:tok", m); got != want {
				t.Fatalf("get(%q) = %q, want %q", m, got, want)
			}
		}
	}
	n := 0
	c.m.Range(func(any, any) bool { n++; return true })
	if n != maxCachedURLs || c.n.Load() != maxCachedURLs {
		t.Fatalf("%d URLs cached (count %d); want %d", n, c.n.Load(), maxCachedURLs)
	}
	// Calls racing for the last places take no more than there are.
	var r urlCache
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range maxCachedURLs {
				r.get(endpoint, "1:tok", fmt.Sprintf("m%d", (i*8+g)%(maxCachedURLs+64)))
			}
		})
	}
	wg.Wait()
	n = 0
	r.m.Range(func(any, any) bool { n++; return true })
	if n > maxCachedURLs || int(r.n.Load()) != n {
		t.Fatalf("%d URLs cached (count %d) after racing calls; want at most %d, counted", n, r.n.Load(), maxCachedURLs)
	}
}

// FuzzAnswerResult holds answerResult to the library's decode of the same
// answer: the same result or the same refusal whenever the library reads
// the answer, and when it cannot, an error or a result that is not JSON
// (which the caller's decode refuses).
func FuzzAnswerResult(f *testing.F) {
	for _, s := range []string{
		`{"ok":true,"result":{"message_id":7}}`, `{"ok":true,"result":true}`, "{\"ok\":true,\"result\":[]}\n",
		`{"ok":true,"result":1,"description":"d"}`, `{"ok":false,"error_code":400,"description":"Bad Request"}`,
		`{"ok":true,"result":"}"}`, `{"ok":true,"result":{"a":"\"}"}}`, `{"ok":true,"result":tru}`, `{"ok":true,"result":1}}`,
		`{"ok":true,"result":"a" "b"}`, `{"ok":true,"result":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want tgbotapi.APIResponse
		derr := json.NewDecoder(bytes.NewReader(body)).Decode(&want)
		for _, checked := range []bool{true, false} {
			got, err := answerResult(body, checked)
			switch {
			case derr == nil && want.Ok:
				if err != nil || !bytes.Equal(got, want.Result) {
					t.Fatalf("answerResult(%q, %v) = %q, %v; the library reads %q", body, checked, got, err, want.Result)
				}
			case derr == nil:
				var te *tgbotapi.Error
				if !errors.As(err, &te) || te.Code != want.ErrorCode || te.Message != want.Description {
					t.Fatalf("answerResult(%q, %v) = %q, %v; the library reads a refusal %d %q", body, checked, got, err, want.ErrorCode, want.Description)
				}
			case err == nil && (checked || json.Valid(got)):
				// Unchecked, a result the library cannot read may be given
				// only if a decode of it fails too.
				t.Fatalf("answerResult(%q, %v) = %q, but the library cannot read the answer: %v", body, checked, got, derr)
			}
		}
	})
}

// An answer is read up to its bound, and one byte more is refused; the
// length an answer declares does not size the buffer past maxPooledAnswer.
func TestAnswerBufBound(t *testing.T) {
	for _, tc := range []struct {
		size     int
		declared int64
		fail     bool
	}{{10, 10, false}, {11, 11, true}, {10, 1 << 40, false}, {10, math.MaxInt64, false}, {10, -1, false}} {
		var ab answerBuf
		resp := &http.Response{Body: io.NopCloser(strings.NewReader(strings.Repeat(" ", tc.size))), ContentLength: tc.declared}
		err := ab.read(resp, 10)
		if (err != nil) != tc.fail {
			t.Errorf("a %d-byte answer under a bound of 10: %v", tc.size, err)
		}
		if ab.buf.Cap() > 2*maxPooledAnswer {
			t.Errorf("a declared length of %d grew the buffer to %d bytes", tc.declared, ab.buf.Cap())
		}
	}
}

// A form call follows its request through the transport as Do does: a
// failed sendMessage is said to be maybe delivered exactly when the
// transport may have written it.
func TestMakeRequestMayHaveArrived(t *testing.T) {
	reset := errors.New("read: connection reset by peer")
	for _, tc := range []struct {
		name  string
		trace func(*httptrace.ClientTrace)
		want  bool
	}{
		{"not written", func(ct *httptrace.ClientTrace) { ct.GetConn("x") }, false},
		{"written", func(ct *httptrace.ClientTrace) {
			ct.GetConn("x")
			ct.WroteRequest(httptrace.WroteRequestInfo{})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				ct := httptrace.ContextClientTrace(r.Context())
				if ct == nil {
					t.Fatal("the request carries no trace")
				}
				tc.trace(ct)
				return nil, reset
			})
			a, err := New(Config{Token: testToken, APIEndpoint: "http://api.invalid/bot%s/%s", HTTPClient: &http.Client{Transport: rt}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.makeRequest(context.Background(), "sendMessage", tgbotapi.Params{"chat_id": "1", "text": "hi"})
			if err == nil {
				t.Fatal("makeRequest succeeded")
			}
			assertNoToken(t, err)
			if got := errors.Is(err, platform.ErrMaybeDelivered); got != tc.want {
				t.Fatalf("makeRequest = %v: maybe delivered %v, want %v", err, got, tc.want)
			}
		})
	}
}

// The library decodes an answer's first JSON value and reads no further;
// a whole answer followed by a broken connection is still the answer, and
// an answer cut short is an error.
func TestMakeRequestAnswerBeforeBrokenConnection(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // the result, or "" for an error
		code       int    // the APIError's code for a refusal
	}{
		{"result", `{"ok":true,"result":{"message_id":7}}`, `{"message_id":7}`, 0},
		{"refusal", `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`, "", 400},
		{"cut", `{"ok":true,"result":{"message_id":7`, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_, _ = http.ReadRequest(bufio.NewReader(c))
				// Content-Length says more than comes: the connection ends
				// before the body does.
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(tc.body)+100, tc.body)
			}()
			a, err := New(Config{Token: testToken, APIEndpoint: "http://" + ln.Addr().String() + "/bot%s/%s"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.makeRequest(context.Background(), "sendMessage", tgbotapi.Params{"chat_id": "1"})
			var ae *APIError
			switch {
			case tc.want != "":
				if err != nil || string(got) != tc.want {
					t.Fatalf("makeRequest = %s, %v; want %s", got, err, tc.want)
				}
			case tc.code != 0:
				if !errors.As(err, &ae) || ae.Code != tc.code {
					t.Fatalf("makeRequest = %s, %v; want the APIError %d", got, err, tc.code)
				}
			default:
				if err == nil {
					t.Fatalf("makeRequest = %s, nil; want an error", got)
				}
			}
			assertNoToken(t, err)
		})
	}
}

// A request that cannot be made (a URL the token breaks, which New
// refuses) fails with an error that holds no token, in its text or in what
// errors.As finds in it.
func TestPostRequestErrorHidesToken(t *testing.T) {
	a, err := New(Config{Token: testToken, APIEndpoint: "http://127.0.0.1:1/bot%s/%s"})
	if err != nil {
		t.Fatal(err)
	}
	a.cfg.APIEndpoint = "https://%s.example/%s" // as New would refuse it
	_, err = a.makeRequest(context.Background(), "getMe", nil)
	if err == nil {
		t.Fatal("makeRequest succeeded")
	}
	assertNoToken(t, err)
	var ue *url.Error
	if errors.As(err, &ue) && strings.Contains(ue.URL, tokenPart) {
		t.Fatalf("errors.As finds the URL with the token: %s", ue.URL)
	}
}

// closingQuoteByByte is closingQuote read a byte at a time, each
// backslash escaping the byte after it: the reference FuzzClosingQuote
// holds closingQuote's jumps from quote to quote to.
func closingQuoteByByte(v []byte, from int) int {
	for i := from; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++ // the escaped byte
		case '"':
			return i
		}
	}
	return -1
}

func FuzzClosingQuote(f *testing.F) {
	for _, s := range []string{
		`"a \"b\" \\"`, `"\\\\"`, `"\\\""`, `"\\"x"`, `"abc`, `"a\\\"]"]`, `"\\`, `""`, `"\"`,
	} {
		f.Add([]byte(s), 1)
	}
	f.Fuzz(func(t *testing.T, v []byte, from int) {
		if from < 0 || from > len(v) {
			return
		}
		if got, want := closingQuote(v, from), closingQuoteByByte(v, from); got != want {
			t.Fatalf("closingQuote(%q, %d) = %d, read a byte at a time %d", v, from, got, want)
		}
	})
}

// BenchmarkIsOneValue finds the extent of a sendMessage result as
// Telegram writes it.
func BenchmarkIsOneValue(b *testing.B) {
	v := []byte(`{"message_id":4711,"from":{"id":123456789,"is_bot":true,"first_name":"Herald","username":"herald_bot"},` +
		`"chat":{"id":987654321,"first_name":"Ann","last_name":"Lee","username":"annlee","type":"private"},` +
		`"date":1765000000,"text":"pong \"quoted\" and a longer line of text, as a bot writes it",` +
		`"reply_markup":{"inline_keyboard":[[{"text":"Yes","callback_data":"yes"},{"text":"No","callback_data":"no"}]]}}`)
	for b.Loop() {
		if !isOneValue(v) {
			b.Fatal("not one value")
		}
	}
}
