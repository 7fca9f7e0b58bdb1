package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// An object no record names — its process died between writing the
// object and the record — is removed by the next Recover, once older than
// the grace; one a record names stays.
func TestOrphanObjectsSwept(t *testing.T) {
	parallel(t, 0)
	nc := connectEmbedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := Open(ctx, nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.blobs.PutBytes(ctx, "r-orphan", []byte("left by a crash")); err != nil {
		t.Fatal(err)
	}
	big := platform.SendRequest{Platform: "memory", Target: platform.Chat{ID: "c"},
		Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: make([]byte, 2<<20)}}}}
	if _, _, err := j.RecordSend(ctx, journal.Send{Request: big}); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		infos, err := j.blobs.List(ctx)
		if err != nil {
			return 0
		}
		return len(infos)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d objects; want the orphan and the send's", n)
	}
	if _, err := j.Pending(ctx); err != nil { // younger than the grace: kept
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d objects after a Recover within the grace; want 2", n)
	}
	j.blobGrace = 0
	p, err := j.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 || len(p.Sends) != 1 || len(p.Sends[0].Request.Message.Attachments[0].Data) != 2<<20 {
		t.Fatalf("%d objects, %d sends after the sweep; want the send's object only, and the send whole", n, len(p.Sends))
	}
}
