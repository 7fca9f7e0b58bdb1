package telegram

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func TestAnswerResult(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // the result; "" when an error is expected
		fast       bool   // found without a decode
	}{
		{"message", `{"ok":true,"result":{"message_id":7,"chat":{"id":1,"type":"private"},"text":"}]\"{"}}`, `{"message_id":7,"chat":{"id":1,"type":"private"},"text":"}]\"{"}`, true},
		{"the fake's newline", "{\"ok\":true,\"result\":[1,2]}\n", `[1,2]`, true},
		{"scalar", `{"ok":true,"result":true}`, `true`, true},
		{"string with escapes", `{"ok":true,"result":"a\\\"b"}`, `"a\\\"b"`, true},
		{"a field after the result", `{"ok":true,"result":true,"description":"Webhook was set"}`, `true`, false},
		{"an object's field after the result", `{"ok":true,"result":{"a":1},"ok":false,"description":"x"}`, "", false},
		{"spaced", `{ "ok": true, "result": {"a": 1} }`, `{"a": 1}`, false},
		{"a space before the result", `{"ok":true,"result": 0}`, `0`, false},
		{"result first", `{"result":[],"ok":true}`, `[]`, false},
		{"not JSON", `<html>Bad Gateway</html>`, "", false},
		{"empty", ``, "", false},
		{"cut", `{"ok":true,"result":{"message_id":7`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := answerResult([]byte(tc.body))
			if tc.want == "" {
				if err == nil {
					t.Fatalf("answerResult(%s) = %s, want an error", tc.body, got)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("answerResult(%s) = %s, %v; want %s", tc.body, got, err, tc.want)
			}
			rest, _ := bytes.CutPrefix([]byte(tc.body), okPrefix)
			if fast := len(rest) < len(tc.body) && isOneValue(rest[:bytes.LastIndexByte(rest, '}')]); fast != tc.fast {
				t.Errorf("fast path taken: %v, want %v", fast, tc.fast)
			}
		})
	}
}

func TestAnswerResultRefusal(t *testing.T) {
	_, err := answerResult([]byte(`{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`))
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
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := answerResult(body)
		var want tgbotapi.APIResponse
		derr := json.NewDecoder(bytes.NewReader(body)).Decode(&want)
		switch {
		case derr == nil && want.Ok:
			if err != nil || !bytes.Equal(got, want.Result) {
				t.Fatalf("answerResult(%q) = %q, %v; the library reads %q", body, got, err, want.Result)
			}
		case derr == nil:
			var te *tgbotapi.Error
			if !errors.As(err, &te) || te.Code != want.ErrorCode || te.Message != want.Description {
				t.Fatalf("answerResult(%q) = %q, %v; the library reads a refusal %d %q", body, got, err, want.ErrorCode, want.Description)
			}
		case err == nil && json.Valid(got):
			t.Fatalf("answerResult(%q) = %q, which is JSON, but the library cannot read the answer: %v", body, got, derr)
		}
	})
}
