package embedded_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// What was journaled survives a restart on the same directory; a second
// server on a directory in use is refused.
func TestStoreSurvivesRestartAndIsLocked(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	s, err := embedded.Start(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := embedded.Start(embedded.Config{Dir: dir}); !errors.Is(err, embedded.ErrLocked) {
		t.Fatalf("second Start on %s = %v; want ErrLocked", dir, err)
	}
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.a", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	s.Shutdown()
	s.Shutdown() // a second call is harmless

	s, err = embedded.Start(embedded.Config{Dir: dir, SyncAlways: true})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer s.Shutdown()
	nc, err = s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ = jetstream.New(nc)
	st, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := st.GetMsg(ctx, 1)
	if err != nil || string(msg.Data) != "kept" {
		t.Fatalf("after restart: %v, %v; want the message kept", msg, err)
	}
}

func TestStartNeedsDir(t *testing.T) {
	if _, err := embedded.Start(embedded.Config{}); err == nil {
		t.Fatal("Start without a directory succeeded")
	}
}
