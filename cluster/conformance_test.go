package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/journal/journaltest"
	"github.com/heraldbot/herald/platform"
)

// suiteStore bounds the store of the suite's servers, so that an outage
// (a full store) is quick to make; suiteRecord bounds a record, above
// suiteLarge (a file over twice the server's largest message, 1 MiB, and
// its record's encoding). Each megabyte costs: at 64, 8 and 4 MiB the
// race detector's work on the copies was half of the suites' CPU.
const (
	suiteStore  = 24 << 20
	suiteRecord = 4 << 20
	suiteLarge  = 2<<20 + 1
)

// suiteFeatures are the features of the cluster's journals on the server
// last points to.
func suiteFeatures(last **server) journaltest.Features {
	return journaltest.Features{
		Durable: true,
		Outage:  func(t *testing.T) func() { return fillStore(t, (*last).nc) },
		Unrecordable: func() platform.SendRequest {
			return platform.SendRequest{Platform: journaltest.Adapter, Target: platform.Chat{ID: "a"},
				Message: platform.TextMessage(strings.Repeat("x", suiteRecord+1))}
		},
		Large: suiteLarge,
	}
}

// The journal of one process on JetStream passes the journals' suite; a
// journal reopened on the same server is the process restarted.
func TestJournalSuite(t *testing.T) {
	parallel(t, 12*time.Second)
	var last *server
	f := suiteFeatures(&last)
	f.Reopen = func(t *testing.T) journal.Journal {
		return open(t, last.nc, cluster.Config{MaxRecord: suiteRecord})
	}
	journaltest.Run(t, func(t *testing.T) journal.Journal {
		last = startServer(t, t.TempDir(), embedded.Config{MaxStore: suiteStore})
		return open(t, last.nc, cluster.Config{MaxRecord: suiteRecord})
	}, f)
}

// The journal shared by several processes passes it too, as one member:
// what it records, its consumers hand over once it joined.
func TestSharedSuite(t *testing.T) {
	parallel(t, 18*time.Second)
	var last *server
	f := suiteFeatures(&last)
	f.Deferred = true
	journaltest.Run(t, func(t *testing.T) journal.Journal {
		last = startServer(t, t.TempDir(), embedded.Config{MaxStore: suiteStore})
		s, err := cluster.OpenShared(ctxFor(t), last.nc, cluster.SharedConfig{Node: "n1", Config: cluster.Config{MaxRecord: suiteRecord}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, f)
}

// fillStore fills the server's file store to its limit (max_file_store)
// with a stream of its own, as a disk filling up would, and returns the
// function that deletes the stream: the space returns.
func fillStore(t *testing.T, nc *nats.Conn) (restore func()) {
	t.Helper()
	ctx := ctxFor(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILLER", Subjects: []string{"filler"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 512<<10)
	for i := 0; ; i++ {
		_, err := js.Publish(ctx, "filler", chunk)
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == 10023 { // insufficient resources: the store is full
			break
		}
		if err != nil {
			t.Fatalf("filling the store: %v", err)
		}
		if i > 1<<12 {
			t.Fatal("the store never filled")
		}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, "FILLER"); err != nil {
			t.Errorf("emptying the store: %v", err)
		}
	}
}
