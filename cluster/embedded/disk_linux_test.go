package embedded_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/internal/testdisk"
)

// The store is bounded under the disk's room; when another program fills
// the disk anyway, JetStream is turned off, and on again once the room is
// back, with what it held: one log line each way, no restart.
func TestFullDiskRecovers(t *testing.T) {
	disk := testdisk.Small(t, 32<<20)
	core, logs := observer.New(zap.InfoLevel)
	s, err := embedded.Start(embedded.Config{Dir: filepath.Join(disk, "store"), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if limit := s.MaxStore(); limit > 24<<20 || limit < 16<<20 {
		t.Fatalf("MaxStore on a 32 MiB disk is %d; want three quarters of it", limit)
	}
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	publish := func(timeout time.Duration) error {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := js.Publish(pctx, "t", make([]byte, 64<<10))
		return err
	}
	for range 10 {
		if err := publish(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	restore := testdisk.Fill(t, disk)
	// Writes fail on the full disk; the server's error turns JetStream off.
	for publish(time.Second) == nil {
		if ctx.Err() != nil {
			t.Fatal("the store took writes on a full disk until the test's end")
		}
	}
	waitLog(ctx, t, logs, "JetStream is off")
	restore()
	waitLog(ctx, t, logs, "JetStream is back")
	if err := publish(5 * time.Second); err != nil {
		t.Fatalf("a write once the room is back: %v", err)
	}
	st, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs < 11 {
		t.Fatalf("the stream holds %d messages after the outage; want the 10 before it and the one after", info.State.Msgs)
	}
	off, back := logs.FilterMessageSnippet("JetStream is off").Len(), logs.FilterMessageSnippet("JetStream is back").Len()
	if off != 1 || back != 1 {
		t.Fatalf("logged %d times off and %d times back; want once each", off, back)
	}
}

// waitLog waits until a line with snippet was logged.
func waitLog(ctx context.Context, t *testing.T, logs *observer.ObservedLogs, snippet string) {
	t.Helper()
	for logs.FilterMessageSnippet(snippet).Len() == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("never logged %q: %v", snippet, logs.All())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// MaxStore is kept under the disk's room, however large Config.MaxStore.
func TestMaxStoreUnderDiskRoom(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	s, err := embedded.Start(embedded.Config{Dir: dir, MaxStore: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if limit := s.MaxStore(); limit >= free || limit <= 0 {
		t.Fatalf("MaxStore is %d with %d bytes free; want it under them", limit, free)
	}
	small, err := embedded.Start(embedded.Config{Dir: t.TempDir(), MaxStore: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Shutdown()
	if limit := small.MaxStore(); limit != 1<<20 {
		t.Fatalf("MaxStore is %d; want the 1 MiB asked for", limit)
	}
}
