package cluster

import (
	"context"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// A send with an ID carries what it sends (journal.Send's Sum and What)
// in two headers of its record, and its delivered mark carries them too,
// so that a handler run again whose send at a place differs from the one
// made there before is found out, in one process or across several.
const (
	hdrSum  = "Herald-Sum"
	hdrWhat = "Herald-What"
)

// sendMsg returns the message of a send's record to subject, with its
// headers: its Msg-Id (unless id is ""), its Sum and What (unless Sum is 0)
// and pairs more (name, value, …) — the values in one allocation, and Sum
// and What formatted into one string.
func sendMsg(subject, id string, s journal.Send, pairs ...string) *nats.Msg {
	n := len(pairs) / 2
	if id != "" {
		n++
	}
	if s.Sum != 0 {
		n += 2
	}
	h := make(nats.Header, n)
	vals := make([]string, 0, n)
	set := func(k, v string) {
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if id != "" {
		set(jetstream.MsgIDHeader, id)
	}
	if s.Sum != 0 {
		var buf [64]byte
		b := strconv.AppendUint(buf[:0], s.Sum, 16)
		mid := len(b)
		both := string(strconv.AppendQuote(b, s.What))
		set(hdrSum, both[:mid])
		set(hdrWhat, both[mid:])
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		set(pairs[i], pairs[i+1])
	}
	return &nats.Msg{Subject: subject, Header: h}
}

// sumOf reads a record's Sum and What from its headers; zero for a record
// written without them.
func sumOf(h nats.Header) (uint64, string) {
	if h == nil {
		return 0, ""
	}
	sum, err := strconv.ParseUint(h.Get(hdrSum), 16, 64)
	if err != nil {
		return 0, ""
	}
	what, err := strconv.Unquote(h.Get(hdrWhat))
	if err != nil {
		what = ""
	}
	return sum, what
}

// markData is a delivered mark: the send's result, and what it sent. A
// mark written before Sum and What were kept reads as a result alone.
type markData struct {
	platform.SendResult
	Sum  uint64 `json:"herald_sum,omitempty"`
	What string `json:"herald_what,omitempty"`
	// Err, for a covered send that failed for good, is its error.
	Err *wireError `json:"herald_err,omitempty"`
}

// appended returns what RecordSend reports for a send m marks.
func (m markData) appended() journal.Appended {
	a := journal.Appended{Duplicate: true, Sum: m.Sum, What: m.What}
	if m.Err != nil {
		a.Failed = decodeError(*m.Err)
	} else {
		a.Delivered = &m.SendResult
	}
	return a
}

// duplicate returns what AppendSend reports for a send whose record
// (ack.Sequence in stream) was written before: the Sum and What of that
// record if it is still there, else of its delivered mark if any.
func (j *Journal) duplicate(ctx context.Context, stream jetstream.Stream, seq uint64, id string) journal.Appended {
	a := journal.Appended{Duplicate: true}
	if m, err := stream.GetMsg(ctx, seq); err == nil {
		if a.Sum, a.What = sumOf(m.Header); a.Sum != 0 {
			return a
		}
	}
	if id == "" {
		return a
	}
	if m, ok, err := j.mark(ctx, id); err == nil && ok {
		a.Sum, a.What = m.Sum, m.What
	}
	return a
}
