package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/internal/leakcheck"
	"github.com/heraldbot/herald/internal/natstest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMainAfter(m, natstest.Cleanup) }

// connect returns a JetStream context on a connection to s, closed when
// the test ends.
func connect(t *testing.T, s *natstest.Server) jetstream.JetStream {
	t.Helper()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// What the server stored survives a kill and a clean stop, and the
// connection reconnects across both.
func TestServerKeepsItsStoreAcrossKillAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := natstest.Start(t, natstest.Options{MaxStore: 64 << 20})
	js := connect(t, s)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	for _, end := range []func(){s.Kill, s.Stop} {
		end()
		end() // a second stop does nothing
		s.Restart()
		var msgs uint64
		for msgs != 1 { // the connection reconnects by itself
			info, err := js.Stream(ctx, "S")
			if err == nil {
				msgs = info.CachedInfo().State.Msgs
			}
			if err != nil && ctx.Err() != nil {
				t.Fatalf("the stream after a restart: %v", err)
			}
			if msgs != 1 {
				time.Sleep(20 * time.Millisecond) // waits for the reconnect
			}
		}
	}
}

// A store bounded by MaxStore refuses what does not fit.
func TestMaxStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := natstest.Start(t, natstest.Options{MaxStore: 1 << 20})
	js := connect(t, s)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: jetstream.FileStorage, MaxBytes: 2 << 20}); err == nil {
		t.Fatal("a stream of 2 MiB on a store of 1 MiB was created")
	}
}
