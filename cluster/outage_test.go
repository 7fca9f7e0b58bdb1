package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// A full store is an outage: the journal refuses at once, logs it once,
// and takes writes again by itself once there is room, logging that
// once. A delivered send whose mark the full store refused is still
// removed, and its mark written before the journal counts as back: a
// handling run again then, or after a crash, does not send it twice.
func TestJournalOutageFullStore(t *testing.T) {
	parallel(t, 2*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{MaxStore: suiteStore})
	core, logs := observer.New(zap.DebugLevel)
	j := open(t, srv.nc, cluster.Config{Logger: zap.New(core)})
	ctx := ctxFor(t)
	rec, _, err := j.RecordSend(ctx, journal.Send{ID: "memory:1/1", Request: sendTo("c", "one")})
	if err != nil {
		t.Fatal(err)
	}
	restore := fillStore(t, srv.nc)
	for range 3 {
		if _, _, err := j.RecordEvent(ctx, event("e", "c", "x")); !errors.Is(err, journal.ErrOutage) {
			t.Fatalf("RecordEvent on a full store: %v; want ErrOutage", err)
		}
	}
	res := platform.SendResult{MessageID: "42", ChatID: "c"}
	if err := rec.Done(ctx, &res); !errors.Is(err, journal.ErrOutage) {
		t.Fatalf("Done of a delivered send on a full store: %v; want ErrOutage (its mark is written later)", err)
	}
	p, err := j.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sends) != 0 {
		t.Fatalf("the delivered send is still in OUT: %+v", p.Sends)
	}
	restore()
	if err := j.WaitRecording(ctx); err != nil {
		t.Fatal(err)
	}
	// The mark was written before the journal counted as back: the send
	// repeated by a handling run again is a duplicate, with its result.
	_, a, err := j.RecordSend(ctx, journal.Send{ID: "memory:1/1", Request: sendTo("c", "one"), Repeat: true})
	if err != nil || !a.Duplicate || a.Delivered == nil || a.Delivered.MessageID != "42" {
		t.Fatalf("the delivered send repeated once the journal is back: %+v, %v; want a duplicate with its result", a, err)
	}
	if _, dup, err := j.RecordEvent(ctx, event("e", "c", "x")); err != nil || dup {
		t.Fatalf("the event refused in the outage, again: duplicate %v, %v", dup, err)
	}
	begun := logs.FilterMessageSnippet("refuses writes").Len()
	ended := logs.FilterMessageSnippet("takes writes again").Len()
	if begun != 1 || ended != 1 {
		t.Fatalf("the outage was logged %d times as begun and %d as ended; want once each", begun, ended)
	}
}

// A stream and a bucket deleted under a running journal and store are
// created again by the calls that find them missing.
func TestMissingAssetsCreatedAgain(t *testing.T) {
	parallel(t, 0)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	j := open(t, srv.nc, cluster.Config{})
	s := sessionStore(t, srv.nc, cluster.Config{})
	ctx := ctxFor(t)
	js, err := jetstream.New(srv.nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, "OUT_"+cluster.DefaultBot); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "sessions_"+cluster.DefaultBot); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.RecordSend(ctx, journal.Send{Request: sendTo("c", "x")}); !errors.Is(err, journal.ErrOutage) {
		t.Fatalf("RecordSend with OUT gone: %v; want an outage", err)
	}
	if err := j.WaitRecording(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.RecordSend(ctx, journal.Send{Request: sendTo("c", "x")}); err != nil {
		t.Fatalf("RecordSend once OUT is there again: %v", err)
	}
	if _, err := s.Create(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatalf("a session written with its bucket gone: %v", err)
	}
	if v, _, err := s.Get(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Fatalf("the session read back: %q, %v", v, err)
	}
}
