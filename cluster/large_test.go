package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/internal/race"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// fileOf returns n bytes that a shifted or cut copy does not match.
func fileOf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31+i/4099) ^ seed
	}
	return b
}

// onBig makes /big N reply with a file of N bytes (seeded by the chat),
// and /sum with the size and SHA-256 of the file the message carries.
func onBig(e *engine.Engine) {
	e.OnCommand("big", func(c *engine.Context) error {
		n, err := strconv.Atoi(c.RawArgs())
		if err != nil {
			return err
		}
		c.Reply(platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, FileName: "big.bin",
			Data: fileOf(n, seedOf(c.Chat().ID))}}})
		return nil
	})
	e.On(func(c *engine.Context) bool { return len(c.Attachments()) > 0 }, func(c *engine.Context) error {
		data := c.Attachments()[0].Data
		c.ReplyText(fmt.Sprintf("%d %x", len(data), sha256.Sum256(data)))
		return nil
	})
}

func seedOf(chat string) byte {
	n, _ := strconv.Atoi(chat)
	return byte(n)
}

// blobCount returns how many objects the bot's blobs bucket holds: the
// objects whose chunks are stored. It asks the stream, in one request:
// the object store's List watches the bucket's entries and, while objects
// are being removed under it, may wait past its context.
func blobCount(t *testing.T, nc *nats.Conn) int {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	bucket := "blobs_" + cluster.DefaultBot
	st, err := js.Stream(ctxFor(t), "OBJ_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctxFor(t), jetstream.WithSubjectFilter("$O."+bucket+".C.>"))
	if err != nil {
		t.Fatal(err)
	}
	return len(info.State.Subjects)
}

// The large files' sizes, each larger than a NATS message (1 MB): a
// 20 MB and a 4 MiB file sent, a 3 MiB one received. Under the race
// detector, which makes every byte copied cost many times as much (its
// work on the copies was half these tests' CPU at 5 MB, 2 MiB and 2 MiB),
// 3 MB, 1.5 MiB and 1.5 MiB: still each larger than a message, in many
// chunks (CI runs the full sizes without it too).
var bigFile, mediumFile, uploadFile = 20_000_000, 4 << 20, 3 << 20

func init() {
	if race.Enabled {
		bigFile, mediumFile, uploadFile = 3_000_000, 3<<19, 3<<19
	}
}

// A 4 MiB and a 20 MB file, larger than a NATS message, are journaled:
// a process that dies while sending them (SIGKILL: nothing more done)
// leaves them in the journal, the next one on the same store sends each
// once, whole, and their objects go with their records.
func TestLargeFilesAcrossCrash(t *testing.T) {
	parallel(t, 5*time.Second)
	dir := t.TempDir()
	// Under the race detector a 20 MB record takes seconds to encode.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sizes := map[string]int{"4": mediumFile, "20": bigFile}
	start := func(mem *memory.Adapter) (*server, *engine.Engine, chan error) {
		srv := startServer(t, dir, embedded.Config{})
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(open(t, srv.nc, cluster.Config{})))
		if err != nil {
			t.Fatal(err)
		}
		onBig(e)
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		return srv, e, done
	}
	mem := memory.New()
	for chat := range sizes {
		for range 10 { // each file's send hangs, every attempt of it: the process dies meanwhile
			mem.SlowNext(chat, time.Hour)
		}
	}
	srv, e, done := start(mem)
	for chat, n := range sizes {
		mem.Emit(platform.Event{ID: chat, Platform: mem.Name(), Kind: platform.EventMessage, Chat: memory.Private(chat),
			From: memory.User(chat, "u"), Text: "/big " + strconv.Itoa(n)})
	}
	waitLong(ctx, t, "both sends to start", func() bool { return mem.Calls("4") > 0 && mem.Calls("20") > 0 })
	if n := blobCount(t, srv.nc); n != 2 {
		t.Fatalf("%d objects while the two files are sent; want 2", n)
	}
	sctx, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = e.Shutdown(sctx) // the crash: what is under way is cut off
	stop()
	<-done
	srv.stop()

	mem2 := memory.New()
	srv2, e2, done2 := start(mem2)
	for chat, n := range sizes {
		sent, err := mem2.WaitSent(ctx, chat, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(sent) != 1 || len(sent[0].Message.Attachments) != 1 || !bytes.Equal(sent[0].Message.Attachments[0].Data, fileOf(n, seedOf(chat))) {
			t.Fatalf("chat %s: the file of %d bytes did not come back whole, once", chat, n)
		}
	}
	waitLong(ctx, t, "the objects to go with their records", func() bool { return blobCount(t, srv2.nc) == 0 })
	if err := e2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-done2
	if n := len(mem2.Sent("4")) + len(mem2.Sent("20")); n != 2 {
		t.Fatalf("%d files sent after the restart; want 2", n)
	}
}

// Members of one bot hand large records to each other: a file a user
// sends (an event larger than a message) reaches the member that handles
// its chat whole, and a 20 MB file a handler sends on a member that is
// not the gateway reaches the gateway whole.
func TestLargeFilesAcrossProcesses(t *testing.T) {
	parallel(t, 5*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	var members []*member
	// bigSent is set while a member that is not the gateway sends the
	// 20 MB file; it is set back if the send failed, so that a later
	// event tries again.
	var bigSent atomic.Bool
	for _, name := range []string{"a", "b"} {
		m := startMember(t, srv.s, mem, name)
		m.e.On(func(c *engine.Context) bool { return len(c.Attachments()) > 0 }, func(c *engine.Context) error {
			data := c.Attachments()[0].Data
			c.ReplyText(fmt.Sprintf("%d %x", len(data), sha256.Sum256(data)))
			// One member that is not the gateway sends a 20 MB file back:
			// the gateway makes the send.
			if len(m.j.Stats().Leading) == 0 && bigSent.CompareAndSwap(false, true) {
				f := c.Reply(platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, FileName: "big.bin",
					Data: fileOf(bigFile, seedOf(c.Chat().ID))}}})
				if _, err := f.Wait(c.Context()); err != nil {
					t.Logf("%s: the 20 MB file to chat %s: %v; a later event tries again", name, c.Chat().ID, err)
					bigSent.Store(false)
				}
			}
			c.ReplyText("by " + name)
			return nil
		})
		members = append(members, m)
	}
	waitSpread(t, members)
	upload := fileOf(uploadFile, 7)
	want := fmt.Sprintf("%d %x", len(upload), sha256.Sum256(upload))
	big, by := 0, map[string]bool{}
	// Under the race detector a 20 MB record takes seconds to encode and
	// decode, and the chat's next reply waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// chat offers a file in one more chat and checks what came back.
	chat := func(c int) {
		t.Helper()
		id := strconv.Itoa(10 + c)
		to := memory.Private(id)
		event := mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: to, From: memory.User(id, "u"),
			Attachments: []platform.Attachment{{Kind: platform.AttachDocument, FileName: "up.bin", Data: upload}}})
		offered := time.Now()
		waitLong(ctx, t, "chat "+id+"'s replies", func() bool {
			got := mem.Texts(id)
			if len(got) > 0 && strings.HasPrefix(got[len(got)-1], "by ") {
				return true
			}
			if time.Since(offered) > offerAgain {
				// The memory adapter drops an event the journal refused
				// (on a loaded machine a write of megabytes may time out):
				// offered again, as a platform does, under its ID, so it
				// is not handled twice if it was recorded.
				mem.Emit(event)
				offered = time.Now()
			}
			return false
		})
		sent := mem.Sent(id)
		if sent[0].Message.Text != want {
			t.Fatalf("chat %s: the upload was seen as %q; want %q", id, sent[0].Message.Text, want)
		}
		by[sent[len(sent)-1].Message.Text] = true
		if len(sent) == 3 {
			if len(sent[1].Message.Attachments) != 1 || !bytes.Equal(sent[1].Message.Attachments[0].Data, fileOf(bigFile, seedOf(id))) {
				t.Fatalf("chat %s: the 20 MB file did not come whole", id)
			}
			big++
		}
	}
	const chats = 8
	for c := range chats {
		chat(c)
	}
	// On a loaded machine the lease may move while the chats are handled,
	// so that each was handled on the member that led at the time: more
	// chats follow until one is handled on a member that does not lead.
	for c := chats; big == 0; c++ {
		if c == 4*chats {
			t.Fatalf("no 20 MB file sent in %d chats", c)
		}
		chat(c)
	}
	if big != 1 || len(by) != 2 {
		t.Fatalf("%d files of 20 MB sent, chats handled %v; want one, and both members handling", big, by)
	}
	waitLong(ctx, t, "the objects to go with their records", func() bool { return blobCount(t, srv.nc) == 0 })
}

// offerAgain is how long TestLargeFilesAcrossProcesses waits for a chat's
// replies before it offers the chat's event again.
const offerAgain = 15 * time.Second

// waitLong is waitFor with ctx's time: under the race detector, records of
// 20 MB take seconds to encode and decode.
func waitLong(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A dead letter holding a large file is kept in the object store, read
// back whole, and removed with its letter.
func TestLargeDeadLetter(t *testing.T) {
	parallel(t, 0)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	j := open(t, srv.nc, cluster.Config{})
	data := fileOf(5<<20, 3)
	req := platform.SendRequest{Platform: "memory", Target: platform.Chat{ID: "c"},
		Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: data}}}}
	id, err := j.Keep(sender.DeadLetter{Request: req, Attempts: 3, Err: platform.Permanent(errors.New("blocked"))})
	if err != nil {
		t.Fatal(err)
	}
	p, err := j.Pending(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.DeadLetters) != 1 || p.DeadLetters[0].ID != id || !bytes.Equal(p.DeadLetters[0].Request.Message.Attachments[0].Data, data) {
		t.Fatal("the large dead letter did not come back whole")
	}
	if n := blobCount(t, srv.nc); n != 1 {
		t.Fatalf("%d objects for one large dead letter", n)
	}
	if err := j.Forget(id); err != nil {
		t.Fatal(err)
	}
	if n := blobCount(t, srv.nc); n != 0 {
		t.Fatalf("%d objects after the letter was forgotten; want none", n)
	}
}

// A record over Config.MaxRecord is refused alone, permanently, and the
// journal takes the next one at once.
func TestRecordOverBound(t *testing.T) {
	parallel(t, 0)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	j := open(t, srv.nc, cluster.Config{MaxRecord: 2 << 20})
	ctx := ctxFor(t)
	req := platform.SendRequest{Platform: "memory", Target: platform.Chat{ID: "c"},
		Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: fileOf(2<<20, 1)}}}}
	_, _, err := j.RecordSend(ctx, journal.Send{Request: req})
	if !errors.Is(err, journal.ErrUnrecordable) || errors.Is(err, journal.ErrOutage) || !platform.IsPermanent(err) {
		t.Fatalf("a record over the bound: %v; want a permanent error wrapping ErrUnrecordable", err)
	}
	if _, _, err := j.RecordSend(ctx, journal.Send{Request: sendTo("c", "next")}); err != nil {
		t.Fatalf("the next send: %v", err)
	}
}
