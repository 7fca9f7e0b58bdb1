package telegram

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestMessageIDOf(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		id   int
		fail bool
	}{
		{`{"message_id":7,"date":1,"chat":{"id":1,"type":"private"},"text":"hello"}`, 7, false},
		{`{"message_id":8}`, 8, false},
		{`{"date":1,"message_id":9}`, 9, false}, // not first: decoded
		{`{"message_id": 10}`, 10, false},       // a space: decoded
		{`{"message_id":0}`, 0, false},
		{`{"message_id":"x"}`, 0, true},
		{`{"message_id":1.5}`, 0, true},
		{`{"message_id":07}`, 0, true},
		{`{"message_id":99999999999999999999}`, 0, true},
		{`"sent"`, 0, true},
	} {
		id, err := messageIDOf([]byte(tc.raw))
		if (err != nil) != tc.fail || id != tc.id {
			t.Errorf("messageIDOf(%s) = %d, %v; want %d (failing: %v)", tc.raw, id, err, tc.id, tc.fail)
		}
	}
}

// FuzzMessageIDOf checks that reading the ID from the JSON's opening
// agrees with decoding the whole of it, for every valid JSON with one
// message_id key.
func FuzzMessageIDOf(f *testing.F) {
	for _, s := range []string{`{"message_id":7,"text":"x"}`, `{"message_id":8}`, `{"message_id":0}`, `{"message_id":12,}`,
		`{"message_id":123456789012345678901}`, `{"a":1,"message_id":3}`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || idKeys(raw) != 1 {
			return
		}
		var want struct {
			MessageID int `json:"message_id"`
		}
		werr := json.Unmarshal(raw, &want)
		id, err := messageIDOf(raw)
		if (err != nil) != (werr != nil) || err == nil && id != want.MessageID {
			t.Fatalf("messageIDOf(%s) = %d, %v; decoding gives %d, %v", raw, id, err, want.MessageID, werr)
		}
	})
}

// idKeys counts the keys of the JSON object raw that encoding/json would
// take for message_id (it matches keys without regard to case).
func idKeys(raw []byte) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0
	}
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0
		}
		if k, _ := tok.(string); strings.EqualFold(k, "message_id") {
			n++
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0
		}
	}
	return n
}
