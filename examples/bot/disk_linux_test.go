package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
)

// TestE2EDiskFullEmbedded: the bot on its embedded store, on a file
// system of 64 MiB that another program fills up while the bot sends
// 400 replies, and frees after diskOutage. It needs root (a tmpfs).
func TestE2EDiskFullEmbedded(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, 64<<20)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	metrics := freeAddr(t)
	p := startBot(t,
		"TELEGRAM_BOT_TOKEN="+crashToken,
		"TELEGRAM_API_ENDPOINT="+srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"SHUTDOWN_TIMEOUT=60s",
		"METRICS_ADDR="+metrics,
		"DATA_DIR="+filepath.Join(disk, "store"))
	newDiskRun(srv, 40000).scenario(ctx, t, p, metrics, func() func() { return fillDisk(t, disk) })
}

// smallDisk mounts a file system of size bytes (a tmpfs) on a directory
// of the test's, or skips the test where that needs a privilege the test
// lacks (root, CAP_SYS_ADMIN).
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a file system of a few megabytes needs root (tmpfs)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file in dir until its file system is full, and
// returns the function that removes it.
func fillDisk(t *testing.T, dir string) func() {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 256<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
	}
}
