package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// TestRecordRoundTrip encodes records with and without file bytes and
// reads them back: a record whose files carry no bytes is plain JSON, one
// whose files do keeps them apart, as they are, and the caller's
// attachments keep their bytes.
func TestRecordRoundTrip(t *testing.T) {
	parallel(t, 0)
	file := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1000)
	msg := func(ats ...platform.Attachment) platform.SendRequest {
		return platform.SendRequest{Platform: "webchat", Target: platform.Chat{ID: "c1"},
			Message: platform.OutboundMessage{Text: "hi", Attachments: ats}}
	}
	tests := []struct {
		name  string
		value any // a pointer to the record's value
		frame bool
	}{
		{"send of text", &sendData{ID: "s1", Request: msg()}, false},
		{"send by file ID", &sendData{Request: msg(platform.Attachment{Kind: platform.AttachPhoto, FileID: "f"})}, false},
		{"send of bytes", &sendData{ID: "s2", Request: msg(
			platform.Attachment{Kind: platform.AttachPhoto, FileID: "f"},
			platform.Attachment{Kind: platform.AttachDocument, Data: file, FileName: "a.bin"},
			platform.Attachment{Kind: platform.AttachDocument, Data: []byte("x")})}, true},
		{"event with bytes", &platform.Event{ID: "e1", Platform: "webchat", Attachments: []platform.Attachment{{Kind: platform.AttachVoice, Data: file}}}, true},
		{"dead letter with bytes", &sender.DeadLetter{Request: msg(platform.Attachment{Kind: platform.AttachDocument, Data: file}), Attempts: 3}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, _ := json.Marshal(tt.value)
			before := reflect.ValueOf(tt.value).Elem().Interface()
			cp := reflect.New(reflect.TypeOf(before))
			cp.Elem().Set(reflect.ValueOf(before))
			pieces, err := encodeRecord(cp.Interface())
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(tt.value); !bytes.Equal(got, want) {
				t.Fatal("encoding changed the caller's value")
			}
			data := joinPieces(pieces)
			if frame := bytes.HasPrefix(data, []byte(recordMagic)); frame != tt.frame {
				t.Fatalf("frame = %v, want %v", frame, tt.frame)
			}
			if tt.frame && int64(len(data)) > int64(len(want))*9/10 {
				t.Errorf("a frame of %d bytes for %d bytes of JSON: the files are not kept as they are", len(data), len(want))
			}
			var r bytes.Buffer
			if _, err := r.ReadFrom(piecesReader(pieces)); err != nil || !bytes.Equal(r.Bytes(), data) {
				t.Fatalf("piecesReader gives %d bytes (%v), want the %d joined", r.Len(), err, len(data))
			}
			got := reflect.New(reflect.TypeOf(before))
			if err := decodeRecord(data, got.Interface()); err != nil {
				t.Fatal(err)
			}
			if gotJSON, _ := json.Marshal(got.Interface()); !bytes.Equal(gotJSON, want) {
				t.Fatalf("read back\n%s\nwant\n%s", gotJSON, want)
			}
			// What was written as JSON before frames existed still reads.
			old := reflect.New(reflect.TypeOf(before))
			if err := decodeRecord(want, old.Interface()); err != nil || !reflect.DeepEqual(old.Elem().Interface(), got.Elem().Interface()) {
				t.Fatalf("plain JSON reads as %+v (%v)", old.Elem().Interface(), err)
			}
		})
	}
}

// TestRecordFrameRefused reads frames that are cut short, name an
// attachment the record does not have or carry bytes after the last file:
// each is an error wrapping errBadRecord.
func TestRecordFrameRefused(t *testing.T) {
	parallel(t, 0)
	pieces, err := encodeRecord(&sendData{Request: platform.SendRequest{Message: platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("abcdef")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	good := joinPieces(pieces)
	bad := map[string][]byte{
		"cut in the file":   good[:len(good)-2],
		"cut in the header": good[:len(recordMagic)],
		"trailing bytes":    append(bytes.Clone(good), 'x'),
	}
	// The file named for attachment 5 of a record with one.
	wrong := bytes.Clone(good)
	i := bytes.LastIndex(wrong, []byte("abcdef")) - 3 // list, index, length
	wrong[i+1] = 5
	bad["no such attachment"] = wrong
	for name, data := range bad {
		var d sendData
		if err := decodeRecord(data, &d); !errors.Is(err, errBadRecord) {
			t.Errorf("%s: err = %v, want errBadRecord", name, err)
		}
	}
}

// FuzzDecodeRecord reads any bytes as a record: an error or a value, never
// a panic, and a value whose files lie within the bytes read.
func FuzzDecodeRecord(f *testing.F) {
	pieces, _ := encodeRecord(&sendData{ID: "s", Request: platform.SendRequest{Message: platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("abc")}, {Kind: platform.AttachPhoto, Data: []byte("de")}}}}})
	f.Add(joinPieces(pieces))
	f.Add([]byte(`{"id":"s","request":{"target":{"id":"c"},"message":{"text":"hi"}}}`))
	f.Add([]byte(recordMagic + "\x02{}\x01\x00\x00\x01a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d sendData
		if decodeRecord(data, &d) != nil {
			return
		}
		total := 0
		for _, at := range d.Request.Message.Attachments {
			total += len(at.Data)
		}
		if total > len(data) {
			t.Fatalf("%d bytes of files from a record of %d", total, len(data))
		}
	})
}

// BenchmarkEncodeRecord: the JSON of a reply's record and of an event's
// (with its update's JSON in Raw, as the Telegram adapter makes it), as
// the journal writes them for each /ping. It measures whether a compact
// encoding would be worth a second format: 6 December 2026, 0.8 µs for
// the reply and 3.3 µs for the event (6.3–7.6 µs before the event's
// MarshalJSON was called directly, its Raw checked once), against 130–160
// µs of CPU an event costs end to end on the embedded server
// (BenchmarkJournalEvent): about 3%, so the records stay JSON.
//
// Run: go test -run='^$' -bench=EncodeRecord -benchmem ./cluster
func BenchmarkEncodeRecord(b *testing.B) {
	chat := platform.Chat{ID: "12345", Type: platform.ChatPrivate}
	b.Run("reply", func(b *testing.B) {
		req := platform.SendRequest{Platform: "telegram", Target: chat, Message: platform.TextMessage("pong")}
		for b.Loop() {
			if _, err := encodeRecord(&sendData{ID: "telegram:12345:99/0", Request: req}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("event", func(b *testing.B) {
		ev := platform.Event{ID: "telegram:12345:99", Platform: "telegram", Kind: platform.EventMessage, Chat: chat,
			From: platform.User{ID: "12345", Name: "user"}, Text: "/ping", Time: time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC),
			Raw: json.RawMessage(`{"update_id":99,"message":{"message_id":4,"from":{"id":12345,"is_bot":false,"first_name":"user",` +
				`"language_code":"en"},"chat":{"id":12345,"first_name":"user","type":"private"},"date":1796547600,"text":"/ping",` +
				`"entities":[{"offset":0,"length":5,"type":"bot_command"}]}}`)}
		for b.Loop() {
			e := ev
			if _, err := encodeRecord(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
