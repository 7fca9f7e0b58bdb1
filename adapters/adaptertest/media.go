package adaptertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// refusedUnsupported sends msg to chat and checks that it is refused with
// a permanent error wrapping platform.ErrUnsupported.
func (e *env) refusedUnsupported(chat platform.Chat, msg platform.OutboundMessage, what, feature string) {
	e.t.Helper()
	ctx, cancel := e.ctx(patience)
	defer cancel()
	r := e.send(ctx, chat, msg, patience)
	if !platform.IsPermanent(r.err) || !errors.Is(r.err, platform.ErrUnsupported) {
		e.t.Errorf("chat %s: %s on a platform without it (%s) = %+v, %v; want a permanent error wrapping platform.ErrUnsupported",
			chat.ID, what, feature, r.res, r.err)
	}
}

// mediaSample is an attachment of kind sent as bytes, with a caption for
// the kinds that have one.
func mediaSample(kind platform.AttachmentKind) platform.Attachment {
	at := platform.Attachment{Kind: kind, Data: []byte("herald sample " + string(kind)), FileName: "sample-" + string(kind)}
	switch kind {
	case platform.AttachPhoto:
		at.Data, at.FileName = colorPNG(color.RGBA{G: 160, A: 255}), "sample.png"
	case platform.AttachSticker, platform.AttachVideoNote:
		return at
	}
	at.Caption = "a " + string(kind)
	return at
}

// mediaKinds are the attachment kinds the suite sends.
var mediaKinds = []platform.AttachmentKind{
	platform.AttachPhoto, platform.AttachDocument, platform.AttachVideo, platform.AttachAudio,
	platform.AttachVoice, platform.AttachAnimation, platform.AttachSticker, platform.AttachVideoNote,
}

// testMedia sends one attachment of every kind, as bytes: those the
// platform has must arrive, one message each, with their bytes and
// caption; the others must be refused with platform.ErrUnsupported.
func testMedia(t *testing.T, h Harness, f Features) {
	if f.NoAttachments {
		t.Skip("Features.NoAttachments: the platform sends no attachments")
	}
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	var sent []platform.Attachment
	for _, kind := range mediaKinds {
		at := mediaSample(kind)
		msg := platform.OutboundMessage{Attachments: []platform.Attachment{at}}
		if f.unsupportedMedia(kind) {
			e.refusedUnsupported(chat, msg, "a "+string(kind), "Features.UnsupportedMedia")
			continue
		}
		e.mustSend(chat, msg)
		sent = append(sent, at)
	}
	e.mustSend(chat, platform.TextMessage("after the media"))
	got := e.received(chat, len(sent)+1)
	for i, want := range sent {
		m := got[i]
		if len(m.Attachments) != 1 {
			t.Errorf("message %d: received %d attachments; want the one %s sent", i, len(m.Attachments), want.Kind)
			continue
		}
		at := m.Attachments[0]
		if at.Kind != want.Kind {
			t.Errorf("message %d: received a %q; want a %q (list kinds the platform cannot send in Features.UnsupportedMedia)", i, at.Kind, want.Kind)
		}
		if !bytes.Equal(at.Data, want.Data) {
			t.Errorf("message %d: received a %s of %d bytes; want the %d bytes sent", i, want.Kind, len(at.Data), len(want.Data))
		}
		if want.Caption != "" && at.Caption != want.Caption && !strings.Contains(m.Text, want.Caption) {
			t.Errorf("message %d: caption %q and text %q; want the caption %q in one of them", i, at.Caption, m.Text, want.Caption)
		}
	}
	if last := got[len(got)-1].Text; last != "after the media" {
		t.Errorf("last message %q; want %q", last, "after the media")
	}
}

// colorPNG returns a 1×1 PNG image of c.
func colorPNG(c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, c)
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // cannot fail: a valid image, written to memory
	return buf.Bytes()
}

// testAlbum sends three photos as one album: they must arrive in order,
// with their bytes and captions, in one message or several; or, with
// Features.NoAlbum, the album must be refused with platform.ErrUnsupported.
func testAlbum(t *testing.T, h Harness, f Features) {
	if f.NoAttachments {
		t.Skip("Features.NoAttachments: the platform sends no attachments")
	}
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	album := platform.OutboundMessage{Album: true}
	for i, c := range []color.RGBA{{R: 255, A: 255}, {G: 255, A: 255}, {B: 255, A: 255}} {
		album.Attachments = append(album.Attachments, platform.Attachment{
			Kind: platform.AttachPhoto, Data: colorPNG(c), FileName: fmt.Sprintf("%d.png", i+1), Caption: fmt.Sprintf("photo %d", i+1),
		})
	}
	if f.NoAlbum {
		e.refusedUnsupported(chat, album, "an album", "Features.NoAlbum")
		e.mustSend(chat, platform.TextMessage("after the album"))
		e.expectOnly(chat, "after the album")
		return
	}
	e.mustSend(chat, album)
	var got []platform.Attachment
	var msgs []platform.OutboundMessage
	for len(got) < len(album.Attachments) && len(msgs) < len(album.Attachments) {
		ctx, cancel := e.ctx(patience)
		var err error
		msgs, err = e.peer.Received(ctx, chat, len(msgs)+1)
		cancel()
		if err != nil {
			t.Fatalf("chat %s: Peer.Received: %v; got %s", chat.ID, err, abridge(texts(msgs)))
		}
		got = got[:0]
		for _, m := range msgs {
			for _, at := range m.Attachments {
				// A platform that shows captions as text may hold the
				// album's captions in its message's text.
				at.Caption += "\n" + m.Text
				got = append(got, at)
			}
		}
	}
	if len(got) != len(album.Attachments) {
		t.Fatalf("received %d photos in %d messages; want the album's %d", len(got), len(msgs), len(album.Attachments))
	}
	for i, want := range album.Attachments {
		if at := got[i]; at.Kind != platform.AttachPhoto || !bytes.Equal(at.Data, want.Data) || !strings.Contains(at.Caption, want.Caption) {
			t.Errorf("album photo %d: received a %q of %d bytes with caption and text %q; want the photo of %d bytes with caption %q",
				i, at.Kind, len(at.Data), at.Caption, len(want.Data), want.Caption)
		}
	}
}

// testDelete deletes a message: the result names it, and a ShowingPeer no
// longer shows it; a deletion of a message that does not exist is not
// retryable. With Features.NoDelete the deletion is refused with
// platform.ErrUnsupported.
func testDelete(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	if f.NoDelete {
		e.refusedUnsupported(chat, platform.DeleteMessage("1"), "a deletion", "Features.NoDelete")
		e.mustSend(chat, platform.TextMessage("after the deletion"))
		e.expectOnly(chat, "after the deletion")
		return
	}
	if f.NoMessageID {
		t.Skip("a deletion needs the message's ID, and the platform gives none")
	}
	e.mustSend(chat, platform.TextMessage("keep me"))
	doomed := e.mustSend(chat, platform.TextMessage("delete me"))
	e.received(chat, 2)
	res := e.mustSend(chat, platform.DeleteMessage(doomed.MessageID))
	if res.MessageID != doomed.MessageID || res.ChatID != chat.ID {
		t.Errorf("deletion result names message %q in chat %q; want the deleted message %q in %q", res.MessageID, res.ChatID, doomed.MessageID, chat.ID)
	}
	e.mustSend(chat, platform.TextMessage("after the deletion"))
	if got := texts(e.received(chat, 3)); !slices.Equal(got, []string{"keep me", "delete me", "after the deletion"}) {
		t.Errorf("chat %s received %q; want the two messages and the one after the deletion (a deletion is no message)", chat.ID, got)
	}
	if sp, ok := e.peer.(ShowingPeer); ok {
		ctx, cancel := e.ctx(patience)
		defer cancel()
		for {
			shown, err := sp.Shown(ctx, chat)
			if err == nil && slices.Equal(texts(shown), []string{"keep me", "after the deletion"}) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("chat %s shows %q (err %v); want the deleted message gone", chat.ID, texts(shown), err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	ctx, cancel := e.ctx(patience)
	r := e.send(ctx, chat, platform.DeleteMessage("987654321"), patience)
	cancel()
	if r.err != nil && !platform.IsPermanent(r.err) {
		t.Errorf("deletion of a message that does not exist = %v; want success (already gone) or a permanent error", r.err)
	}
}

// testReplyKeyboard sends a reply keyboard and then removes it: the peer
// must receive both as sent. With Features.NoReplyKeyboard the keyboard is
// refused with platform.ErrUnsupported and the removal accepted.
func testReplyKeyboard(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	kb := platform.OutboundMessage{Text: "pick one", Keyboard: &platform.ReplyKeyboard{
		Rows: [][]string{{"Tea", "Coffee"}, {"Water"}}, OneTime: true, Placeholder: "your drink",
	}}
	remove := platform.OutboundMessage{Text: "thanks", Keyboard: &platform.ReplyKeyboard{Remove: true}}
	if f.NoReplyKeyboard {
		e.refusedUnsupported(chat, kb, "a reply keyboard", "Features.NoReplyKeyboard")
		e.mustSend(chat, remove)
		e.expectOnly(chat, "thanks")
		return
	}
	e.mustSend(chat, kb)
	e.mustSend(chat, remove)
	got := e.received(chat, 2)
	if k := got[0].Keyboard; k == nil || !slices.EqualFunc(k.Rows, kb.Keyboard.Rows, slices.Equal) || !k.OneTime || k.Remove {
		t.Errorf("received keyboard %+v; want %+v (set Features.NoReplyKeyboard if the platform has none)", k, kb.Keyboard)
	}
	if k := got[1].Keyboard; k == nil || !k.Remove || len(k.Rows) > 0 {
		t.Errorf("received %+v with the removal; want a keyboard removal", k)
	}
	if got[0].Text != kb.Text || got[1].Text != remove.Text {
		t.Errorf("received %q; want %q and %q", texts(got), kb.Text, remove.Text)
	}
}

// testDownload has a user send a document and a photo: each must arrive as
// an event with one attachment that Download fetches whole, and refuses
// for good under a limit smaller than the file. With Features.NoDownload,
// an adapter that is a Downloader must refuse with platform.ErrUnsupported.
func testDownload(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	d, isDownloader := e.a.(platform.Downloader)
	if f.NoDownload {
		if isDownloader {
			ctx, cancel := e.ctx(promptly)
			defer cancel()
			_, err := d.Download(ctx, platform.Attachment{Kind: platform.AttachDocument, FileID: "1"}, 0)
			if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrUnsupported) {
				t.Errorf("Download on an adapter without downloads (Features.NoDownload) = %v; want a permanent error wrapping platform.ErrUnsupported", err)
			}
		}
		return
	}
	fp, ok := e.peer.(FilePeer)
	switch {
	case !isDownloader:
		t.Fatal("the adapter is not a platform.Downloader; set Features.NoDownload if it cannot fetch files")
	case !ok:
		t.Fatal("the peer is not an adaptertest.FilePeer, which the download check needs; set Features.NoDownload if the adapter cannot fetch files")
	}
	chat := e.chat(0, platform.ChatPrivate)
	user := e.user(0)
	files := []struct {
		at   platform.Attachment
		data []byte
	}{
		{platform.Attachment{Kind: platform.AttachDocument, FileName: "notes.txt", MIMEType: "text/plain", Caption: "my notes"},
			[]byte(strings.Repeat("Herald downloads files.\n", 40))},
		{platform.Attachment{Kind: platform.AttachPhoto, Caption: "my photo"}, colorPNG(color.RGBA{R: 9, G: 99, B: 199, A: 255})},
	}
	ctx, cancel := e.ctx(patience)
	defer cancel()
	for _, file := range files {
		if err := fp.SayFile(ctx, chat, user, file.at, file.data); err != nil {
			t.Fatalf("FilePeer.SayFile(%s): %v", file.at.Kind, err)
		}
	}
	evs, err := e.rec.wait(ctx, len(files))
	if err != nil {
		t.Fatalf("events of the files sent: %v", err)
	}
	for i, file := range files {
		ev := evs[i]
		if ev.Kind != platform.EventMessage || len(ev.Attachments) != 1 {
			t.Errorf("file %d: event %s with %d attachments; want a message with the one %s sent", i, ev.Kind, len(ev.Attachments), file.at.Kind)
			continue
		}
		at := ev.Attachments[0]
		switch {
		case at.Kind != file.at.Kind:
			t.Errorf("file %d: attachment of kind %q; want %q", i, at.Kind, file.at.Kind)
		case at.FileID == "" && at.URL == "":
			t.Errorf("file %d: attachment %+v names no file (FileID or URL)", i, at)
		case at.Size != 0 && at.Size != int64(len(file.data)):
			t.Errorf("file %d: attachment size %d; want %d (or 0 for unknown)", i, at.Size, len(file.data))
		case file.at.FileName != "" && at.FileName != "" && at.FileName != file.at.FileName:
			t.Errorf("file %d: attachment named %q; want %q", i, at.FileName, file.at.FileName)
		case at.Caption != file.at.Caption && ev.Text != file.at.Caption:
			t.Errorf("file %d: caption %q and text %q; want the caption %q in one of them", i, at.Caption, ev.Text, file.at.Caption)
		}
		got, err := d.Download(ctx, at, int64(len(file.data)))
		if err != nil || !bytes.Equal(got, file.data) {
			t.Errorf("file %d: Download with a limit of its size = %d bytes, %v; want the %d bytes sent", i, len(got), err, len(file.data))
		}
		if got, err := d.Download(ctx, at, 0); err != nil || !bytes.Equal(got, file.data) {
			t.Errorf("file %d: Download with the default limit = %d bytes, %v; want the %d bytes sent", i, len(got), err, len(file.data))
		}
		small, err := d.Download(ctx, at, int64(len(file.data)-1))
		if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrFileTooLarge) {
			t.Errorf("file %d: Download with a limit 1 byte short = %d bytes, %v; want a permanent error wrapping platform.ErrFileTooLarge", i, len(small), err)
		}
	}
	_, err = d.Download(ctx, platform.Attachment{Kind: platform.AttachDocument}, 0)
	if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
		t.Errorf("Download of an attachment naming no file = %v; want a permanent error wrapping platform.ErrInvalidMessage", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := d.Download(cctx, evs[0].Attachments[0], 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Download with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
}
