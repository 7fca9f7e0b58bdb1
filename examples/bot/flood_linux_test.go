package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/testport"
)

// TestFloodMemory measures the bot's resident memory under a flood of
// uploads in the browser chat, as an operator runs it: durable (its
// journal on the embedded server), the default limits (UploadBytes
// 64 MiB, files of up to 4 MiB), the fileecho plugin answering each file
// with its bytes. The clients are the browser chat's own flood clients
// (its test binary's TestUploadFloodClients, built here), another process
// at the lowest priority: 60 tabs, each sending 5 files of 4 MiB at once
// and fetching the files the bot sends back. It takes about two minutes
// and measures memory, which tests running beside it would disturb, so it
// runs by hand:
//
//	HERALD_FLOOD=1 go test -run '^TestFloodMemory$' -v ./examples/bot/
//
// It fails if a tab was dropped or an echo did not come, if the peak
// reaches UploadBytes + 100 MiB (164 MiB), or if a minute after the
// flood the bot holds more than half of its peak.
func TestFloodMemory(t *testing.T) {
	if os.Getenv("HERALD_FLOOD") == "" {
		t.Skip("a measurement run by hand: HERALD_FLOOD=1 go test -run '^TestFloodMemory$' -v ./examples/bot/")
	}
	clients := filepath.Join(t.TempDir(), "webchat.test")
	if out, err := exec.Command("go", "test", "-c", "-o", clients, "../../adapters/webchat").CombinedOutput(); err != nil {
		t.Fatalf("building the flood clients: %v\n%s", err, out)
	}
	addr := testport.Addr(t)
	p := startBot(t, "WEBCHAT_ADDR="+addr)
	pid := p.cmd.Process.Pid
	page := "http://" + addr + "/"
	waitPage(t, page)
	base := residentKiB(t, pid)

	var out bytes.Buffer
	cmd := exec.Command(clients, "-test.run=^TestUploadFloodClients$", "-test.v")
	cmd.Env = append(os.Environ(), "HERALD_FLOOD_ADDR="+page)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, 19)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	began := time.Now()
	peak := base
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var err error
sample:
	for {
		select {
		case err = <-done:
			break sample
		case <-tick.C:
			peak = max(peak, residentKiB(t, pid))
		}
	}
	took := time.Since(began)
	if err != nil {
		t.Fatalf("clients: %v\n%s", err, out.String())
	}
	var rep struct {
		Tabs, Files, Echoes, Replies, Fetched, Missing, Dropped int
		Errors                                                  []string
	}
	for line := range strings.Lines(out.String()) {
		if j, ok := strings.CutPrefix(line, "flood: "); ok {
			if err := json.Unmarshal([]byte(j), &rep); err != nil {
				t.Fatalf("client report %q: %v", j, err)
			}
		}
	}
	if rep.Tabs == 0 {
		t.Fatalf("no report from the clients:\n%s", out.String())
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		peak = max(peak, residentKiB(t, pid))
	}
	after := residentKiB(t, pid)
	t.Logf("flood of %d tabs × %d files took %v: %d echoes, %d bot messages, %d bot files fetched, %d gone, %d tabs dropped, errors %q",
		rep.Tabs, rep.Files, took.Round(time.Millisecond), rep.Echoes, rep.Replies, rep.Fetched, rep.Missing, rep.Dropped, rep.Errors)
	t.Logf("RSS before %.1f MiB, peak %.1f MiB, a minute after %.1f MiB", float64(base)/1024, float64(peak)/1024, float64(after)/1024)
	if rep.Dropped > 0 || rep.Echoes != rep.Tabs*rep.Files || rep.Replies != rep.Tabs*rep.Files {
		t.Errorf("%d tabs dropped, %d echoes, %d bot messages; want none dropped and %d of each", rep.Dropped, rep.Echoes, rep.Replies, rep.Tabs*rep.Files)
	}
	if limit := int64(164 << 10); peak >= limit {
		t.Errorf("peak RSS %.1f MiB; want under UploadBytes + 100 MiB = 164 MiB", float64(peak)/1024)
	}
	if after > peak/2 {
		t.Errorf("RSS a minute after the flood %.1f MiB; want at most half the peak, %.1f MiB", float64(after)/1024, float64(peak)/2048)
	}
}

// waitPage waits until the browser chat's page answers.
func waitPage(t *testing.T, page string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if resp, err := c.Get(page); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("the chat page %s did not answer within 30 s", page)
}

// residentKiB returns the resident memory of the process pid, in KiB.
func residentKiB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS for process %d", pid)
	return 0
}
