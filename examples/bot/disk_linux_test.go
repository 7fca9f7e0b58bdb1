package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/testdisk"
	"github.com/heraldbot/herald/internal/testport"
)

// TestE2EDiskFullEmbedded: the bot on its embedded store, on a file
// system of 64 MiB that another program fills up while the bot sends
// 240 replies, and frees after diskOutage. It needs root (a tmpfs).
func TestE2EDiskFullEmbedded(t *testing.T) {
	runParallel(t, 21*time.Second)
	disk := testdisk.Small(t, 64<<20)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	metrics := testport.Addr(t)
	bot := supervise(ctx, t,
		"TELEGRAM_BOT_TOKEN="+crashToken,
		"TELEGRAM_API_ENDPOINT="+srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"SHUTDOWN_TIMEOUT=60s",
		"METRICS_ADDR="+metrics,
		"DATA_DIR="+filepath.Join(disk, "store"))
	// The second wave comes once the embedded server turned JetStream
	// off, or the journal met the full store, whichever is first: the
	// server's line comes at once when a write of its own fails; the
	// journal learns of the outage from the second wave's events, refused
	// at once, or from its writes under way when the disk filled, which
	// wait for their bound (10 s) — a bot that is quiet meanwhile loses
	// nothing by the wait.
	run := newDiskRun(srv, 40000)
	run.met = []string{embeddedOff, journalRefuses}
	run.scenario(ctx, t, bot, metrics, func() func() { return testdisk.Fill(t, disk) })
}
