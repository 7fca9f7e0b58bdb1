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
	runParallel(t, 30*time.Second)
	disk := testdisk.Small(t, 64<<20)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	metrics := testport.Addr(t)
	p := startBot(t,
		"TELEGRAM_BOT_TOKEN="+crashToken,
		"TELEGRAM_API_ENDPOINT="+srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"SHUTDOWN_TIMEOUT=60s",
		"METRICS_ADDR="+metrics,
		"DATA_DIR="+filepath.Join(disk, "store"))
	newDiskRun(srv, 40000).scenario(ctx, t, p, metrics, func() func() { return testdisk.Fill(t, disk) })
}
