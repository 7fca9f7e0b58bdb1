package cluster

import (
	"bytes"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// An object no record names — its process died between writing the
// object and the record — is removed by the next Recover, once older than
// the grace; one a record names stays.
func TestOrphanObjectsSwept(t *testing.T) {
	parallel(t, 0)
	ctx, j := openEmbedded(t)
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

// readObject reads an object into a buffer of the size its info gives,
// refuses one whose bytes are fewer or more than that size, and reads one
// whose size is too large for a buffer made at once as it comes.
func TestReadObjectChecksItsSize(t *testing.T) {
	parallel(t, 0)
	ctx, j := openEmbedded(t)
	data := make([]byte, 300<<10) // several chunks
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := j.blobs.PutBytes(ctx, "r-x", data); err != nil {
		t.Fatal(err)
	}
	got, err := j.readObject(ctx, "r-x", uint64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("readObject: %d bytes, %v; want the %d bytes put", len(got), err, len(data))
	}
	for _, size := range []uint64{uint64(len(data)) - 1, uint64(len(data)) + 1} {
		if got, err := j.readObject(ctx, "r-x", size); err == nil {
			t.Errorf("readObject with size %d of a %d-byte object: %d bytes, no error", size, len(data), len(got))
		}
	}
	// An info too large to make a buffer of at once: read as it comes.
	if got, err := j.readObject(ctx, "r-x", maxPrealloc+1); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("readObject with size %d: %d bytes, %v; want the %d bytes put", uint64(maxPrealloc+1), len(got), err, len(data))
	}
	if _, err := j.readObject(ctx, "r-gone", 10); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Errorf("readObject of a missing object: %v; want ErrObjectNotFound", err)
	}
}
