package plugins_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/fileecho"
)

// noDownloads is a memory adapter that cannot download.
type noDownloads struct{ m *memory.Adapter }

func (n noDownloads) Name() string                                       { return n.m.Name() }
func (n noDownloads) Run(ctx context.Context, in platform.Inbound) error { return n.m.Run(ctx, in) }
func (n noDownloads) Sender() platform.Sender                            { return n.m.Sender() }

// A file comes back as bytes with its name, kind and size, replying to
// the user's message; a sticker has no caption, so its size follows as a
// text; a file over the limit, or on a platform without downloads, goes
// back by its ID with the size the platform reported. Texts are not the
// plugin's.
func TestFileEcho(t *testing.T) {
	mem := memory.New()
	// run handles the events say makes (the adapter is not run: its
	// events are handed to the engine here), then shuts the engine down,
	// which waits for the handlers and their sends.
	run := func(a platform.Adapter, p *fileecho.Plugin, say func() []platform.Event) {
		t.Helper()
		e, err := engine.New(engine.WithAdapter(a))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Use(p); err != nil {
			t.Fatal(err)
		}
		for _, ev := range say() {
			if err := e.HandleEvent(ev); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	chat, ann := memory.Private("1"), memory.User("1", "Ann")
	notes := bytes.Repeat([]byte("note\n"), 192)
	var doc, sticker platform.Event
	run(mem, fileecho.New(), func() []platform.Event {
		doc = mem.SayFile(chat, ann, platform.Attachment{Kind: platform.AttachDocument, FileName: "notes.txt", MIMEType: "text/plain"}, notes)
		sticker = mem.SayFile(chat, ann, platform.Attachment{Kind: platform.AttachSticker}, []byte("webp"))
		return []platform.Event{doc, sticker, mem.Say(chat, ann, "just text")}
	})
	sent := mem.Sent("1")
	if len(sent) != 3 {
		t.Fatalf("sent %d messages %+v; want the document, the sticker and its size", len(sent), sent)
	}
	d := sent[0].Message
	if len(d.Attachments) != 1 || !bytes.Equal(d.Attachments[0].Data, notes) || d.Attachments[0].Caption != "notes.txt: document, 960 bytes" ||
		d.Attachments[0].FileName != "notes.txt" || d.ReplyToID != doc.MessageID {
		t.Errorf("document back: %+v", d)
	}
	if s := sent[1].Message; len(s.Attachments) != 1 || s.Attachments[0].Kind != platform.AttachSticker || s.Attachments[0].Caption != "" || s.ReplyToID != sticker.MessageID {
		t.Errorf("sticker back: %+v", s)
	}
	if got := sent[2].Message.Text; got != "sticker, 4 bytes" {
		t.Errorf("sticker's size %q", got)
	}

	// Over the limit: by its ID.
	small := memory.New()
	run(small, &fileecho.Plugin{MaxBytes: 100}, func() []platform.Event {
		return []platform.Event{small.SayFile(chat, ann, platform.Attachment{Kind: platform.AttachPhoto}, notes)}
	})
	if sent := small.Sent("1"); len(sent) != 1 || sent[0].Message.Attachments[0].FileID == "" ||
		sent[0].Message.Attachments[0].Caption != "photo, 960 bytes (over the 100 bytes I download)" {
		t.Errorf("a photo over the limit came back as %+v", sent)
	}

	// No downloads: by its ID, with the size the platform reported.
	bare := memory.New()
	run(noDownloads{bare}, fileecho.New(), func() []platform.Event {
		return []platform.Event{bare.SayFile(chat, ann, platform.Attachment{Kind: platform.AttachVoice}, []byte("opus"))}
	})
	if sent := bare.Sent("1"); len(sent) != 1 || sent[0].Message.Attachments[0].FileID == "" || sent[0].Message.Attachments[0].Caption != "voice, 4 bytes" {
		t.Errorf("a voice note on a platform without downloads came back as %+v", sent)
	}
}

// holdCounter is a memory adapter that counts the files the plugin holds:
// downloaded and not yet sent back.
type holdCounter struct {
	m        *memory.Adapter
	mu       sync.Mutex
	held     int
	mostHeld int
}

func (h *holdCounter) Name() string                                       { return h.m.Name() }
func (h *holdCounter) Run(ctx context.Context, in platform.Inbound) error { return h.m.Run(ctx, in) }

func (h *holdCounter) Download(ctx context.Context, at platform.Attachment, maxBytes int64) ([]byte, error) {
	h.mu.Lock()
	h.held++
	h.mostHeld = max(h.mostHeld, h.held)
	h.mu.Unlock()
	return h.m.Download(ctx, at, maxBytes)
}

func (h *holdCounter) Sender() platform.Sender {
	inner := h.m.Sender()
	return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
		time.Sleep(time.Millisecond) // a moment on the wire, for files of other chats to pile up
		res, err := inner.Send(ctx, req)
		if len(req.Message.Attachments) > 0 {
			h.mu.Lock()
			h.held--
			h.mu.Unlock()
		}
		return res, err
	})
}

// Files of many chats at once are held at most Held at a time, and every
// one comes back.
func TestFileEchoHoldsFewAtOnce(t *testing.T) {
	h := &holdCounter{m: memory.New()}
	e, err := engine.New(engine.WithAdapter(h))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(&fileecho.Plugin{Held: 2}); err != nil {
		t.Fatal(err)
	}
	const chats = 20
	for i := range chats {
		id := strconv.Itoa(i)
		ev := h.m.SayFile(memory.Private(id), memory.User(id, "U"), platform.Attachment{Kind: platform.AttachDocument}, bytes.Repeat([]byte{byte(i)}, 1000))
		if err := e.HandleEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range chats {
		sent := h.m.Sent(strconv.Itoa(i))
		if len(sent) != 1 || !bytes.Equal(sent[0].Message.Attachments[0].Data, bytes.Repeat([]byte{byte(i)}, 1000)) {
			t.Errorf("chat %d got %d messages back; want its file", i, len(sent))
		}
	}
	if h.mostHeld > 2 {
		t.Errorf("%d files held at once; want at most Held (2)", h.mostHeld)
	}
}

// A file the platform no longer keeps — not fetched, and refused by
// reference — is answered with a word, not a failure.
func TestFileEchoFileGone(t *testing.T) {
	mem := memory.New()
	var failures atomic.Int32
	e, err := engine.New(engine.WithAdapter(mem), engine.WithOnError(func(*engine.Context, error) { failures.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(fileecho.New()); err != nil {
		t.Fatal(err)
	}
	chat := memory.Private("1")
	mem.FailNext("1", platform.Permanent(fmt.Errorf("gone: %w", platform.ErrInvalidMessage)))
	ev := platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, ID: "1", MessageID: "m1", Chat: chat, From: memory.User("1", "Ann"),
		Attachments: []platform.Attachment{{Kind: platform.AttachDocument, FileID: "forgotten", FileName: "a.txt", Size: 3}}}
	if err := e.HandleEvent(ev); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mem.Texts("1"); len(got) != 1 || got[0] != "a.txt: document, 3 bytes (the chat no longer keeps it: send it again)" {
		t.Fatalf("texts %q; want the word that the file is gone", got)
	}
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d handler failures; want none", n)
	}
}
