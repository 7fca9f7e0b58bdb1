package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// A handler reads a file's attachment, downloads it within a limit, sends
// it back with its size, and deletes its own earlier message, in order
// with the chat's sends.
func TestDownloadAndDelete(t *testing.T) {
	e, mem := newEngine(t)
	data := bytes.Repeat([]byte("x"), 1000)
	e.OnMessage(func(c *engine.Context) error {
		atts := c.Attachments()
		if len(atts) != 1 {
			return nil
		}
		if _, err := c.Download(c.Context(), atts[0], 999); !errors.Is(err, platform.ErrFileTooLarge) || !platform.IsPermanent(err) {
			t.Errorf("Download over the limit = %v; want a permanent ErrFileTooLarge", err)
		}
		b, err := c.Download(c.Context(), atts[0], 0)
		if err != nil {
			return err
		}
		first := c.ReplyText("downloading…")
		c.Reply(platform.OutboundMessage{Attachments: []platform.Attachment{{
			Kind: atts[0].Kind, Data: b, FileName: atts[0].FileName, Caption: fmt.Sprintf("%d bytes", len(b)),
		}}})
		res, err := first.Wait(c.Context())
		if err != nil {
			return err
		}
		c.Delete(res.MessageID)
		if _, err := c.Delete("").Wait(c.Context()); !errors.Is(err, platform.ErrInvalidMessage) {
			t.Errorf("Delete without an ID = %v; want ErrInvalidMessage", err)
		}
		return nil
	})
	runEngine(t, e)
	mem.SayFile(dm, ann, platform.Attachment{Kind: platform.AttachDocument, FileName: "a.txt"}, data)
	sent, err := mem.WaitSent(testCtx(t), dm.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if m := sent[1].Message; len(m.Attachments) != 1 || !bytes.Equal(m.Attachments[0].Data, data) || m.Attachments[0].Caption != "1000 bytes" {
		t.Fatalf("echo = %+v", m)
	}
	if sent[2].Message.DeleteID != sent[0].MessageID {
		t.Fatalf("third send %+v; want the deletion of %s", sent[2].Message, sent[0].MessageID)
	}
	if shown := mem.Shown(dm.ID); len(shown) != 1 || len(shown[0].Message.Attachments) != 1 {
		t.Fatalf("chat shows %+v; want only the file", shown)
	}
}

// Without a Downloader, Download fails with ErrUnsupported.
func TestDownloadUnsupported(t *testing.T) {
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(bareAdapter{mem}))
	must(t, err)
	defer e.Shutdown(t.Context())
	done := make(chan error, 1)
	e.OnMessage(func(c *engine.Context) error {
		_, err := c.Download(c.Context(), platform.Attachment{Kind: platform.AttachPhoto, FileID: "f"}, 0)
		done <- err
		return nil
	})
	must(t, e.HandleEvent(msg(dm, ann, "hi")))
	if err := <-done; !errors.Is(err, platform.ErrUnsupported) || !platform.IsPermanent(err) {
		t.Fatalf("Download = %v; want a permanent ErrUnsupported", err)
	}
}
