package onebot

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/heraldbot/herald/platform"
)

func msgEqual(a, b Message) bool {
	return slices.EqualFunc(a, b, func(x, y Segment) bool { return x.Type == y.Type && maps.Equal(x.Data, y.Data) })
}

func seg(typ string, kv ...string) Segment {
	s := Segment{Type: typ, Data: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Data[kv[i]] = kv[i+1]
	}
	return s
}

func TestParseCQ(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Message
	}{
		{"empty", "", nil},
		{"plain", "hello", Message{Text("hello")}},
		{"text escapes", "a &amp; b &#91;x&#93;", Message{Text("a & b [x]")}},
		{"comma escape stays in text", "a&#44;b", Message{Text("a&#44;b")}},
		{"double escape unescaped once", "&amp;#91;", Message{Text("&#91;")}},
		{"image", "[CQ:image,file=123.jpg]", Message{seg("image", "file", "123.jpg")}},
		{"mixed", "hi [CQ:at,qq=10001] there[CQ:face,id=14]", Message{
			Text("hi "), seg("at", "qq", "10001"), Text(" there"), seg("face", "id", "14"),
		}},
		{"param escapes", "[CQ:share,url=http://x/?a=1&amp;b=2,title=a&#44;b&#91;c&#93;]", Message{
			seg("share", "url", "http://x/?a=1&b=2", "title", "a,b[c]"),
		}},
		{"reply first", "[CQ:reply,id=-42]ok", Message{seg("reply", "id", "-42"), Text("ok")}},
		{"no params", "[CQ:shake]", Message{seg("shake")}},
		{"param without =", "[CQ:x,flag]", Message{seg("x", "flag", "")}},
		{"value with =", "[CQ:x,k=a=b]", Message{seg("x", "k", "a=b")}},
		{"repeated param last wins", "[CQ:x,k=1,k=2]", Message{seg("x", "k", "2")}},
		{"unterminated", "a [CQ:image,file=1", Message{Text("a [CQ:image,file=1")}},
		{"empty type", "a[CQ:]b", Message{Text("a[CQ:]b")}},
		{"empty type with params", "[CQ:,k=v]", Message{Text("[CQ:,k=v]")}},
		{"cq text merges", "a[CQ:text,text=b&#44;c]d", Message{Text("ab,cd")}},
		{"empty cq text dropped", "[CQ:text,text=]", nil},
		{"lone brackets", "] [ [C", Message{Text("] [ [C")}},
		{"unicode", "你好[CQ:at,qq=1]😀", Message{Text("你好"), seg("at", "qq", "1"), Text("😀")}},
		// A raw "[" is escaped in every valid CQ string, so one inside a
		// code's brackets ends it as text, and a code may start there.
		{"open then code", "[CQ:[CQ:face,id=1]", Message{Text("[CQ:"), seg("face", "id", "1")}},
		{"empty type then code", "[CQ:,[CQ:face,id=1]", Message{Text("[CQ:,"), seg("face", "id", "1")}},
		{"unclosed code then code", "a[CQ:at,qq=1[CQ:face,id=2]b", Message{Text("a[CQ:at,qq=1"), seg("face", "id", "2"), Text("b")}},
		{"twice open then code", "[CQ:[CQ:[CQ:face,id=1]", Message{Text("[CQ:[CQ:"), seg("face", "id", "1")}},
		{"bracket in value", "[CQ:image,file=a[b]c", Message{Text("[CQ:image,file=a[b]c")}},
		{"lone bracket then code", "[[CQ:face,id=1]", Message{Text("["), seg("face", "id", "1")}},
		{"code then bracket", "[CQ:face,id=1]]", Message{seg("face", "id", "1"), Text("]")}},
		{"escaped open then code", "[CQ:&#91;[CQ:face,id=1]", Message{Text("[CQ:["), seg("face", "id", "1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseCQ(tt.in)
			if !msgEqual(got, tt.want) {
				t.Fatalf("ParseCQ(%q) = %#v; want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestCQ(t *testing.T) {
	tests := []struct {
		segs []Segment
		want string
	}{
		{[]Segment{Text("a&[b],c")}, "a&amp;&#91;b&#93;,c"},
		{[]Segment{At(10001), Text(" hi")}, "[CQ:at,qq=10001] hi"},
		{[]Segment{seg("share", "url", "http://x/?a=1&b=2", "title", "a,b")}, "[CQ:share,title=a&#44;b,url=http://x/?a=1&amp;b=2]"},
		{[]Segment{AtAll()}, "[CQ:at,qq=all]"},
		{[]Segment{Reply("5"), {Type: "shake"}}, "[CQ:reply,id=5][CQ:shake]"},
	}
	for _, tt := range tests {
		if got := CQ(tt.segs...); got != tt.want {
			t.Errorf("CQ(%v) = %q; want %q", tt.segs, got, tt.want)
		}
		if back := ParseCQ(tt.want); !msgEqual(back, normalize(tt.segs)) {
			t.Errorf("ParseCQ(%q) = %v; want %v", tt.want, back, tt.segs)
		}
	}
}

// normalize merges adjacent text segments and drops empty ones, as ParseCQ
// does.
func normalize(segs []Segment) Message {
	var out Message
	for _, s := range segs {
		if s.Type == "text" {
			if s.Data["text"] == "" {
				continue
			}
			if n := len(out); n > 0 && out[n-1].Type == "text" {
				out[n-1] = Text(out[n-1].Data["text"] + s.Data["text"])
				continue
			}
			out = append(out, Text(s.Data["text"]))
			continue
		}
		if s.Data == nil {
			s.Data = map[string]string{}
		}
		out = append(out, s)
	}
	return out
}

func TestMessageJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Message
	}{
		{"cq string", `"a&amp;b[CQ:at,qq=1]"`, Message{Text("a&b"), seg("at", "qq", "1")}},
		{"array", `[{"type":"text","data":{"text":"[CQ:at,qq=1]"}},{"type":"at","data":{"qq":123}}]`,
			Message{Text("[CQ:at,qq=1]"), seg("at", "qq", "123")}},
		{"single segment", `{"type":"face","data":{"id":"14"}}`, Message{seg("face", "id", "14")}},
		{"null", `null`, nil},
		{"non-string data", `[{"type":"x","data":{"b":true,"n":null,"o":{"k":[1, 2]}}}]`,
			Message{seg("x", "b", "true", "n", "", "o", `{"k":[1,2]}`)}},
		{"data missing", `[{"type":"shake"}]`, Message{seg("shake")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Message
			if err := json.Unmarshal([]byte(tt.in), &m); err != nil {
				t.Fatal(err)
			}
			if !msgEqual(m, tt.want) {
				t.Fatalf("got %#v; want %#v", m, tt.want)
			}
		})
	}
	for _, bad := range []string{`1`, `true`, `[1]`, `{"type":1}`} {
		var m Message
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
	b, err := json.Marshal(Message{Text("a"), {Type: "shake"}})
	if err != nil || string(b) != `[{"type":"text","data":{"text":"a"}},{"type":"shake","data":{}}]` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	m := Message{Reply("7"), Text("a"), At(1), Text("b"), AtAll()}
	if m.Text() != "ab" || m.ReplyTo() != "7" || !slices.Equal(m.Mentions(), []string{"1", "all"}) {
		t.Fatalf("Text/ReplyTo/Mentions = %q %q %v", m.Text(), m.ReplyTo(), m.Mentions())
	}
}

func FuzzParseCQ(f *testing.F) {
	for _, s := range []string{
		"", "hello", "[CQ:image,file=1.jpg]", "a&amp;b&#91;c&#93;d&#44;", "[CQ:at,qq=1]x[CQ:face,id=2]",
		"[CQ:", "[CQ:]", "[CQ:,]", "[CQ:a,=]", "[CQ:text,text=&#44;]", "[CQ:a,k=v=w,k2]", "&&amp;amp;", "]]][[[",
		"\xff\xfe", "[CQ:x&#44;y,k&#93;=v]", "[CQ:[CQ:face,id=1]", "[CQ:,[CQ:face,id=1]",
		"[CQ:image,file=a.image,subType=1,url=https://x/y&#44;z]", "[CQ:record,file=base64://AA==,file_size=12]",
		"[CQ:video,file=https://v/1.mp4,size=-3][CQ:file,file=r.pdf,file_id=/9,name=,size=99999999999999999999]",
		"[CQ:image][CQ:file,file_id=]", "[CQ:image,sub_type=1,file=HTTPS://X]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := ParseCQ(s)
		checkAttachments(t, m, attachmentsOf(m))
		// Parsing gives normalized messages: no empty or adjacent text.
		if !msgEqual(m, normalize(m)) {
			t.Fatalf("ParseCQ(%q) = %#v: not normalized", s, m)
		}
		// Whatever comes before it, a valid code stays a code.
		face := seg("face", "id", "1")
		if got := ParseCQ(s + CQ(face)); len(got) == 0 || !msgEqual(got[len(got)-1:], Message{face}) {
			t.Fatalf("ParseCQ(%q + a face code) = %#v; want it to end with the face", s, got)
		}
		// Text escapes round-trip exactly.
		if got := UnescapeText(EscapeText(s)); got != s {
			t.Fatalf("UnescapeText(EscapeText(%q)) = %q", s, got)
		}
		want := Message(nil)
		if s != "" {
			want = Message{Text(s)}
		}
		if got := ParseCQ(EscapeText(s)); !msgEqual(got, want) {
			t.Fatalf("ParseCQ(EscapeText(%q)) = %#v", s, got)
		}
		// Formatting and parsing again is the identity on parsed messages.
		if again := ParseCQ(CQ(m...)); !msgEqual(again, m) {
			t.Fatalf("ParseCQ(CQ(ParseCQ(%q))) = %#v; want %#v (CQ %q)", s, again, m, CQ(m...))
		}
	})
}

// FuzzParseCQCodeAfterGarbage checks that no text before a valid CQ code
// can swallow it. garbage is any string at all, brackets and unfinished
// codes included, and code is a valid code built from typ, key and val;
// ParseCQ(garbage + code) always ends with that code as a segment. With
// escaped text around the code instead, the message round-trips exactly.
func FuzzParseCQCodeAfterGarbage(f *testing.F) {
	for _, tc := range [][4]string{
		{"[CQ:", "face", "id", "1"},
		{"[CQ:,", "face", "id", "1"},
		{"[CQ:at,qq=1", "face", "id", "2"},
		{"a[CQ:x,k=", "image", "file", "a,b[c]&d"},
		{"[", "at", "qq", "all"},
		{"[CQ", "x,y", "k]", "v["},
		{"&#9", "share", "", ""},
		{"[CQ:text,text=", "reply", "id", "-5"},
	} {
		f.Add(tc[0], tc[1], tc[2], tc[3])
	}
	f.Fuzz(func(t *testing.T, garbage, typ, key, val string) {
		if typ == "" || typ == "text" || strings.Contains(key, "=") {
			return // not a code CQ can write: no type, a text segment, a key ParseCQ would split
		}
		code := Segment{Type: typ, Data: map[string]string{key: val}}
		in := garbage + CQ(code)
		m := ParseCQ(in)
		if len(m) == 0 || !msgEqual(m[len(m)-1:], Message{code}) {
			t.Fatalf("ParseCQ(%q) = %#v; want it to end with %#v", in, m, code)
		}
		around := CQ(Text(garbage), code, Text(garbage))
		if got, want := ParseCQ(around), normalize([]Segment{Text(garbage), code, Text(garbage)}); !msgEqual(got, want) {
			t.Fatalf("ParseCQ(%q) = %#v; want %#v", around, got, want)
		}
	})
}

// checkAttachments checks the attachments decoded from m: one per media
// segment, in order, each of a kind it may have, naming no file only when
// its segment names none, with no negative size and nothing of an
// outbound attachment (bytes, a caption) set.
func checkAttachments(t *testing.T, m Message, ats []platform.Attachment) {
	t.Helper()
	var media []Segment
	for _, s := range m {
		if _, ok := segmentKinds[s.Type]; ok {
			media = append(media, s)
		}
	}
	if len(ats) != len(media) || (len(media) == 0 && ats != nil) {
		t.Fatalf("%d attachments %+v from %d media segments of %#v", len(ats), ats, len(media), m)
	}
	for i, at := range ats {
		s := media[i]
		kinds := map[string][]platform.AttachmentKind{
			"image": {platform.AttachPhoto, platform.AttachSticker}, "record": {platform.AttachVoice},
			"video": {platform.AttachVideo}, "file": {platform.AttachDocument},
		}[s.Type]
		switch {
		case !slices.Contains(kinds, at.Kind):
			t.Fatalf("attachment %d of a %s segment has kind %q", i, s.Type, at.Kind)
		case at.Size < 0 || at.Data != nil || at.Caption != "":
			t.Fatalf("attachment %d = %+v", i, at)
		case at.FileID == "" && at.URL == "" && named(s):
			t.Fatalf("attachment %d of %#v names no file", i, s)
		case strings.HasPrefix(at.FileID, "base64://"):
			t.Fatalf("attachment %d has the file's bytes as its ID", i)
		}
	}
}

// named reports whether a media segment names its file: by a url, or by a
// file parameter (a file segment's file_id, when it has one) that is not
// the file's bytes.
func named(s Segment) bool {
	src := s.Data["file"]
	if id := s.Data["file_id"]; s.Type == "file" && id != "" {
		src = id
	}
	return s.Data["url"] != "" || (src != "" && !strings.HasPrefix(src, "base64://"))
}
