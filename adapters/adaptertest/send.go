package adaptertest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// testSendText sends a text to a private and a group chat and checks the
// result and what the peer received.
func testSendText(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	for _, chat := range e.chats(0) {
		text := "hello, chat " + chat.ID + `: <b>&amp;</b> [CQ:face,id=1] *_~ "q" \ é 😀`
		before := time.Now()
		res := e.mustSend(chat, platform.TextMessage(text))
		after := time.Now()
		if res.ChatID != chat.ID {
			t.Errorf("chat %s: SendResult.ChatID = %q; want the target's ID", chat.ID, res.ChatID)
		}
		if res.MessageID == "" && !f.NoMessageID {
			t.Errorf("chat %s: SendResult.MessageID is empty (set Features.NoMessageID if the platform gives none)", chat.ID)
		}
		if res.SentAt.Before(before.Add(-time.Second)) || res.SentAt.After(after.Add(time.Second)) {
			t.Errorf("chat %s: SendResult.SentAt = %v; want the time of the send, between %v and %v",
				chat.ID, res.SentAt, before, after)
		}
		if got := e.received(chat, 1); got[0].Text != text {
			t.Errorf("chat %s received %q; want %q", chat.ID, got[0].Text, text)
		}
	}
}

// testReply has a user say something and answers it: the event's Chat
// must work as the target as it is, and the peer must see the answer as a
// reply to the user's message.
func testReply(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	for i, chat := range e.chats(0) {
		ctx, cancel := e.ctx(patience)
		e.say(ctx, chat, e.user(0), "a question")
		evs, err := e.rec.wait(ctx, i+1)
		cancel()
		if err != nil {
			t.Fatalf("Run delivered %s: %v", eventTexts(evs), err)
		}
		ev := evs[i]
		if ev.MessageID == "" {
			if !f.NoMessageID {
				t.Errorf("the event of %q in chat %s has no MessageID", ev.Text, chat.ID)
			}
			continue
		}
		res := e.mustSend(ev.Chat, platform.OutboundMessage{Text: "the answer", ReplyToID: ev.MessageID})
		if res.ChatID != chat.ID {
			t.Errorf("chat %s: the answer's SendResult.ChatID = %q", chat.ID, res.ChatID)
		}
		got := e.received(chat, 1)[0]
		if got.Text != "the answer" || got.ReplyToID != ev.MessageID {
			t.Errorf("chat %s received %q replying to %q; want %q replying to the user's message %q",
				chat.ID, got.Text, got.ReplyToID, "the answer", ev.MessageID)
		}
	}
}

// testSendOrder makes 50 sequential sends to one chat: they must arrive in
// order, each once, with different message IDs.
func testSendOrder(t *testing.T, h Harness, f Features) {
	const n = 50
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	want := make([]string, n)
	ids := map[string]int{}
	for i := range n {
		want[i] = fmt.Sprintf("in order %d", i)
		res := e.mustSend(chat, platform.TextMessage(want[i]))
		if res.MessageID == "" {
			continue
		}
		if j, dup := ids[res.MessageID]; dup {
			t.Errorf("sends %d and %d got the same MessageID %q", j, i, res.MessageID)
		}
		ids[res.MessageID] = i
	}
	if got := texts(e.received(chat, n)); !slices.Equal(got, want) {
		t.Errorf("chat %s received the messages out of order: %s", chat.ID, diffTexts(got, want))
	}
}

// testConcurrentChats sends to many chats at once, one goroutine per chat
// sending that chat's messages in sequence, as Herald's dispatcher does:
// every message must arrive, each chat's in order.
func testConcurrentChats(t *testing.T, h Harness, f Features) {
	const perChat = 10
	e := setup(t, h, f)
	var chats []platform.Chat
	for n := 10; n < 18; n++ {
		chats = append(chats, e.chat(n, platform.ChatPrivate))
	}
	if !f.NoGroups {
		chats = append(chats, e.chat(20, platform.ChatGroup), e.chat(21, platform.ChatGroup))
	}
	want := func(c int) []string {
		out := make([]string, perChat)
		for i := range out {
			out[i] = fmt.Sprintf("chat %d message %d", c, i)
		}
		return out
	}

	ctx, cancel := e.ctx(patience)
	defer cancel()
	errs := make(chan error, len(chats)*(perChat+1))
	var wg sync.WaitGroup
	for c, chat := range chats {
		wg.Go(func() {
			for _, text := range want(c) {
				r, err := e.trySend(ctx, chat, platform.TextMessage(text), patience+promptly)
				if err == nil {
					err = r.err
				}
				if err != nil {
					errs <- fmt.Errorf("Send(%s, %q): %w", chat.ID, text, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	for c, chat := range chats {
		wg.Go(func() {
			msgs, err := e.tryReceived(chat, perChat)
			if err != nil {
				t.Error(err)
				return
			}
			if got := texts(msgs); !slices.Equal(got, want(c)) {
				t.Errorf("chat %s received the messages out of order: %s", chat.ID, diffTexts(got, want(c)))
			}
		})
	}
	wg.Wait()
}

// testConcurrentSameChat sends to one chat from many goroutines at once:
// a Sender must be safe for concurrent use, so every message must arrive,
// once, in some order.
func testConcurrentSameChat(t *testing.T, h Harness, f Features) {
	const n = 20
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	ctx, cancel := e.ctx(patience)
	defer cancel()
	want := make([]string, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range want {
		want[i] = fmt.Sprintf("at once %02d", i)
		wg.Go(func() {
			r, err := e.trySend(ctx, chat, platform.TextMessage(want[i]), patience+promptly)
			if err == nil {
				err = r.err
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	got := texts(e.received(chat, n))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("chat %s received, sorted, %s", chat.ID, diffTexts(got, want))
	}
}

// testParseMode sends Markdown and HTML texts. With rich text the peer
// must get each in its parse mode; without, as written.
func testParseMode(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	msgs := []platform.OutboundMessage{
		{Text: "<b>bold</b> and <i>italic</i> &amp; more", ParseMode: platform.ParseHTML},
		{Text: "*bold* and _italic_ and `code`", ParseMode: platform.ParseMarkdown},
		{Text: "plain <b>not bold</b> *not bold*", ParseMode: platform.ParsePlain},
	}
	for _, m := range msgs {
		e.mustSend(chat, m)
	}
	got := e.received(chat, len(msgs))
	for i, m := range msgs {
		if got[i].Text != m.Text {
			t.Errorf("message %d: received text %q; want %q, as written", i, got[i].Text, m.Text)
		}
		switch {
		case f.NoParseMode && got[i].ParseMode != platform.ParsePlain:
			t.Errorf("message %d: received parse mode %q from a platform without parse modes", i, got[i].ParseMode)
		case !f.NoParseMode && got[i].ParseMode != m.ParseMode:
			t.Errorf("message %d: received parse mode %q; want %q (set Features.NoParseMode if the platform has none)",
				i, got[i].ParseMode, m.ParseMode)
		}
	}
}

// testButtons sends a message with callback and URL buttons. With buttons
// the peer must get them unchanged; without, the text must still arrive.
func testButtons(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	m := platform.OutboundMessage{Text: "Choose one", Buttons: [][]platform.Button{
		{{Text: "Yes", Data: "yes"}, {Text: "No", Data: "no"}},
		{{Text: "Docs", URL: "https://example.com/docs"}},
	}}
	e.mustSend(chat, m)
	got := e.received(chat, 1)[0]
	if got.Text != m.Text {
		t.Errorf("received text %q; want %q", got.Text, m.Text)
	}
	if f.NoButtons {
		return
	}
	if !slices.EqualFunc(got.Buttons, m.Buttons, slices.Equal) {
		t.Errorf("received buttons %+v; want %+v (set Features.NoButtons if the platform has none)", got.Buttons, m.Buttons)
	}
}

// testPhoto sends a photo by URL and one as bytes, each with a caption:
// each must arrive as one message holding the photo, its caption shown
// with it.
func testPhoto(t *testing.T, h Harness, f Features) {
	if f.NoAttachments {
		t.Skip("Features.NoAttachments: the platform sends no photos")
	}
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	sent := []platform.Attachment{
		{Kind: platform.AttachPhoto, URL: "https://example.com/herald.png", Caption: "a photo by URL"},
		{Kind: platform.AttachPhoto, Data: dotPNG(), FileName: "dot.png", Caption: "a photo as bytes"},
	}
	for _, at := range sent {
		e.mustSend(chat, platform.OutboundMessage{Attachments: []platform.Attachment{at}})
	}
	got := e.received(chat, len(sent))
	for i, want := range sent {
		m := got[i]
		if len(m.Attachments) != 1 {
			t.Errorf("message %d: received %d attachments; want the one photo sent", i, len(m.Attachments))
			continue
		}
		at := m.Attachments[0]
		if at.Kind != platform.AttachPhoto {
			t.Errorf("message %d: received a %q; want a photo", i, at.Kind)
		}
		if at.URL != want.URL || !bytes.Equal(at.Data, want.Data) {
			t.Errorf("message %d: received the photo with URL %q and %d bytes; want URL %q and %d bytes",
				i, at.URL, len(at.Data), want.URL, len(want.Data))
		}
		if at.Caption != want.Caption && !strings.Contains(m.Text, want.Caption) {
			t.Errorf("message %d: caption %q and text %q; want the caption %q in one of them", i, at.Caption, m.Text, want.Caption)
		}
	}
}

// dotPNG returns a 1×1 PNG image.
func dotPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 200, G: 40, B: 40, A: 255})
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // cannot fail: a valid image, written to memory
	return buf.Bytes()
}

// testLongText sends a text of the platform's greatest length: it must
// arrive whole, as one message.
func testLongText(t *testing.T, h Harness, f Features) {
	n := f.MaxText
	if n <= 0 {
		n = defaultLongText
	}
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	text := longText(n)
	e.mustSend(chat, platform.TextMessage(text))
	got := e.received(chat, 1)[0].Text
	if got != text {
		i := 0
		for i < len(got) && i < len(text) && got[i] == text[i] {
			i++
		}
		t.Errorf("received a text of %d bytes that differs from the %d bytes (%d characters) sent from byte %d on",
			len(got), len(text), n, i)
	}
}

// longText returns a text of n characters, all in the Basic Multilingual
// Plane, with words, line breaks and non-ASCII letters.
func longText(n int) string {
	const pattern = "Herald ✓ sends long texts whole — déjà vu, naïve café.\n"
	src := []rune(pattern)
	out := make([]rune, n)
	for i := range out {
		out[i] = src[i%len(src)]
	}
	return string(out)
}
