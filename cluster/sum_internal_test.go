package cluster

import (
	"maps"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/core/journal"
)

// sendMsg's headers are those the library's Header.Set makes, one a
// header, and a record's Sum and What read back as they were sent.
func TestSendMsg(t *testing.T) {
	for _, tc := range []struct {
		name  string
		id    string
		send  journal.Send
		pairs []string
	}{
		{name: "none"},
		{name: "id only", id: "send:telegram:1/0"},
		{name: "sum", id: "send:x", send: journal.Send{Sum: 0xdeadbeefcafe, What: "text \"hi\"\n✓"}},
		{name: "sum without what", send: journal.Send{Sum: 1}},
		{name: "pairs", id: "send:y", send: journal.Send{Sum: 1<<64 - 1, What: "photo"}, pairs: []string{hdrReply, "_INBOX.x", hdrKey, "n1/7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sendMsg("out.b.p.c", tc.id, tc.send, tc.pairs...)
			want := nats.NewMsg("out.b.p.c")
			if tc.id != "" {
				want.Header.Set(jetstream.MsgIDHeader, tc.id)
			}
			if tc.send.Sum != 0 {
				want.Header.Set(hdrSum, strconv.FormatUint(tc.send.Sum, 16))
				want.Header.Set(hdrWhat, strconv.Quote(tc.send.What))
			}
			for i := 0; i < len(tc.pairs); i += 2 {
				want.Header.Set(tc.pairs[i], tc.pairs[i+1])
			}
			if got.Subject != want.Subject || !maps.EqualFunc(got.Header, want.Header, func(a, b []string) bool {
				return len(a) == 1 && len(b) == 1 && a[0] == b[0]
			}) {
				t.Fatalf("sendMsg = %q %v; want %q %v", got.Subject, got.Header, want.Subject, want.Header)
			}
			// A header added later (a record's object) leaves the others be.
			got.Header.Set(hdrBlob, "r-1")
			if sum, what := sumOf(got.Header); sum != tc.send.Sum || what != tc.send.What {
				t.Fatalf("sumOf = %x %q; want %x %q", sum, what, tc.send.Sum, tc.send.What)
			}
			if tc.id != "" && got.Header.Get(jetstream.MsgIDHeader) != tc.id {
				t.Fatalf("Msg-Id %q after another header; want %q", got.Header.Get(jetstream.MsgIDHeader), tc.id)
			}
		})
	}
}
