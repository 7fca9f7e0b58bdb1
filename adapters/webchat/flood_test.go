package webchat_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/fileecho"
)

// The flood measurement, run by hand (it takes a minute and a half, and
// measures the process's memory, which other tests running beside it
// would disturb):
//
//	HERALD_FLOOD=1 go test -run '^TestUploadFlood$' -v ./adapters/webchat/
//
// It runs the adapter with its default limits (UploadBytes 64 MiB,
// MaxUpload 4 MiB) under the real engine with the fileecho plugin, and a
// child process, this test binary again (TestUploadFloodClients), floods
// it from 60 tabs, each sending HERALD_FLOOD_FILES (default 5) files of 4
// MiB at once and fetching the files the bot sends back, as a browser
// shows them. The clients are another process so that their own buffers
// do not count in the bot's memory. The test samples the bot's resident
// memory (VmRSS) every 50 ms during the flood and for HERALD_FLOOD_AFTER
// (default 60s) after it, and fails if a tab was dropped or an echo did
// not come, and, with HERALD_FLOOD_BOT=ref, if the peak reaches
// UploadBytes + 100 MiB.
//
// The clients run at the lowest CPU priority, taking only the CPU the bot
// leaves, as browsers on other machines would. HERALD_FLOOD_BOT=ref runs,
// instead of fileecho, a handler that answers each file with the file
// itself by its FileID: fileecho downloads each file, a copy of 4 MiB on
// the heap per file, whose garbage the Go collector lets grow to twice
// what it finds live, so that run measures the adapter without them.

// floodEnv names the environment of the flood.
const (
	floodEnv       = "HERALD_FLOOD"       // set to run the measurement
	floodAddrEnv   = "HERALD_FLOOD_ADDR"  // the chat page's URL, for the clients
	floodTabsEnv   = "HERALD_FLOOD_TABS"  // tabs (default 60)
	floodFilesEnv  = "HERALD_FLOOD_FILES" // files per tab (default 5)
	floodAfterEnv  = "HERALD_FLOOD_AFTER" // how long to watch after the flood (default 60s)
	floodBotEnv    = "HERALD_FLOOD_BOT"   // "fileecho" (default) or "ref"
	floodSlotsEnv  = "HERALD_FLOOD_SLOTS" // Config.UploadSlots (default 0: DefaultUploadSlots)
	floodFileBytes = webchat.DefaultMaxUpload
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// rss returns the process's resident memory, from /proc/self/status.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// heapInUse returns the bytes of live and not yet collected heap objects.
func heapInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// heapLive returns the bytes of heap objects the last collection found
// live.
func heapLive() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

const mib = 1 << 20

// floodReport is what the client process prints at its end, one JSON
// line prefixed with "flood: ".
type floodReport struct {
	Tabs, Files      int
	Echoes, Replies  int // echo frames of the tabs' files, bot messages
	Fetched, Missing int // bot files fetched whole; gone (404) when fetched
	Dropped          int // tabs whose connection ended before the end
	Errors           []string
	Took             time.Duration
	FirstEchoLatency time.Duration // the slowest tab's first echo
	LastEchoLatency  time.Duration
	MaxFrameBytes    int
}

func TestUploadFlood(t *testing.T) {
	if os.Getenv(floodEnv) == "" {
		t.Skip("a measurement run by hand: " + floodEnv + "=1 go test -run '^TestUploadFlood$' -v ./adapters/webchat/")
	}
	after := time.Minute
	if d, err := time.ParseDuration(os.Getenv(floodAfterEnv)); err == nil {
		after = d
	}
	bot := os.Getenv(floodBotEnv)
	ec := startEngine(t, webchat.Config{UploadSlots: envInt(floodSlotsEnv, 0)}, func(e *engine.Engine) error {
		if bot == "ref" {
			e.On(func(c *engine.Context) bool { return len(c.Attachments()) > 0 }, echoByReference)
			return nil
		}
		bot = "fileecho"
		return e.Use(fileecho.New())
	})
	runtime.GC()
	base := rss(t)
	t.Logf("RSS before the flood: %.1f MiB", float64(base)/mib)

	var (
		peak, peakHeap atomic.Int64
		peakLive       atomic.Int64
		peakGoroutines atomic.Int64
		stop           = make(chan struct{})
		sampler        sync.WaitGroup
	)
	peak.Store(base)
	sampler.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if r := rss(t); r > peak.Load() {
					peak.Store(r)
				}
				if h := heapInUse(); h > peakHeap.Load() {
					peakHeap.Store(h)
				}
				if h := heapLive(); h > peakLive.Load() {
					peakLive.Store(h)
				}
				if g := int64(runtime.NumGoroutine()); g > peakGoroutines.Load() {
					peakGoroutines.Store(g)
				}
			}
		}
	})

	cmd := exec.Command(os.Args[0], "-test.run=^TestUploadFloodClients$", "-test.v")
	cmd.Env = append(os.Environ(), floodAddrEnv+"="+ec.a.URL())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err := cmd.Start()
	if err == nil {
		lowerPriority(cmd.Process.Pid)
		err = cmd.Wait()
	}
	took := time.Since(began)
	close(stop)
	sampler.Wait()
	var rep floodReport
	for line := range strings.Lines(out.String()) {
		if j, ok := strings.CutPrefix(line, "flood: "); ok {
			if err := json.Unmarshal([]byte(j), &rep); err != nil {
				t.Fatalf("client report %q: %v", j, err)
			}
		}
	}
	if err != nil || rep.Tabs == 0 {
		t.Fatalf("clients: %v\n%s", err, out.String())
	}
	used, files, refs := webchat.FileStoreStats(ec.a)
	t.Logf("bot %s, %d upload slots", bot, webchat.UploadSlotsOf(ec.a))
	t.Logf("flood of %d tabs × %d files of %d bytes took %v: %d echoes, %d bot messages, %d bot files fetched, %d gone when fetched, %d tabs dropped; slowest first echo %v, last echo %v; largest frame %d bytes",
		rep.Tabs, rep.Files, floodFileBytes, took.Round(time.Millisecond), rep.Echoes, rep.Replies, rep.Fetched, rep.Missing, rep.Dropped,
		rep.FirstEchoLatency.Round(time.Millisecond), rep.LastEchoLatency.Round(time.Millisecond), rep.MaxFrameBytes)
	t.Logf("peak RSS %.1f MiB (heap objects at most %.1f MiB, live after a collection %.1f MiB; %d goroutines); file store at the end: %.1f MiB in %d files, %d references; dead letters %d",
		float64(peak.Load())/mib, float64(peakHeap.Load())/mib, float64(peakLive.Load())/mib, peakGoroutines.Load(), float64(used)/mib, files, refs, len(ec.e.DeadLetters()))
	for _, e := range rep.Errors {
		t.Log("client: " + e)
	}

	deadline := time.Now().Add(after)
	for time.Now().Before(deadline) {
		time.Sleep(min(10*time.Second, time.Until(deadline)))
		t.Logf("%v after the flood: RSS %.1f MiB, heap objects %.1f MiB", (after - time.Until(deadline)).Round(time.Second),
			float64(rss(t))/mib, float64(heapInUse())/mib)
	}
	final := rss(t)
	t.Logf("RSS %v after the flood: %.1f MiB (peak %.1f MiB, before %.1f MiB)", after, float64(final)/mib, float64(peak.Load())/mib, float64(base)/mib)

	// fileecho's copies are the plugin's, and the collector's pace sets
	// how many of them the heap holds: the bound is the adapter's.
	if limit := int64(webchat.DefaultUploadBytes + 100*mib); bot == "ref" && peak.Load() >= limit {
		t.Errorf("peak RSS %.1f MiB; want under UploadBytes + 100 MiB = %.1f MiB", float64(peak.Load())/mib, float64(limit)/mib)
	}
	if rep.Dropped > 0 || rep.Echoes != rep.Tabs*rep.Files {
		t.Errorf("%d tabs dropped, %d of %d echoes; want none dropped and every echo", rep.Dropped, rep.Echoes, rep.Tabs*rep.Files)
	}
}

// echoByReference answers a message's files with the files themselves,
// sent by their FileIDs, so that nothing is copied.
func echoByReference(c *engine.Context) error {
	for _, at := range c.Attachments() {
		back := platform.Attachment{Kind: at.Kind, FileID: at.FileID, Caption: fileecho.Caption(at, at.Size)}
		if _, err := c.Reply(platform.OutboundMessage{ReplyToID: c.Event().MessageID, Attachments: []platform.Attachment{back}}).Wait(c.Context()); err != nil {
			return err
		}
	}
	return nil
}

// TestUploadFloodClients is the client process of TestUploadFlood; it
// does nothing in any other run.
func TestUploadFloodClients(t *testing.T) {
	page := os.Getenv(floodAddrEnv)
	if page == "" {
		t.Skip("the client process of TestUploadFlood")
	}
	tabs, files := envInt(floodTabsEnv, 60), envInt(floodFilesEnv, 5)
	wsURL := "ws" + strings.TrimPrefix(page, "http") + "ws"
	origin := strings.TrimSuffix(page, "/")
	shared := bytes.Repeat([]byte("herald flood "), floodFileBytes/13+1)[:floodFileBytes-16]

	var (
		mu  sync.Mutex
		rep = floodReport{Tabs: tabs, Files: files}
		wg  sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		if len(rep.Errors) < 20 {
			rep.Errors = append(rep.Errors, fmt.Sprintf(format, args...))
		}
		mu.Unlock()
	}
	httpc := &http.Client{Timeout: time.Minute}
	began := time.Now()
	ready := make(chan struct{})
	for i := range tabs {
		wg.Go(func() {
			d := websocket.Dialer{HandshakeTimeout: time.Minute}
			ws, _, err := d.Dial(wsURL, http.Header{"Origin": {origin}})
			if err != nil {
				fail("tab %d: dial: %v", i, err)
				return
			}
			defer ws.Close()
			ws.SetReadDeadline(time.Now().Add(3 * time.Minute))
			if err := ws.WriteJSON(map[string]string{"type": "hello"}); err != nil {
				fail("tab %d: hello: %v", i, err)
				return
			}
			var hist struct {
				FileKey string `json:"file_key"`
			}
			if err := ws.ReadJSON(&hist); err != nil {
				fail("tab %d: history: %v", i, err)
				return
			}
			<-ready
			// The files go out at once, each streamed as base64, as a
			// browser sends a frame it holds whole.
			sent := time.Now()
			writer := make(chan error, 1)
			go func() {
				for k := range files {
					w, err := ws.NextWriter(websocket.TextMessage)
					if err != nil {
						writer <- err
						return
					}
					io.WriteString(w, `{"type":"file","kind":"document","file_name":"f`+strconv.Itoa(i)+"-"+strconv.Itoa(k)+`.bin","content":"`)
					enc := base64.NewEncoder(base64.StdEncoding, w)
					fmt.Fprintf(enc, "%08d%08d", i, k)
					enc.Write(shared)
					enc.Close()
					io.WriteString(w, `"}`)
					if err := w.Close(); err != nil {
						writer <- err
						return
					}
				}
				writer <- nil
			}()
			echoes, replies := 0, 0
			for echoes < files || replies < files {
				if echoes == files {
					// The bot answers every file it still has; one
					// forgotten before its handler fetched it gets no
					// answer.
					ws.SetReadDeadline(time.Now().Add(10 * time.Second))
				}
				_, raw, err := ws.ReadMessage()
				if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() && echoes == files {
					break
				}
				if err != nil {
					mu.Lock()
					rep.Dropped++
					mu.Unlock()
					fail("tab %d: after %d echoes and %d replies: %v", i, echoes, replies, err)
					return
				}
				var f struct {
					Type    string `json:"type"`
					Code    string `json:"code"`
					Text    string `json:"text"`
					Message struct {
						Bot         bool `json:"bot"`
						Attachments []struct {
							File string `json:"file"`
							Size int64  `json:"size"`
						} `json:"attachments"`
					} `json:"message"`
				}
				if err := json.Unmarshal(raw, &f); err != nil {
					fail("tab %d: frame: %v", i, err)
					continue
				}
				mu.Lock()
				rep.MaxFrameBytes = max(rep.MaxFrameBytes, len(raw))
				mu.Unlock()
				switch {
				case f.Type == "echo":
					echoes++
					lat := time.Since(sent)
					mu.Lock()
					rep.Echoes++
					if echoes == 1 {
						rep.FirstEchoLatency = max(rep.FirstEchoLatency, lat)
					}
					rep.LastEchoLatency = max(rep.LastEchoLatency, lat)
					mu.Unlock()
				case f.Type == "message" && f.Message.Bot && len(f.Message.Attachments) > 0:
					replies++
					mu.Lock()
					rep.Replies++
					mu.Unlock()
					at := f.Message.Attachments[0]
					if at.File == "" {
						fail("tab %d: a bot file inline", i)
						continue
					}
					resp, err := httpc.Get(page + "file/" + at.File + "?k=" + hist.FileKey)
					if err != nil {
						fail("tab %d: fetching: %v", i, err)
						continue
					}
					n, _ := io.Copy(io.Discard, bufio.NewReader(resp.Body))
					resp.Body.Close()
					mu.Lock()
					switch {
					case resp.StatusCode == http.StatusOK && n == at.Size:
						rep.Fetched++
					case resp.StatusCode == http.StatusNotFound:
						rep.Missing++
					default:
						rep.Errors = append(rep.Errors, fmt.Sprintf("tab %d: fetch: %s, %d bytes", i, resp.Status, n))
					}
					mu.Unlock()
				case f.Type == "message" && f.Message.Bot:
					replies++ // the bot's word that it could not fetch the file
					mu.Lock()
					rep.Replies++
					mu.Unlock()
				case f.Type == "error":
					fail("tab %d: error frame %s: %s", i, f.Code, f.Text)
				}
			}
			if err := <-writer; err != nil {
				fail("tab %d: writing: %v", i, err)
			}
		})
	}
	close(ready)
	wg.Wait()
	httpc.CloseIdleConnections()
	rep.Took = time.Since(began)
	j, _ := json.Marshal(rep)
	fmt.Println("flood: " + string(j))
}
