package webchat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// fileFrame is a file frame, as the page's attach button sends it.
func fileFrame(kind platform.AttachmentKind, name, mime string, data []byte, caption string) map[string]any {
	return map[string]any{"type": "file", "kind": kind, "file_name": name, "mime": mime, "content": data, "caption": caption}
}

// waitEvents waits until bot has n events and returns them.
func waitEvents(t *testing.T, bot *testBot, n int) []platform.Event {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for {
		evs := bot.Events()
		if len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events after %v; want %d", len(evs), ioTimeout, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUpload sends a file from a tab: every tab of the chat is shown it,
// the bot gets it as an attachment with its caption as the text, Download
// fetches it within a limit and refuses it under a smaller one, and the
// bot can send it back by its FileID.
func TestUpload(t *testing.T) {
	a, bot := start(t, webchat.Config{})
	tab := connect(t, a, hello{Name: "Ann"})
	if tab.hist.MaxUp != webchat.DefaultMaxUpload {
		t.Errorf("history's max_upload %d; want %d", tab.hist.MaxUp, webchat.DefaultMaxUpload)
	}
	other := connect(t, a, hello{ChatID: tab.hist.Chat.ID})
	png := dotPNG()
	tab.send(t, fileFrame(platform.AttachPhoto, "C:\\photos\\dot.png", "image/png", png, "a dot"))
	for _, c := range []*client{tab, other} {
		m := c.readMessages(t, 1)[0]
		if len(m.Attachments) != 1 || m.From.Name != "Ann" {
			t.Fatalf("echo %+v; want Ann's message with the photo", m)
		}
		if at := m.Attachments[0]; at.Kind != "photo" || !bytes.Equal(at.Data, png) || at.MIME != "image/png" || at.FileName != "dot.png" || at.Caption != "a dot" {
			t.Errorf("echoed attachment %+v; want the photo dot.png captioned", at)
		}
	}
	ev := waitEvents(t, bot, 1)[0]
	if ev.Kind != platform.EventMessage || ev.Text != "a dot" || len(ev.Attachments) != 1 {
		t.Fatalf("event %+v; want a message with one attachment and the caption as its text", ev)
	}
	at := ev.Attachments[0]
	if at.Kind != platform.AttachPhoto || at.FileID == "" || at.Size != int64(len(png)) || at.MIMEType != "image/png" || at.FileName != "dot.png" || at.Caption != "a dot" {
		t.Errorf("event attachment %+v", at)
	}
	ctx := context.Background()
	if got, err := a.Download(ctx, at, int64(len(png))); err != nil || !bytes.Equal(got, png) {
		t.Errorf("Download = %d bytes, %v; want the photo", len(got), err)
	}
	if _, err := a.Download(ctx, at, int64(len(png)-1)); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrFileTooLarge) {
		t.Errorf("Download under the file's size = %v; want a permanent ErrFileTooLarge", err)
	}
	for _, bad := range []platform.Attachment{{FileID: "upload-999999"}, {FileID: "AgADBAAD"}, {URL: "https://example.com/a.png"}} {
		if _, err := a.Download(ctx, bad, 0); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
			t.Errorf("Download(%+v) = %v; want a permanent ErrInvalidMessage", bad, err)
		}
	}
	res, err := a.Sender().Send(ctx, platform.SendRequest{Target: ev.Chat, Message: platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: at.FileID, Caption: "back"}}}})
	if err != nil {
		t.Fatalf("send back by FileID: %v", err)
	}
	m := tab.readMessages(t, 1)[0]
	if len(m.Attachments) != 1 || !bytes.Equal(m.Attachments[0].Data, png) || m.Attachments[0].FileName != "dot.png" || m.ID != res.MessageID {
		t.Errorf("sent back: %+v; want the photo", m)
	}
	if _, err := a.Sender().Send(ctx, platform.SendRequest{Target: ev.Chat, Message: platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: "upload-999999"}}}}); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
		t.Errorf("send of an unknown FileID = %v; want a permanent ErrInvalidMessage", err)
	}
	bot.checkNoErrors(t)
}

// TestUploadBounds checks the bounds on files: one over MaxUpload is
// refused, the oldest files are forgotten past UploadBytes, a file frame
// over ReadLimit is read, a frame over ReadLimit that is not a file and
// one over a file frame's limit close the tab with 1009, and with
// NoUploads no file is taken.
func TestUploadBounds(t *testing.T) {
	t.Run("sizes", func(t *testing.T) {
		a, bot := start(t, webchat.Config{ReadLimit: 1024, MaxUpload: 10_000, UploadBytes: 25_000, UploadSlots: 1})
		tab := connect(t, a, hello{})
		tab.send(t, fileFrame(platform.AttachDocument, "big.bin", "", make([]byte, 10_001), ""))
		tab.expectError(t, "bad_frame")
		for i := range 3 { // over ReadLimit: each waits for the one slot
			tab.send(t, fileFrame(platform.AttachDocument, fmt.Sprintf("f%d.bin", i), "", bytes.Repeat([]byte{byte(i)}, 10_000), ""))
		}
		tab.readMessages(t, 3)
		evs := waitEvents(t, bot, 3)
		ctx := context.Background()
		if _, err := a.Download(ctx, evs[0].Attachments[0], 0); !errors.Is(err, platform.ErrInvalidMessage) {
			t.Errorf("Download of the oldest file past UploadBytes = %v; want it forgotten (ErrInvalidMessage)", err)
		}
		for _, ev := range evs[1:] {
			if got, err := a.Download(ctx, ev.Attachments[0], 0); err != nil || len(got) != 10_000 {
				t.Errorf("Download of %s = %d bytes, %v", ev.Attachments[0].FileName, len(got), err)
			}
		}
		huge := fmt.Sprintf(`{"type":"message","text":"%s"}`, strings.Repeat("a", 2000))
		if err := tab.ws.WriteMessage(websocket.TextMessage, []byte(huge)); err != nil {
			t.Fatal(err)
		}
		if code := tab.expectClose(t); code != websocket.CloseMessageTooBig {
			t.Errorf("a text frame over ReadLimit: close %d; want %d", code, websocket.CloseMessageTooBig)
		}
		again := connect(t, a, hello{})
		again.send(t, fileFrame(platform.AttachDocument, "x", "", make([]byte, 300_000), ""))
		if code := again.expectClose(t); code != websocket.CloseMessageTooBig {
			t.Errorf("a frame over a file frame's limit: close %d; want %d", code, websocket.CloseMessageTooBig)
		}
		last := connect(t, a, hello{})
		last.say(t, "/ping")
		if got := texts(last.readMessages(t, 2)); got[1] != "pong" {
			t.Errorf("after the refusals: %q", got)
		}
		bot.checkNoErrors(t)
	})
	t.Run("off", func(t *testing.T) {
		a, bot := start(t, webchat.Config{NoUploads: true})
		tab := connect(t, a, hello{})
		if tab.hist.MaxUp != 0 {
			t.Errorf("history's max_upload %d with NoUploads; want 0", tab.hist.MaxUp)
		}
		tab.send(t, fileFrame(platform.AttachPhoto, "", "", dotPNG(), ""))
		tab.expectError(t, "bad_frame")
		if n := len(bot.Events()); n != 0 {
			t.Errorf("%d events; want none", n)
		}
	})
	if _, err := webchat.New(webchat.Config{MaxUpload: 2 << 20, UploadBytes: 1 << 20}); !errors.Is(err, webchat.ErrInvalidConfig) {
		t.Errorf("New with UploadBytes under MaxUpload = %v; want ErrInvalidConfig", err)
	}
}

// TestUploadSlots: with one upload slot, a file frame over ReadLimit that
// arrives while another is still being read waits for it, so the files
// read at once stay bounded whatever the number of tabs.
func TestUploadSlots(t *testing.T) {
	a, bot := start(t, webchat.Config{ReadLimit: 1024, MaxUpload: 100_000, UploadSlots: 1})
	watcher := connect(t, a, hello{Room: "files"})
	first := connect(t, a, hello{Room: "files"})
	second := connect(t, a, hello{Room: "files"})
	frame := func(name string) []byte {
		b, err := json.Marshal(fileFrame(platform.AttachDocument, name, "", bytes.Repeat([]byte{'x'}, 9000), ""))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// The first tab sends part of its file, well over ReadLimit, and
	// holds the slot while the rest does not come.
	w, err := first.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	a1 := frame("a.bin")
	if _, err := w.Write(a1[:8000]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first file to take the slot", func() bool { return webchat.UploadSlotsTaken(a) == 1 })
	second.ws.SetWriteDeadline(time.Now().Add(ioTimeout))
	if err := second.ws.WriteMessage(websocket.TextMessage, frame("b.bin")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // time for the second file to overtake, were it not waiting
	if _, err := w.Write(a1[8000:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range watcher.readMessages(t, 2) {
		names = append(names, m.Attachments[0].FileName)
	}
	if !slices.Equal(names, []string{"a.bin", "b.bin"}) {
		t.Errorf("files arrived as %q; want a.bin first: b.bin waited for its slot", names)
	}
	waitFor(t, "the slot to be free", func() bool { return webchat.UploadSlotsTaken(a) == 0 })
	bot.checkNoErrors(t)
}
