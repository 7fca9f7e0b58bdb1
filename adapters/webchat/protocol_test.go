package webchat

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestDecodeClientFrame(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want clientFrame
		code string // "" means valid
	}{
		{"hello empty", `{"type":"hello"}`, clientFrame{Type: "hello"}, ""},
		{"hello private", `{"type":"hello","chat_id":"abc-1_Z","user_id":"u1","name":" Ann "}`,
			clientFrame{Type: "hello", ChatID: "abc-1_Z", UserID: "u1", Name: "Ann"}, ""},
		{"hello room drops chat_id", `{"type":"hello","chat_id":"abc","room":"Café.2"}`,
			clientFrame{Type: "hello", Room: "Café.2"}, ""},
		{"hello drops other fields", `{"type":"hello","text":"x","data":"y","message_id":"1"}`,
			clientFrame{Type: "hello"}, ""},
		{"hello unknown fields ignored", `{"type":"hello","future":{"a":[1]}}`, clientFrame{Type: "hello"}, ""},
		{"hello long chat_id", `{"type":"hello","chat_id":"` + strings.Repeat("a", 65) + `"}`, clientFrame{}, codeBadFrame},
		{"hello chat_id with colon", `{"type":"hello","chat_id":"room:x"}`, clientFrame{}, codeBadFrame},
		{"hello bad user_id", `{"type":"hello","user_id":"a/b"}`, clientFrame{}, codeBadFrame},
		{"hello bad room", `{"type":"hello","room":"a/b"}`, clientFrame{}, codeBadFrame},
		{"message", `{"type":"message","text":" hi "}`, clientFrame{Type: "message", Text: " hi "}, ""},
		{"message blank", `{"type":"message","text":" \t"}`, clientFrame{}, codeBadFrame},
		{"message too long", `{"type":"message","text":"` + strings.Repeat("a", maxTextBytes+1) + `"}`, clientFrame{}, codeBadFrame},
		{"callback", `{"type":"callback","data":"yes","message_id":"12"}`, clientFrame{Type: "callback", Data: "yes", MessageID: "12"}, ""},
		{"callback no data", `{"type":"callback","message_id":"12"}`, clientFrame{}, codeBadFrame},
		{"callback big data", `{"type":"callback","data":"` + strings.Repeat("d", maxDataBytes+1) + `","message_id":"1"}`, clientFrame{}, codeBadFrame},
		{"callback bad id", `{"type":"callback","data":"x","message_id":"-1"}`, clientFrame{}, codeBadFrame},
		{"name", `{"type":"name","name":"\u0000Bob\u200f"}`, clientFrame{Type: "name", Name: "Bob"}, ""},
		{"unknown type", `{"type":"x"}`, clientFrame{}, codeUnknownType},
		{"no type", `{"text":"x"}`, clientFrame{}, codeBadFrame},
		{"null", `null`, clientFrame{}, codeBadFrame},
		{"array", `[]`, clientFrame{}, codeBadJSON},
		{"number", `5`, clientFrame{}, codeBadJSON},
		{"field type", `{"type":"message","text":5}`, clientFrame{}, codeBadFrame},
		{"truncated", `{"type":"message"`, clientFrame{}, codeBadJSON},
		{"two objects", `{"type":"hello"}{"type":"hello"}`, clientFrame{}, codeBadJSON},
		{"empty", ``, clientFrame{}, codeBadJSON},
		{"message with ref", `{"type":"message","text":"hi","ref":"m-1"}`, clientFrame{Type: "message", Text: "hi", Ref: "m-1"}, ""},
		{"hello with ref", `{"type":"hello","ref":"h"}`, clientFrame{Type: "hello", Ref: "h"}, ""},
		{"refused message keeps its ref", `{"type":"message","text":" ","ref":"m-2"}`, clientFrame{Ref: "m-2"}, codeBadFrame},
		{"refused type keeps its ref", `{"type":"x","ref":"r"}`, clientFrame{Ref: "r"}, codeUnknownType},
		{"ref too long", `{"type":"message","text":"hi","ref":"` + strings.Repeat("r", maxRefBytes+1) + `"}`, clientFrame{}, codeBadFrame},
		{"ref not a string", `{"type":"message","text":"hi","ref":1}`, clientFrame{}, codeBadFrame},
		{"file", `{"type":"file","kind":"photo","file_name":"cat.png","mime":"image/png","content":"aGk=","caption":" a cat ","ref":"f1"}`,
			clientFrame{Type: "file", Kind: "photo", FileName: "cat.png", MIME: "image/png", Content: []byte("hi"), Caption: "a cat", Ref: "f1"}, ""},
		{"file name's path dropped", `{"type":"file","kind":"document","file_name":"..\\..\\C:/x/\u0000notes.txt","content":"aGk="}`,
			clientFrame{Type: "file", Kind: "document", FileName: "notes.txt", Content: []byte("hi")}, ""},
		{"file name dot dot", `{"type":"file","kind":"document","file_name":"..","content":"aGk="}`,
			clientFrame{Type: "file", Kind: "document", Content: []byte("hi")}, ""},
		{"file mime parameters dropped", `{"type":"file","kind":"audio","mime":"audio/ogg; codecs=opus","content":"aGk="}`,
			clientFrame{Type: "file", Kind: "audio", MIME: "audio/ogg", Content: []byte("hi")}, ""},
		{"file bad mime dropped", `{"type":"file","kind":"video","mime":"video/mp4/x\"","content":"aGk="}`,
			clientFrame{Type: "file", Kind: "video", Content: []byte("hi")}, ""},
		{"file of a kind a tab cannot send", `{"type":"file","kind":"sticker","content":"aGk="}`, clientFrame{}, codeBadFrame},
		{"file without kind", `{"type":"file","content":"aGk="}`, clientFrame{}, codeBadFrame},
		{"file empty", `{"type":"file","kind":"photo","content":""}`, clientFrame{}, codeBadFrame},
		{"file not base64", `{"type":"file","kind":"photo","content":"!!"}`, clientFrame{}, codeBadJSON},
		{"file caption too long", `{"type":"file","kind":"photo","content":"aGk=","caption":"` + strings.Repeat("c", maxTextBytes+1) + `"}`, clientFrame{}, codeBadFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeClientFrame([]byte(tt.in))
			if tt.code == "" {
				if err != nil || !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("decode = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			var fe *frameError
			if !errors.As(err, &fe) || fe.Code != tt.code || fe.Text == "" || fe.Ref != tt.want.Ref {
				t.Fatalf("decode = %+v, %v; want error %q with ref %q", got, err, tt.code, tt.want.Ref)
			}
		})
	}
}

func TestCleanName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Ann", "Ann"},
		{"  Ann  ", "Ann"},
		{"A\u202enn", "Ann"},     // right-to-left override
		{"A\x00n\x1bn\n", "Ann"}, // control characters
		{"\xffAnn", "Ann"},       // invalid UTF-8
		{"\u200b", ""},           // only a zero-width space
		{strings.Repeat("é", 70), strings.Repeat("é", 64)},
		{"Ann " + strings.Repeat("x", 60) + "   yyy", "Ann " + strings.Repeat("x", 60)},
	}
	for _, tt := range tests {
		if got := cleanName(tt.in); got != tt.want {
			t.Errorf("cleanName(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestValidChatID(t *testing.T) {
	for id, want := range map[string]bool{
		"abc": true, "A-b_9": true, "room:lobby": true, "room:Café": true,
		"": false, "room:": false, "room:a b": false, "a:b": false, "a b": false,
		strings.Repeat("a", 64): true, strings.Repeat("a", 65): false,
		"room:" + strings.Repeat("é", 64): true, "room:" + strings.Repeat("é", 65): false,
	} {
		if got := validChatID(id); got != want {
			t.Errorf("validChatID(%q) = %v; want %v", id, got, want)
		}
	}
}

func TestEncodeHistory(t *testing.T) {
	msgs := [][]byte{[]byte(`{"id":"1"}`), []byte(`{"id":"2"}`)}
	for _, in := range [][][]byte{nil, msgs} {
		h := newHistoryFrame(historyHead{Chat: wireChat{ID: "c\"\u2028"}, MaxText: 3}, in)
		b := h.bytes()
		if len(b) != h.size {
			t.Errorf("history frame of %d bytes; size says %d", len(b), h.size)
		}
		var f struct {
			Type     string            `json:"type"`
			Chat     wireChat          `json:"chat"`
			MaxText  int               `json:"max_text"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("history frame %s: %v", b, err)
		}
		if f.Type != "history" || f.Chat.ID != "c\"\u2028" || f.MaxText != 3 || len(f.Messages) != len(in) || f.Messages == nil {
			t.Errorf("history frame = %s", b)
		}
	}
	var m struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(encodeMessageFrame("echo", msgs[0]), &m); err != nil || m.Type != "echo" || string(m.Message) != string(msgs[0]) {
		t.Errorf("message frame = %+v, %v", m, err)
	}
}

// FuzzDecodeClientFrame checks that no input makes the decoder panic, and
// that whatever it accepts is a known frame type with valid fields.
func FuzzDecodeClientFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","chat_id":"abc","user_id":"u","name":"Ann","room":""}`,
		`{"type":"hello","room":"lobby"}`,
		`{"type":"message","text":"/ping"}`,
		`{"type":"callback","data":"yes","message_id":"17"}`,
		`{"type":"name","name":"Bob"}`,
		`{"type":"x"}`, `{"type":5}`, `null`, `[]`, `{`, `{"type":"hello"} x`, "",
		`{"type":"message","text":"\ud800"}`, `{"type":"hello","name":"\u202e"}`,
		`{"type":"message","text":"x","ref":"r1"}`, `{"type":"x","ref":"r2"}`,
		`{"type":"file","kind":"photo","file_name":"a/b.png","mime":"image/png","content":"aGk=","caption":"c"}`,
		`{"type":"file","kind":"document","file_name":"..","mime":"x","content":"!"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decodeClientFrame(data)
		if err != nil {
			var fe *frameError
			if !errors.As(err, &fe) || fe.Code == "" || fe.Text == "" {
				t.Fatalf("error %v is not a complete frameError", err)
			}
			if len(fe.Text) > 2*errorTextLimit || len(fe.Ref) > maxRefBytes {
				t.Fatalf("error text of %d bytes, ref of %d", len(fe.Text), len(fe.Ref))
			}
			return
		}
		if len(fr.Ref) > maxRefBytes {
			t.Fatalf("accepted a ref of %d bytes", len(fr.Ref))
		}
		switch fr.Type {
		case frameHello:
			if fr.ChatID != "" && !validID(fr.ChatID) || fr.UserID != "" && !validID(fr.UserID) ||
				fr.Room != "" && !validRoom(fr.Room) || fr.Room != "" && fr.ChatID != "" {
				t.Fatalf("accepted invalid hello %+v", fr)
			}
		case frameMessage:
			if strings.TrimSpace(fr.Text) == "" || len(fr.Text) > maxTextBytes {
				t.Fatalf("accepted invalid message %+v", fr)
			}
		case frameFile:
			if !uploadKinds[fr.Kind] || len(fr.Content) == 0 || len(fr.Caption) > maxTextBytes ||
				strings.ContainsAny(fr.FileName, `/\`) || fr.FileName == ".." || utf8.RuneCountInString(fr.FileName) > maxFileName ||
				strings.ContainsFunc(fr.FileName, unicode.IsControl) || strings.Contains(fr.MIME, ";") {
				t.Fatalf("accepted invalid file %+v", fr)
			}
		case frameCallback:
			if fr.Data == "" || !validMessageID(fr.MessageID) {
				t.Fatalf("accepted invalid callback %+v", fr)
			}
		case frameName:
		default:
			t.Fatalf("accepted unknown type %q", fr.Type)
		}
		if !utf8.ValidString(fr.Name) || utf8.RuneCountInString(fr.Name) > maxNameRunes {
			t.Fatalf("name %q not cleaned", fr.Name)
		}
	})
}
