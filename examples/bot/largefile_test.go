package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
)

// A file of 2 MiB is larger than two NATS messages (1 MiB): the journal
// keeps it in its object store, in chunks. The file echo sends it back
// whole in durable mode, also when the bot is killed while uploading it,
// and from one process of the bot to the gateway of another. (Files of
// 4 MiB cost the two tests a third more CPU, the race detector's work on
// each byte the fake Bot API copies; cluster's TestLargeFiles tests go to
// 20 MB.)
const largeFile = 2<<20 + 1

// fileData returns n bytes that a shifted or cut copy does not match.
func fileData(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31+i/4099) ^ seed
	}
	return b
}

// sendFile makes a user send a document of data in chat.
func sendFile(srv *telegramtest.Server, chat int64, data []byte) {
	srv.SendUserFile(chat, tgbotapi.User{ID: chat, FirstName: "Ann"}, telegramtest.UserFile{Kind: "document", Name: "big.bin", Data: data})
}

// echoedWhole fails unless chat got exactly one message, the document
// holding data.
func echoedWhole(t *testing.T, srv *telegramtest.Server, chat int64, data []byte) {
	t.Helper()
	sent := srv.Sent(chat)
	if len(sent) != 1 || sent[0].Kind != "document" || !bytes.Equal(sent[0].FileData, data) {
		var got []string
		for _, m := range sent {
			got = append(got, fmt.Sprintf("%s of %d bytes: %q", m.Kind, len(m.FileData), m.Text))
		}
		t.Fatalf("chat %d got %q; want the %d-byte document once, whole", chat, got, len(data))
	}
}

// TestE2ELargeFileAcrossKill: the bot is killed (SIGKILL) while it
// uploads the echo of a large file; started again on the same DATA_DIR,
// it sends the file once, whole.
func TestE2ELargeFileAcrossKill(t *testing.T) {
	runParallel(t, 2*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := []string{
		"TELEGRAM_BOT_TOKEN=" + crashToken,
		"TELEGRAM_API_ENDPOINT=" + srv.Endpoint(),
		"WEBCHAT_ADDR=off",
		"LOG_FORMAT=json",
		"SHUTDOWN_TIMEOUT=60s",
		"DATA_DIR=" + t.TempDir(),
	}
	p := startBot(t, env...)
	const chat = 60000
	data := fileData(largeFile, 1)
	// The first upload of the echo hangs: the bot dies while it is under
	// way (the fake API does not take a request whose client went away).
	srv.Inject(telegramtest.Fault{Method: "sendDocument", ChatID: chat, Times: 1, Delay: time.Hour})
	sendFile(srv, chat, data)
	if err := srv.WaitRequests(ctx, "sendDocument", 1); err != nil {
		t.Fatalf("the echo's upload never started: %v", err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p = startBot(t, env...)
	if _, err := srv.WaitSent(ctx, chat, 1); err != nil {
		t.Fatalf("the file never came back after the kill: %v", err)
	}
	if code := p.stop(t, 90*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; want 0", code)
	}
	echoedWhole(t, srv, chat, data)
}

// TestE2ELargeFileAcrossProcesses: two processes of the bot on one NATS
// server echo large files in chats shared between them: whichever process
// handles a chat, the gateway sends its file back whole.
func TestE2ELargeFileAcrossProcesses(t *testing.T) {
	runParallel(t, 6*time.Second)
	srv := telegramtest.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := scaleEnv(srv, startNATS(t))
	nodes := []*node{startNode(t, "n1", env), startNode(t, "n2", env)}
	gw := waitSpread(ctx, t, nodes)
	worker := nodes[0]
	if worker == gw {
		worker = nodes[1]
	}
	// Chats come five at a time until the process that is not the gateway
	// handled one (each chat's partition is one process's, by a hash).
	files := map[int64][]byte{}
	for batch := 0; worker.sample(`herald_dispatcher_completed_total{dispatcher="inbound"}`) <= 0; batch++ {
		if batch == 8 {
			t.Fatalf("%s handled none of %d chats", worker.name, len(files))
		}
		for c := range 5 {
			chat := int64(61000 + 5*batch + c)
			files[chat] = fileData(largeFile, byte(chat))
			sendFile(srv, chat, files[chat])
		}
		for chat := range files {
			if _, err := srv.WaitSent(ctx, chat, 1); err != nil {
				t.Fatalf("chat %d: %v", chat, err)
			}
		}
	}
	for _, n := range nodes {
		if code := n.p.stop(t, 90*time.Second); code != 0 {
			t.Fatalf("%s: exit code %d after SIGTERM; want 0", n.name, code)
		}
	}
	for chat, data := range files {
		echoedWhole(t, srv, chat, data)
	}
	t.Logf("%d files of %d bytes echoed whole, some handled by %s and sent by the gateway %s", len(files), largeFile, worker.name, gw.name)
}
