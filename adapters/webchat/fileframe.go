package webchat

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
)

// errLargeFrame is why a frame over ReadLimit was refused: it is not a
// JSON object, its content is not base64, or it holds more than
// uploadOverhead bytes besides its content. Such a frame closes the
// connection with 1009, as any frame over ReadLimit that is not a file
// does.
var errLargeFrame = errors.New("webchat: a frame over the read limit that is not a valid file frame")

// streamBuffer is the buffer a frame over ReadLimit is read through.
const streamBuffer = 32 << 10

// overMark stands for the content of a file frame whose file was over
// its sink's limit.
var overMark = []byte{0}

// contentSink takes the decoded bytes of a file frame's content: it
// holds them in buf, up to limit, and notes a file larger than that
// instead of keeping it.
type contentSink struct {
	buf   []byte // where the bytes go; len(buf) >= limit
	limit int
	n     int  // bytes held
	over  bool // the content is larger than limit; buf holds none of it
}

func (s *contentSink) reset() { s.n, s.over = 0, false }

func (s *contentSink) write(p []byte) {
	switch {
	case s.over:
	case s.n+len(p) > s.limit:
		s.n, s.over = 0, true
	default:
		s.n += copy(s.buf[s.n:], p)
	}
}

// parseLargeFrame reads a frame over ReadLimit from r, a file frame, as
// it arrives: the base64 of its content is decoded straight into sink,
// so the frame is never held whole, and the rest of it, at most maxRest
// bytes, is decoded as decodeClientFrame decodes a frame. It accepts
// exactly the frames decodeClientFrame accepts, with the content the
// sink holds (nil when the sink is over its limit, which the caller
// checks, and the frame's Content is then a placeholder); any refusal is
// errLargeFrame or a *frameError, either of which closes the connection.
func parseLargeFrame(r io.Reader, sink *contentSink, maxRest int) (clientFrame, bool, error) {
	return parseFrameStream(bufio.NewReaderSize(r, streamBuffer), sink, maxRest)
}

// parseFrameStream is parseLargeFrame reading through br.
func parseFrameStream(br *bufio.Reader, sink *contentSink, maxRest int) (clientFrame, bool, error) {
	p := &frameStream{br: br, sink: sink, maxRest: maxRest}
	rest, err := p.parse()
	if err != nil {
		return clientFrame{}, false, err
	}
	var content []byte
	switch {
	case sink.over:
		// Not kept, but there: the frame is checked as the file frame
		// it is, and the caller refuses the file for its size.
		content = overMark
	case sink.n > 0:
		content = sink.buf[:sink.n:sink.n]
	}
	f, err := decodeFrame(rest, &content)
	return f, sink.over, err
}

// frameStream parses one JSON object, the frame, from br. It copies the
// members other than the content into rest, as a JSON object of their
// own, and decodes the content into sink.
type frameStream struct {
	br      *bufio.Reader
	sink    *contentSink
	rest    []byte
	maxRest int
	members int // members copied to rest
	b64     base64Stream
}

// parse reads the frame and returns the object of its other members.
func (p *frameStream) parse() ([]byte, error) {
	p.b64.sink = p.sink
	c, err := p.next()
	if err != nil || c != '{' {
		return nil, errLargeFrame
	}
	p.rest = append(p.rest, '{')
	if c, err = p.next(); err != nil {
		return nil, errLargeFrame
	}
	if c != '}' {
		for {
			if c != '"' {
				return nil, errLargeFrame
			}
			if err := p.member(); err != nil {
				return nil, err
			}
			if c, err = p.next(); err != nil {
				return nil, errLargeFrame
			}
			if c == '}' {
				break
			}
			if c != ',' {
				return nil, errLargeFrame
			}
			if c, err = p.next(); err != nil {
				return nil, errLargeFrame
			}
		}
	}
	// Nothing but white space may follow.
	if _, err := p.next(); err != io.EOF {
		return nil, errLargeFrame
	}
	return append(p.rest, '}'), nil
}

// member reads one member, its key's opening quote already read: the
// content is decoded into the sink, any other member copied to rest.
func (p *frameStream) member() error {
	start := len(p.rest)
	if p.members > 0 {
		p.rest = append(p.rest, ',')
	}
	keyStart := len(p.rest)
	p.rest = append(p.rest, '"')
	if err := p.copyString(); err != nil {
		return err
	}
	key := p.rest[keyStart:]
	if c, err := p.next(); err != nil || c != ':' {
		return errLargeFrame
	}
	c, err := p.next()
	if err != nil {
		return errLargeFrame
	}
	if isContentKey(key) {
		p.rest = p.rest[:start]
		return p.content(c)
	}
	p.rest = append(p.rest, ':')
	if err := p.copyValue(c); err != nil {
		return err
	}
	p.members++
	return nil
}

// isContentKey reports whether key, a JSON string as it came, names the
// file's content: as decodeClientFrame's decoder matches keys to fields
// (without regard to case, after unescaping), which the decoder itself
// is asked, for a key that is not plainly "content".
func isContentKey(key []byte) bool {
	if string(key) == `"content"` {
		return true
	}
	if len(key) > 64 { // no spelling of content, escapes included, is this long
		return false
	}
	var probe struct {
		Content json.RawMessage `json:"content"`
	}
	obj := append(append([]byte{'{'}, key...), `:0}`...)
	return json.Unmarshal(obj, &probe) == nil && probe.Content != nil
}

// content decodes the content's value, whose first byte is c, into the
// sink: a string of base64, or null. A later content member replaces an
// earlier one, as with decodeClientFrame.
func (p *frameStream) content(c byte) error {
	p.sink.reset()
	switch c {
	case 'n':
		for _, want := range []byte("ull") {
			if b, err := p.br.ReadByte(); err != nil || b != want {
				return errLargeFrame
			}
		}
		return nil
	case '"':
		p.b64.reset()
		if err := p.decodeString(); err != nil {
			return err
		}
		return p.b64.end()
	default:
		return errLargeFrame
	}
}

// decodeString reads the rest of the content's string, its opening
// quote read, and feeds the characters it stands for to the base64
// decoder. The base64 alphabet and "=" stand for themselves; escapes
// that stand for one of them, or for a line break (which base64 skips),
// are allowed; anything else cannot be base64, so the frame is refused.
func (p *frameStream) decodeString() error {
	for {
		chunk, err := p.br.ReadSlice('"')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return errLargeFrame
		}
		end := err == nil
		if end {
			chunk = chunk[:len(chunk)-1]
		}
		for i := 0; i < len(chunk); i++ {
			// A run of base64, as nearly all of it is, goes at once.
			j := i
			for j < len(chunk) && isBase64[chunk[j]] {
				j++
			}
			if j > i {
				if err := p.b64.addRun(chunk[i:j]); err != nil {
					return err
				}
				i = j - 1
				continue
			}
			if chunk[i] != '\\' {
				return errLargeFrame
			}
			// An escape. It may run past the chunk, into the reader,
			// unless a quote ended the chunk: that quote would then be
			// part of the escape, which is never base64.
			e, used, ok := p.escape(chunk[i+1:], !end)
			if !ok {
				return errLargeFrame
			}
			i += used
			switch {
			case e == '\n' || e == '\r':
			case base64Char(e):
				if err := p.b64.add(e); err != nil {
					return err
				}
			default:
				return errLargeFrame
			}
		}
		if end {
			return nil
		}
	}
}

// escape reads the escape after a backslash from rest, the chunk's bytes
// after it, and, if more are needed and canRead, from the reader, which
// invalidates the chunk (the escape then takes all of rest). It returns
// the ASCII character the escape stands for and how many bytes of rest
// it took; only escapes of ASCII characters are ok, since others cannot
// be base64.
func (p *frameStream) escape(rest []byte, canRead bool) (char byte, used int, ok bool) {
	var buf [5]byte
	n, need := 0, 1
	for n < need {
		var b byte
		if used < len(rest) {
			b = rest[used]
			used++
		} else {
			var err error
			if !canRead {
				return 0, used, false
			}
			if b, err = p.br.ReadByte(); err != nil {
				return 0, used, false
			}
		}
		buf[n] = b
		n++
		if n == 1 && b == 'u' {
			need = 5
		}
	}
	switch buf[0] {
	case '/':
		return '/', used, true
	case 'n':
		return '\n', used, true
	case 'r':
		return '\r', used, true
	case 'u':
		var v int
		for _, h := range buf[1:5] {
			d, ok := hexDigit(h)
			if !ok {
				return 0, used, false
			}
			v = v<<4 | d
		}
		if v >= 0x80 {
			return 0, used, false
		}
		return byte(v), used, true
	}
	return 0, used, false // \" \\ \b \f \t stand for what base64 refuses
}

func hexDigit(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// base64Char reports whether c is in the standard base64 alphabet or is
// its padding.
func base64Char(c byte) bool { return isBase64[c] }

// isBase64 says which bytes base64Char accepts.
var isBase64 = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") {
		t[c] = true
	}
	return t
}()

// copyString copies the rest of a JSON string, its opening quote already
// copied, to rest, as it came: escapes are checked later, when rest is
// decoded. A control character, which JSON does not allow in a string,
// is refused at once.
func (p *frameStream) copyString() error {
	for {
		b, err := p.br.ReadByte()
		if err != nil || b < 0x20 {
			return errLargeFrame
		}
		if err := p.put(b); err != nil {
			return err
		}
		switch b {
		case '"':
			return nil
		case '\\':
			e, err := p.br.ReadByte()
			if err != nil || e < 0x20 {
				return errLargeFrame
			}
			if err := p.put(e); err != nil {
				return err
			}
		}
	}
}

// copyValue copies a JSON value other than the content, whose first byte
// is c, to rest: a string, an object or array to its matching end, or a
// number or literal to the next delimiter. It finds where the value ends;
// decoding rest checks the value itself.
func (p *frameStream) copyValue(c byte) error {
	switch c {
	case '"':
		if err := p.put(c); err != nil {
			return err
		}
		return p.copyString()
	case '{', '[':
		if err := p.put(c); err != nil {
			return err
		}
		depth := 1
		for depth > 0 {
			b, err := p.br.ReadByte()
			if err != nil {
				return errLargeFrame
			}
			if err := p.put(b); err != nil {
				return err
			}
			switch b {
			case '"':
				if err := p.copyString(); err != nil {
					return err
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
		}
		return nil
	default:
		b := c
		for {
			if err := p.put(b); err != nil {
				return err
			}
			var err error
			if b, err = p.br.ReadByte(); err != nil {
				return errLargeFrame
			}
			if isSpace(b) || b == ',' || b == '}' || b == ']' {
				return p.br.UnreadByte()
			}
		}
	}
}

// put appends b to rest, refusing a frame whose members besides its
// content pass maxRest bytes.
func (p *frameStream) put(b byte) error {
	if len(p.rest) >= p.maxRest {
		return errLargeFrame
	}
	p.rest = append(p.rest, b)
	return nil
}

// next returns the next byte that is not JSON white space; io.EOF at the
// end of the frame.
func (p *frameStream) next() (byte, error) {
	for {
		b, err := p.br.ReadByte()
		if err != nil {
			return 0, err
		}
		if !isSpace(b) {
			return b, nil
		}
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// base64Stream decodes standard base64 as its characters come, line
// breaks already left out, as base64.StdEncoding.Decode decodes it whole:
// in quanta of four characters, the last of which may be padded, and
// nothing after the padding.
type base64Stream struct {
	sink   *contentSink
	q      [16 << 10]byte // characters not decoded yet
	n      int
	padded bool // a padded quantum was decoded: it was the last
	out    [12 << 10]byte
}

func (d *base64Stream) reset() { d.n, d.padded = 0, false }

// add takes one character of the alphabet or padding.
func (d *base64Stream) add(c byte) error {
	if d.padded {
		return errLargeFrame
	}
	d.q[d.n] = c
	d.n++
	if d.n == len(d.q) {
		return d.flush()
	}
	return nil
}

// addRun takes characters of the alphabet or padding.
func (d *base64Stream) addRun(p []byte) error {
	for len(p) > 0 {
		if d.padded {
			return errLargeFrame
		}
		n := copy(d.q[d.n:], p)
		d.n += n
		p = p[n:]
		if d.n == len(d.q) {
			if err := d.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush decodes the whole quanta held.
func (d *base64Stream) flush() error {
	k := d.n &^ 3
	if k == 0 {
		return nil
	}
	m, err := base64.StdEncoding.Decode(d.out[:], d.q[:k])
	if err != nil {
		return errLargeFrame
	}
	if d.q[k-1] == '=' {
		d.padded = true
	}
	d.sink.write(d.out[:m])
	d.n = copy(d.q[:], d.q[k:d.n])
	return nil
}

// end decodes what is left at the end of the string, which must be
// whole quanta.
func (d *base64Stream) end() error {
	if d.n%4 != 0 {
		return errLargeFrame
	}
	return d.flush()
}
