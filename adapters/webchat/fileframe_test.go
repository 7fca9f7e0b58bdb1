package webchat

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"reflect"
	"strings"
	"testing"
)

// streamDecode parses data as a frame over ReadLimit, read in pieces of
// piece bytes through a buffer of bufSize, with room for a file of limit
// bytes.
func streamDecode(data []byte, piece, bufSize, limit int) (clientFrame, bool, error) {
	sink := &contentSink{buf: make([]byte, limit), limit: limit}
	return parseFrameStream(bufio.NewReaderSize(&pieceReader{data: data, piece: piece}, bufSize), sink, len(data)+1)
}

// pieceReader returns data at most piece bytes at a time, as a network
// does.
type pieceReader struct {
	data  []byte
	piece int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.piece)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// sameDecoding fails t unless parseLargeFrame accepts data exactly when
// decodeClientFrame does, with the same frame.
func sameDecoding(t *testing.T, data []byte) {
	t.Helper()
	want, werr := decodeClientFrame(data)
	for _, read := range []struct{ piece, buf int }{{1, 16}, {7, 16}, {5, 17}, {4096, 4096}, {len(data) + 1, streamBuffer}} {
		piece := read.piece
		got, over, gerr := streamDecode(data, piece, read.buf, len(data)+8)
		if over {
			t.Fatalf("%q: over a limit larger than the frame", trunc(data))
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q in pieces of %d: streamed error %v; whole error %v", trunc(data), piece, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if len(want.Content) == 0 && len(got.Content) == 0 {
			want.Content, got.Content = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q in pieces of %d: streamed %+v; whole %+v", trunc(data), piece, got, want)
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// TestParseLargeFrame: streamed, a frame decodes as it does whole, with
// its content escaped, split, repeated, null, or not base64, and with
// members around it of every JSON type.
func TestParseLargeFrame(t *testing.T) {
	file := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("herald\x00\xff"), 3000))
	for _, s := range []string{
		`{"type":"file","kind":"photo","file_name":"a.png","mime":"image/png","content":"` + file + `","caption":"c","ref":"f1"}`,
		` {"content":"` + file + `","type":"file","kind":"document"} ` + "\n",
		`{"type":"file","kind":"document","content":"aGVy\nbGFk"}`,
		`{"type":"file","kind":"document","content":"aGVy\r\nbGFk\u003d"}`, // not valid base64 at the end
		`{"type":"file","kind":"document","content":"aGVyb\u0047Fk"}`,
		`{"type":"file","kind":"document","content":"aGVyb\/Fk"}`,
		`{"type":"file","kind":"document","content":"aGk="}`,
		`{"type":"file","kind":"document","content":"aGk=aGk="}`,
		`{"type":"file","kind":"document","content":"aGk"}`,
		`{"type":"file","kind":"document","content":"aG k="}`,
		`{"type":"file","kind":"document","content":"aGk\t="}`,
		`{"type":"file","kind":"document","content":"aGk\"="}`,
		`{"type":"file","kind":"document","content":"aGk\u00e9="}`,
		`{"type":"file","kind":"document","content":""}`,
		`{"type":"file","kind":"document","content":null}`,
		`{"type":"file","kind":"document","content":5}`,
		`{"type":"file","kind":"document","content":["aGk="]}`,
		`{"type":"file","kind":"document","content":"aGk=","Content":"aGVyYWxk"}`,
		`{"type":"file","kind":"document","CONTENT":"aGk=","content":null}`,
		`{"type":"file","kind":"document","\u0063ontent":"aGk="}`,
		`{"type":"file","kind":"document","content":"aGk=","future":{"a":[1,"]}",{"b":null}],"c":-1.5e3},"t":true,"n":null}`,
		`{"type":"file","kind":"document","content":"aGk=","future":[[[[]]]]}`,
		`{"type":"file","kind":"document","content":"aGk=","future":tru}`,
		`{"type":"file","kind":"document","content":"aGk=","future":01}`,
		`{"type":"file","kind":"document","content":"aGk=",}`,
		`{"type":"file","kind":"document","content":"aGk="}}`,
		`{"type":"file","kind":"document","content":"aGk="} {}`,
		`{"type":"file","kind":"document","content":"aGk="`,
		`{"type":"file","kind":"document","content":"aGk=`,
		`{"type":"file","kind":"photo\n","content":"aGk="}`,
		`{"type":"file","kind":"do\u0063ument","file_name":"\ud800","content":"aGk="}`,
		`{"type":"message","text":"hi","content":"aGk="}`,
		`{"type":"message","text":"hi","content":"!"}`,
		`{"type":5,"content":"aGk="}`,
		`[]`, `null`, `"x"`, ``, `{}`, `{"type":"file"`, "\xef\xbb\xbf{}",
	} {
		sameDecoding(t, []byte(s))
	}
}

// TestParseLargeFrameLimits: content over the sink's limit is noted, not
// kept, and the frame still read to its end; members besides the content
// over maxRest refuse the frame.
func TestParseLargeFrameLimits(t *testing.T) {
	data := []byte(`{"type":"file","kind":"document","content":"` + base64.StdEncoding.EncodeToString(make([]byte, 1000)) + `"}`)
	sink := &contentSink{buf: make([]byte, 999), limit: 999}
	f, over, err := parseLargeFrame(bytes.NewReader(data), sink, 1000)
	if err != nil || !over || f.Type != frameFile {
		t.Fatalf("1000 bytes in a sink of 999: %+v, over %v, %v; want the file frame, over", f, over, err)
	}
	sink = &contentSink{buf: make([]byte, 1000), limit: 1000}
	if f, over, err = parseLargeFrame(bytes.NewReader(data), sink, 1000); err != nil || over || len(f.Content) != 1000 {
		t.Fatalf("1000 bytes in a sink of 1000: %d bytes, over %v, %v", len(f.Content), over, err)
	}
	big := []byte(`{"type":"file","kind":"document","content":"aGk=","caption":"` + strings.Repeat("x", 2000) + `"}`)
	if _, _, err := parseLargeFrame(bytes.NewReader(big), &contentSink{buf: make([]byte, 10), limit: 10}, 1000); err == nil {
		t.Fatal("2000 bytes of caption within maxRest 1000: accepted")
	}
}

// FuzzParseLargeFrame checks the streamed decoding of a frame over
// ReadLimit against decodeClientFrame, the decoder of every other frame:
// it must accept the same frames, with the same fields and content,
// however the frame is split.
func FuzzParseLargeFrame(f *testing.F) {
	for _, s := range []string{
		`{"type":"file","kind":"photo","file_name":"a.png","mime":"image/png","content":"aGVyYWxk","caption":"c","ref":"f1"}`,
		`{"type":"file","kind":"document","content":"aGVy\nbGFk\u003d","x":[{"a":"]"}]}`,
		`{"type":"file","kind":"document","Content":"aGk=","content":null}`,
		`{"type":"message","text":"hi","content":"aGk="}`,
		`{"type":"file","kind":"document","content":"aGk\/"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameDecoding(t, data) })
}

// BenchmarkParseLargeFrame parses a file frame of a 4 MiB file, as a
// tab's frame over ReadLimit is read.
func BenchmarkParseLargeFrame(b *testing.B) {
	file := bytes.Repeat([]byte("herald\x00\xff"), (4<<20)/8)
	data := []byte(`{"type":"file","kind":"document","file_name":"a.bin","content":"` + base64.StdEncoding.EncodeToString(file) + `","caption":"c"}`)
	sink := &contentSink{buf: make([]byte, len(file)), limit: len(file)}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		sink.reset()
		if _, _, err := parseLargeFrame(bytes.NewReader(data), sink, uploadOverhead); err != nil {
			b.Fatal(err)
		}
	}
}
