package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// A record is the JSON of what it keeps (an event, a send, a dead letter),
// unless the files its attachments carry have bytes: those bytes are then
// taken out of the JSON, where base64 would make them a third larger and
// cost an encoding, a decoding and a copy each way, and follow it as they
// are, in a frame of its own:
//
//	"\x00HR1"  uvarint len(json)  json  uvarint parts
//	then for each part: uvarint list  uvarint index  uvarint len  bytes
//
// where list is the place of the attachment list in attachmentLists and
// index the attachment's place in it. No JSON starts with a zero byte, so
// records written before the frame existed still read. A large record goes
// to the object store as the concatenation of its pieces, read from the
// caller's slices, never copied into one buffer first; reading it back
// gives the parts as slices of the one buffer the object is read into.

// recordMagic opens a record in the frame of its own.
const recordMagic = "\x00HR1"

// errBadRecord is wrapped by the error of a record frame that does not
// parse.
var errBadRecord = errors.New("cluster: a record frame that does not parse")

// attachmentLists returns where v, a pointer to a record's value, holds
// attachments: the lists whose files' bytes a frame carries apart.
func attachmentLists(v any) []*[]platform.Attachment {
	switch r := v.(type) {
	case *sendData:
		return []*[]platform.Attachment{&r.Request.Message.Attachments}
	case *platform.Event:
		return []*[]platform.Attachment{&r.Attachments}
	case *sender.DeadLetter:
		return []*[]platform.Attachment{&r.Request.Message.Attachments}
	}
	return nil
}

// encodeRecord returns v's record as pieces to concatenate: its JSON alone
// when none of its attachments carries bytes, else the frame above. v
// points to the caller's copy of the value: its attachment lists are
// replaced by copies without the bytes, and the callers' lists are left as
// they were.
func encodeRecord(v any) ([][]byte, error) {
	type part struct {
		list, index int
		data        []byte
	}
	var parts []part
	for li, l := range attachmentLists(v) {
		var bare []platform.Attachment
		for i, at := range *l {
			if len(at.Data) == 0 {
				continue
			}
			if bare == nil {
				bare = append([]platform.Attachment(nil), *l...)
			}
			parts = append(parts, part{li, i, at.Data})
			bare[i].Data = nil
		}
		if bare != nil {
			*l = bare
		}
	}
	data, err := marshalRecord(v)
	if err != nil || len(parts) == 0 {
		return [][]byte{data}, err
	}
	head := make([]byte, 0, len(recordMagic)+len(data)+2*binary.MaxVarintLen64)
	head = append(head, recordMagic...)
	head = binary.AppendUvarint(head, uint64(len(data)))
	head = append(head, data...)
	head = binary.AppendUvarint(head, uint64(len(parts)))
	pieces := make([][]byte, 0, 1+2*len(parts))
	pieces = append(pieces, head)
	for _, p := range parts {
		h := binary.AppendUvarint(nil, uint64(p.list))
		h = binary.AppendUvarint(h, uint64(p.index))
		h = binary.AppendUvarint(h, uint64(len(p.data)))
		pieces = append(pieces, h, p.data)
	}
	return pieces, nil
}

// marshalRecord returns v's JSON. A value with a MarshalJSON method (an
// event) is asked for it directly: json.Marshal would check and copy what
// the method wrote, which an event's record spent most of its encoding on
// (its update's JSON in Raw scanned a second time).
func marshalRecord(v any) ([]byte, error) {
	if m, ok := v.(json.Marshaler); ok {
		return m.MarshalJSON()
	}
	return json.Marshal(v)
}

// unmarshalRecord decodes the JSON data into v. A value with an
// UnmarshalJSON method (an event) is handed data directly, as
// marshalRecord asks for its MarshalJSON: json.Unmarshal would check the
// whole of data before the method decodes it again (about a fifth of an
// event's decoding).
func unmarshalRecord(data []byte, v any) error {
	if u, ok := v.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(data)
	}
	return json.Unmarshal(data, v)
}

// piecesLen returns the bytes of pieces together.
func piecesLen(pieces [][]byte) int64 {
	var n int64
	for _, p := range pieces {
		n += int64(len(p))
	}
	return n
}

// joinPieces returns pieces as one slice: the piece itself when there is
// one.
func joinPieces(pieces [][]byte) []byte {
	if len(pieces) == 1 {
		return pieces[0]
	}
	return bytes.Join(pieces, nil)
}

// piecesReader reads pieces one after the other, without copying them.
func piecesReader(pieces [][]byte) io.Reader {
	rs := make([]io.Reader, len(pieces))
	for i, p := range pieces {
		rs[i] = bytes.NewReader(p)
	}
	return io.MultiReader(rs...)
}

// decodeRecord decodes a record, JSON or a frame, into v, a pointer to a
// value of the record's type. The bytes of a frame's files are slices of
// data, not copies.
func decodeRecord(data []byte, v any) error {
	if !bytes.HasPrefix(data, []byte(recordMagic)) {
		return unmarshalRecord(data, v)
	}
	r := data[len(recordMagic):]
	next := func() (uint64, error) {
		n, k := binary.Uvarint(r)
		if k <= 0 {
			return 0, fmt.Errorf("%w: a length cut short", errBadRecord)
		}
		r = r[k:]
		return n, nil
	}
	take := func(n uint64) ([]byte, error) {
		if n > uint64(len(r)) {
			return nil, fmt.Errorf("%w: %d bytes announced, %d left", errBadRecord, n, len(r))
		}
		b := r[:n:n]
		r = r[n:]
		return b, nil
	}
	n, err := next()
	if err != nil {
		return err
	}
	js, err := take(n)
	if err != nil {
		return err
	}
	if err := unmarshalRecord(js, v); err != nil {
		return err
	}
	lists := attachmentLists(v)
	count, err := next()
	if err != nil {
		return err
	}
	for range count {
		var idx [3]uint64
		for i := range idx {
			if idx[i], err = next(); err != nil {
				return err
			}
		}
		data, err := take(idx[2])
		if err != nil {
			return err
		}
		if idx[0] >= uint64(len(lists)) || idx[1] >= uint64(len(*lists[idx[0]])) {
			return fmt.Errorf("%w: a file for attachment %d of list %d, which the record does not have", errBadRecord, idx[1], idx[0])
		}
		(*lists[idx[0]])[idx[1]].Data = data
	}
	if len(r) != 0 {
		return fmt.Errorf("%w: %d bytes after the last file", errBadRecord, len(r))
	}
	return nil
}
