package webchat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/fileecho"
)

// randomBytes returns n bytes that do not repeat, seeded by seed.
func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	r.Read(b)
	return b
}

// readBotAndEcho reads the message and echo frames of a tab until it has n,
// skipping the bot's chat actions, and fails on any other frame. It
// returns them with the size of the largest frame read.
func readBotAndEcho(t *testing.T, c *client, n int) ([]message, int) {
	t.Helper()
	var (
		msgs    []message
		largest int
	)
	for len(msgs) < n {
		c.ws.SetReadDeadline(time.Now().Add(ioTimeout))
		_, raw, err := c.ws.ReadMessage()
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", len(msgs), n, err)
		}
		largest = max(largest, len(raw))
		var f frame
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Type == "action":
		case (f.Type == "message" || f.Type == "echo") && f.Message != nil:
			msgs = append(msgs, *f.Message)
		default:
			t.Fatalf("after %d of %d messages: unexpected frame %+v", len(msgs), n, f)
		}
	}
	return msgs, largest
}

// TestLargeFileKeepsItsTab sends a file of 900 KiB from a tab three
// times, to the real engine running the fileecho plugin, the tab's queue
// bound at 1 MiB: its echo and the bot's answer, each of which was a frame
// of 1.2 MB, over the bound (3.5 MiB files in a 4 MiB queue dropped the
// tab three times in three), now come by reference in frames of a few
// hundred bytes, the tab fetches both files whole, and the tab stays
// connected. A
// tab that opens the chat later finds all six messages in the history and
// fetches their files with its own key, while the key of the tab that has
// closed no longer works.
func TestLargeFileKeepsItsTab(t *testing.T) {
	t.Parallel()
	ec := startEngine(t, webchat.Config{QueueBytes: 1 << 20}, func(e *engine.Engine) error { return e.Use(fileecho.New()) })
	a := ec.a
	tab := connect(t, a, hello{Name: "Ann"})
	data := randomBytes(1, 900<<10)
	var ids []string
	for i := range 3 {
		tab.send(t, fileFrame(platform.AttachDocument, "big.bin", "", data, ""))
		msgs, largest := readBotAndEcho(t, tab, 2)
		if largest > 2048 {
			t.Errorf("round %d: a frame of %d bytes; want files by reference", i, largest)
		}
		for j, m := range msgs {
			if len(m.Attachments) != 1 || m.Attachments[0].Data != nil || m.Attachments[0].Size != int64(len(data)) || m.Bot != (j == 1) {
				t.Fatalf("round %d, message %d: %+v; want the file by reference", i, j, m)
			}
			if got := fetchFile(t, a, tab.hist.FileKey, m.Attachments[0].File); !bytes.Equal(got, data) {
				t.Fatalf("round %d, message %d: fetched %d bytes; want the file's %d", i, j, len(got), len(data))
			}
			ids = append(ids, m.ID)
		}
	}
	if n := webchat.OpenTabs(a); n != 1 {
		t.Fatalf("%d open tabs; want the one, never dropped", n)
	}
	oldKey := tab.hist.FileKey
	tab.ws.Close()
	waitFor(t, "the adapter to see the tab close", func() bool { return webchat.OpenTabs(a) == 0 })

	again := connect(t, a, hello{ChatID: tab.hist.Chat.ID})
	var got []string
	for _, m := range again.hist.Messages {
		got = append(got, m.ID)
		if len(m.Attachments) != 1 || m.Attachments[0].File == "" {
			t.Fatalf("history message %s: %+v; want its file by reference", m.ID, m)
		}
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("history keeps %v; want all six %v", got, ids)
	}
	last := again.hist.Messages[len(again.hist.Messages)-1].Attachments[0].File
	if got := fetchFile(t, a, again.hist.FileKey, last); !bytes.Equal(got, data) {
		t.Fatalf("fetched %d bytes from the history; want %d", len(got), len(data))
	}
	if resp, _ := getFile(t, a, oldKey, last); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the closed tab's key: %s; want 404", resp.Status)
	}
	if n := len(ec.e.DeadLetters()); n != 0 {
		t.Errorf("%d dead letters; want none", n)
	}
}

// TestFileFetchGuards checks GET file/ID?k=KEY as an attacker would: a
// reference works only with the key of an open tab of its chat, a
// deleted message's file is gone, nothing is sent as a type a browser
// would run, and other sites may not embed it.
func TestFileFetchGuards(t *testing.T) {
	a, _ := start(t, webchat.Config{})
	ann := connect(t, a, hello{})
	bob := connect(t, a, hello{})
	send := func(c *client, at platform.Attachment) message {
		t.Helper()
		if _, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: c.hist.Chat.ID},
			Message: platform.OutboundMessage{Attachments: []platform.Attachment{at}}}); err != nil {
			t.Fatal(err)
		}
		return c.readMessages(t, 1)[0]
	}
	photo := append(dotPNG(), randomBytes(2, 100<<10)...)
	pm := send(ann, platform.Attachment{Kind: platform.AttachPhoto, Data: photo, FileName: "dot.png"})
	ref := pm.Attachments[0].File
	if ref == "" || pm.Attachments[0].MIME != "image/png" {
		t.Fatalf("a photo of %d bytes: %+v; want it by reference, as image/png", len(photo), pm.Attachments[0])
	}

	resp, body := getFile(t, a, ann.hist.FileKey, ref)
	h := resp.Header
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, photo) || h.Get("Content-Type") != "image/png" ||
		h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") ||
		h.Get("Cross-Origin-Resource-Policy") != "same-origin" || !strings.HasPrefix(h.Get("Content-Disposition"), "inline") {
		t.Fatalf("the photo: %s, %d bytes, headers %v", resp.Status, len(body), h)
	}
	for name, key := range map[string]string{
		"another chat's tab": bob.hist.FileKey,
		"a made-up key":      strings.Repeat("A", 26),
		"a malformed key":    "../../x",
		"no key":             "",
	} {
		if resp, _ := getFile(t, a, key, ref); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s; want 404", name, resp.Status)
		}
	}
	if resp, _ := getFile(t, a, ann.hist.FileKey, strings.Repeat("B", 26)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a made-up reference: %s; want 404", resp.Status)
	}

	// A part, as a video's seek asks for, and a HEAD.
	req, _ := http.NewRequest(http.MethodGet, a.URL()+"file/"+ref+"?k="+ann.hist.FileKey, nil)
	req.Header.Set("Range", "bytes=10-19")
	if resp, err := fileClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		part := make([]byte, 20)
		n, _ := resp.Body.Read(part)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(part[:n], photo[10:20]) {
			t.Errorf("a range: %s, %q", resp.Status, part[:n])
		}
	}
	if resp, err := fileClient.Head(a.URL() + "file/" + ref + "?k=" + ann.hist.FileKey); err != nil || resp.StatusCode != http.StatusOK ||
		resp.ContentLength != int64(len(photo)) {
		t.Errorf("HEAD: %v, %v", resp, err)
	}

	// A request with another site's Host, as after DNS rebinding.
	req, _ = http.NewRequest(http.MethodGet, a.URL()+"file/"+ref+"?k="+ann.hist.FileKey, nil)
	req.Host = "evil.example"
	if resp, err := fileClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a rebound Host: %v, %v; want 403", resp, err)
	} else {
		resp.Body.Close()
	}

	// Files a browser could run go as octet streams to be saved.
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script>` + strings.Repeat(" ", 40<<10) + `</svg>`)
	for _, at := range []platform.Attachment{
		{Kind: platform.AttachPhoto, Data: svg, MIMEType: "image/svg+xml", FileName: "x.svg"},
		{Kind: platform.AttachDocument, Data: append([]byte("<html><script>alert(1)</script>"), make([]byte, 40<<10)...), MIMEType: "text/html", FileName: "x.html"},
	} {
		m := send(ann, at)
		resp, _ := getFile(t, a, ann.hist.FileKey, m.Attachments[0].File)
		if ct, cd := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"); resp.StatusCode != http.StatusOK ||
			ct != "application/octet-stream" || !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, at.FileName) {
			t.Errorf("%s: %s, Content-Type %q, Content-Disposition %q; want an attachment", at.FileName, resp.Status, ct, cd)
		}
	}

	// A deleted message's file can no longer be fetched.
	if _, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: ann.hist.Chat.ID},
		Message: platform.DeleteMessage(pm.ID)}); err != nil {
		t.Fatal(err)
	}
	if f := ann.read(t); f.Type != "delete" {
		t.Fatalf("got %+v; want the delete frame", f)
	}
	if resp, _ := getFile(t, a, ann.hist.FileKey, ref); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a deleted message's file: %s; want 404", resp.Status)
	}

	// The key of a tab that has closed no longer works.
	m := send(ann, platform.Attachment{Kind: platform.AttachDocument, Data: randomBytes(3, 50<<10)})
	ann.ws.Close()
	waitFor(t, "the adapter to see the tab close", func() bool { return webchat.OpenTabs(a) == 1 })
	if resp, _ := getFile(t, a, ann.hist.FileKey, m.Attachments[0].File); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a closed tab's key: %s; want 404", resp.Status)
	}
}

// TestBotFilesByReference: a bot's file over 32 KiB goes by reference and
// is kept once however often it is sent; one larger than UploadBytes is
// refused for good; a file sent to a chat with no tab is not kept.
func TestBotFilesByReference(t *testing.T) {
	a, _ := start(t, webchat.Config{MaxUpload: 200 << 10, UploadBytes: 1 << 20})
	tab := connect(t, a, hello{})
	chat := platform.Chat{ID: tab.hist.Chat.ID}
	doc := randomBytes(4, 300<<10)
	sendDoc := func(target platform.Chat, data []byte) error {
		_, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: target,
			Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: data, FileName: "d.bin"}}}})
		return err
	}
	for i := range 3 {
		if err := sendDoc(chat, doc); err != nil {
			t.Fatal(err)
		}
		m := tab.readMessages(t, 1)[0]
		if at := m.Attachments[0]; at.Data != nil || at.Size != int64(len(doc)) || at.FileName != "d.bin" {
			t.Fatalf("send %d: %+v; want the file by reference", i, at)
		}
		if got := fetchFile(t, a, tab.hist.FileKey, m.Attachments[0].File); !bytes.Equal(got, doc) {
			t.Fatalf("send %d: fetched %d bytes", i, len(got))
		}
	}
	if used, files, refs := webchat.FileStoreStats(a); files != 1 || refs != 3 || used != int64(len(doc)) {
		t.Fatalf("after three sends of one file: %d bytes in %d files, %d references; want it kept once", used, files, refs)
	}
	if err := sendDoc(chat, make([]byte, 1<<20+1)); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrFileTooLarge) {
		t.Fatalf("a file over UploadBytes: %v; want a permanent ErrFileTooLarge", err)
	}
	if err := sendDoc(platform.Chat{ID: "nobody-here"}, randomBytes(5, 100<<10)); !errors.Is(err, webchat.ErrNoConnection) {
		t.Fatalf("a file to a chat with no tab: %v; want ErrNoConnection", err)
	}
	if _, files, _ := webchat.FileStoreStats(a); files != 1 {
		t.Fatalf("%d files kept after a send that failed; want the one sent before", files)
	}
}

// TestLargeBinaryFrameClosesAtOnce: a binary frame over ReadLimit closes
// the tab with 1009 without taking an upload slot or room for a file.
func TestLargeBinaryFrameClosesAtOnce(t *testing.T) {
	a, _ := start(t, webchat.Config{ReadLimit: 1024, UploadSlots: 1})
	tab := connect(t, a, hello{})
	if err := tab.ws.WriteMessage(websocket.BinaryMessage, make([]byte, 100<<10)); err != nil {
		t.Fatal(err)
	}
	if code := tab.expectClose(t); code != websocket.CloseMessageTooBig {
		t.Fatalf("closed with %d; want %d", code, websocket.CloseMessageTooBig)
	}
	if n := webchat.UploadSlotsTaken(a); n != 0 {
		t.Errorf("%d upload slots taken; want none", n)
	}
	if used, _, _ := webchat.FileStoreStats(a); used != 0 {
		t.Errorf("%d bytes held in the file store; want none", used)
	}
}

// TestUploadFloodStaysBounded floods the adapter from many tabs at once
// with files over ReadLimit, under small limits: every tab gets every
// echo and stays connected, the file store never holds more than
// UploadBytes (checked all along), and once the flood is over it holds
// exactly the files it keeps, no room reserved and nothing pinned.
func TestUploadFloodStaysBounded(t *testing.T) {
	const (
		tabs, files = 24, 4
		size        = 60 << 10
		uploadBytes = 400 << 10
	)
	a, bot := start(t, webchat.Config{ReadLimit: 16 << 10, MaxUpload: 64 << 10, UploadBytes: uploadBytes, UploadSlots: 2})
	clients := make([]*client, tabs)
	for i := range clients {
		clients[i] = connect(t, a, hello{})
	}
	var (
		wg      sync.WaitGroup
		done    = make(chan struct{})
		sampler sync.WaitGroup
		over    atomicMax
	)
	sampler.Go(func() {
		for {
			used, _, _ := webchat.FileStoreStats(a)
			over.observe(used)
			select {
			case <-done:
				return
			default:
				runtime.Gosched()
			}
		}
	})
	errs := make(chan error, tabs)
	for i, c := range clients {
		wg.Go(func() {
			go func() {
				for k := range files {
					if err := c.trySend(fileFrame(platform.AttachDocument, "f.bin", "", randomBytes(uint64(i*files+k), size), "")); err != nil {
						return
					}
				}
			}()
			if _, err := c.tryReadMessages(files); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(done)
	sampler.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := over.load(); m > uploadBytes {
		t.Errorf("the file store held %d bytes; want at most UploadBytes, %d", m, uploadBytes)
	}
	if n := webchat.OpenTabs(a); n != tabs {
		t.Errorf("%d open tabs after the flood; want all %d", n, tabs)
	}
	if used, kept := webchat.FileStoreBytes(a); used != kept || used > uploadBytes {
		t.Errorf("after the flood the store counts %d bytes, its files hold %d; want equal, within %d", used, kept, uploadBytes)
	}
	waitEvents(t, bot, tabs*files) // queued with the echoes, handed over since
}

// atomicMax keeps the largest value observed.
type atomicMax struct {
	mu  sync.Mutex
	max int64
}

func (m *atomicMax) observe(v int64) {
	m.mu.Lock()
	m.max = max(m.max, v)
	m.mu.Unlock()
}

func (m *atomicMax) load() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.max
}
