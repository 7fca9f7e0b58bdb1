package webchat_test

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// silentWAV returns a WAV file of a fifth of a second of silence.
func silentWAV() []byte {
	const rate, samples = 8000, 1600
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+2*samples))
	b.WriteString("WAVEfmt ")
	binary.Write(&b, binary.LittleEndian, struct {
		Size                      uint32
		Format, Channels          uint16
		Rate, ByteRate            uint32
		BlockAlign, BitsPerSample uint16
	}{16, 1, 1, rate, 2 * rate, 2, 16})
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(2*samples))
	b.Write(make([]byte, 2*samples))
	return b.Bytes()
}

// twoFrameGIF returns an animated GIF of two 2×2 frames.
func twoFrameGIF() []byte {
	pal := color.Palette{color.Black, color.White}
	frames := []*image.Paletted{image.NewPaletted(image.Rect(0, 0, 2, 2), pal), image.NewPaletted(image.Rect(0, 0, 2, 2), pal)}
	frames[1].SetColorIndex(0, 0, 1)
	var b bytes.Buffer
	gif.EncodeAll(&b, &gif.GIF{Image: frames, Delay: []int{10, 10}})
	return b.Bytes()
}

// TestBrowserMedia has the bot send one attachment of every kind, through
// the real engine, and checks in headless Chromium that the page shows
// each as its kind is shown: voice notes and audio in audio players that
// load (so the page's Content-Security-Policy lets media from messages
// play), videos in players, a video note round, a GIF animation and a
// sticker as images, and a file whose bytes its kind cannot show as a
// download link.
func TestBrowserMedia(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	wav, fake := silentWAV(), []byte("not really a video")
	ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error {
		e.OnCommand("media", func(c *engine.Context) error {
			c.Reply(platform.OutboundMessage{Text: "media", Attachments: []platform.Attachment{
				{Kind: platform.AttachVoice, Data: wav, Caption: "a voice note"},
				{Kind: platform.AttachAudio, Data: wav, FileName: "tone.wav"},
				{Kind: platform.AttachVideo, Data: fake, MIMEType: "video/mp4; codecs=avc1", FileName: "clip.mp4", Caption: "a clip"},
				{Kind: platform.AttachVideoNote, Data: fake, MIMEType: "video/mp4"},
				{Kind: platform.AttachAnimation, Data: twoFrameGIF(), Caption: "a loop"},
				{Kind: platform.AttachSticker, Data: dotPNG()},
				{Kind: platform.AttachVoice, Data: []byte("plain text"), FileName: "notes.txt"},
			}})
			c.Reply(platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{
				{Kind: platform.AttachPhoto, Data: dotPNG(), Caption: "one"},
				{Kind: platform.AttachPhoto, Data: dotPNG(), Caption: "two"},
			}})
			return nil
		})
		return nil
	})

	b := c.first()
	b.open(ec.a.URL())
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/media\n"))
	const fig = `document.querySelectorAll('#log .msg.bot')[0].querySelectorAll('.attachments figure')`
	b.waitFor("the media", botTextsAre("media")+` && `+fig+`.length === 7`)
	b.waitFor("the players loaded", `(() => { const f = `+fig+`;
		const loaded = (au) => au !== null && au.controls && au.readyState >= 1 && au.duration > 0.1 && au.src.startsWith('data:audio/wav;base64,');
		return f[0].dataset.kind === 'voice' && loaded(f[0].querySelector('audio')) &&
			f[0].querySelector('.audio-label').textContent === '🎤 Voice message' && f[0].querySelector('figcaption').textContent === 'a voice note' &&
			f[1].dataset.kind === 'audio' && loaded(f[1].querySelector('audio')) && f[1].querySelector('.audio-label').textContent === '🎵 tone.wav' })()`)
	b.waitFor("the videos and images", `(() => { const f = `+fig+`;
		const v = f[2].querySelector('video'), n = f[3].querySelector('video'), gif = f[4].querySelector('img'), st = f[5].querySelector('img');
		const doc = f[6].querySelector('a.document');
		return v !== null && v.controls && !v.loop && v.src.startsWith('data:video/mp4;base64,') && !v.classList.contains('round') &&
			f[2].querySelector('figcaption').textContent === 'a clip' &&
			n !== null && n.controls && n.classList.contains('round') &&
			gif !== null && gif.src.startsWith('data:image/gif;base64,') && gif.complete && gif.naturalWidth === 2 && gif.alt === 'a loop' &&
			st !== null && st.classList.contains('sticker') && st.complete && st.naturalWidth === 1 &&
			doc !== null && doc.textContent === '🎤 notes.txt' && doc.download === 'notes.txt' && f[6].querySelector('audio') === null })()`)
	b.waitFor("the album", `(() => { const m = document.querySelectorAll('#log .msg.bot')[1];
		const imgs = m ? Array.from(m.querySelectorAll('.attachments img')) : [];
		return imgs.length === 2 && imgs.every(i => i.complete && i.naturalWidth === 1) &&
			Array.from(m.querySelectorAll('figcaption'), c => c.textContent).join() === 'one,two' })()`)
	c.checkProblems()
}

// TestBrowserReplyKeyboard drives a reply keyboard through the real
// engine in headless Chromium: it shows under the message box with its
// placeholder, a press sends the button's text as the user's message and
// hides the one-time keyboard, the toggle brings it back, a reload shows
// it again, and the bot's removal hides it and the toggle for good.
func TestBrowserReplyKeyboard(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error {
		e.OnCommand("kb", func(c *engine.Context) error {
			c.Reply(platform.OutboundMessage{Text: "pick one", Keyboard: &platform.ReplyKeyboard{
				Rows: [][]string{{"Tea", "Coffee"}, {"Water"}}, OneTime: true, Placeholder: "your drink"}})
			return nil
		})
		e.OnCommand("nokb", func(c *engine.Context) error {
			c.Reply(platform.OutboundMessage{Text: "bye", Keyboard: &platform.ReplyKeyboard{Remove: true}})
			return nil
		})
		for _, drink := range []string{"Tea", "Coffee", "Water"} {
			e.OnFullMatch(drink, func(c *engine.Context) error {
				c.ReplyText("you chose " + c.Text())
				return nil
			})
		}
		return nil
	})

	const (
		kbShown = `(() => { const kb = document.getElementById('reply-keyboard'), tg = document.getElementById('keyboard-toggle');
			const rows = Array.from(kb.querySelectorAll('.rk-row'), r => Array.from(r.querySelectorAll('.rk-btn'), b => b.textContent).join('|'));
			return !kb.hidden && kb.getBoundingClientRect().height > 0 && rows.join() === 'Tea|Coffee,Water' &&
				!tg.hidden && tg.getAttribute('aria-expanded') === 'true' &&
				document.getElementById('input').placeholder === 'your drink' })()`
		kbFolded = `(() => { const kb = document.getElementById('reply-keyboard'), tg = document.getElementById('keyboard-toggle');
			return kb.hidden && kb.querySelectorAll('.rk-btn').length === 3 && !tg.hidden && tg.getAttribute('aria-expanded') === 'false' })()`
		kbGone = `(() => { const kb = document.getElementById('reply-keyboard'), tg = document.getElementById('keyboard-toggle');
			return kb.hidden && kb.querySelector('.rk-btn') === null && tg.hidden &&
				document.getElementById('input').placeholder.startsWith('Message') })()`
	)
	b := c.first()
	b.do(chromedp.Navigate(ec.a.URL()))
	b.waitFor("the connection", connected+` && `+kbGone)
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/kb\n"))
	b.waitFor("the keyboard", botTextsAre("pick one")+` && `+kbShown)

	b.do(chromedp.Click(chromedp.CSS(`#reply-keyboard .rk-btn:nth-child(2)`)))
	b.waitFor("the press answered and the keyboard folded", userTextsAre("/kb", "Coffee")+` && `+
		botTextsAre("pick one", "you chose Coffee")+` && `+kbFolded+` && document.getElementById('input').value === ''`)
	b.do(chromedp.Click(chromedp.ID("keyboard-toggle")))
	b.waitFor("the keyboard brought back", kbShown)

	b.do(chromedp.Reload())
	b.waitFor("the keyboard after reload", connected+` && `+botTextsAre("pick one", "you chose Coffee")+` && `+kbShown)

	b.do(chromedp.SendKeys(chromedp.ID("input"), "/nokb\n"))
	b.waitFor("the keyboard removed", botTextsAre("pick one", "you chose Coffee", "bye")+` && `+kbGone)
	b.do(chromedp.Reload())
	b.waitFor("no keyboard after reload", connected+` && `+botTextsAre("pick one", "you chose Coffee", "bye")+` && `+kbGone)
	c.checkProblems()
}

// TestBrowserDelete has the bot delete one of its messages, which a later
// message replies to, and the user's command, through the real engine:
// both leave the page in place, the reply's quote says the message was
// deleted, and a reload shows neither.
func TestBrowserDelete(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error {
		e.OnCommand("del", func(c *engine.Context) error {
			doomed, err := c.ReplyText("doomed").Wait(c.Context())
			if err != nil {
				return err
			}
			c.Reply(platform.OutboundMessage{Text: "about it", ReplyToID: doomed.MessageID})
			c.Delete(doomed.MessageID)
			c.Delete(c.Event().MessageID)
			c.ReplyText("done")
			return nil
		})
		return nil
	})

	b := c.first()
	b.open(ec.a.URL())
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/ping\n"))
	b.waitFor("pong", botTextsAre(pong))
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/del\n"))
	b.waitFor("the deletions", botTextsAre(pong, "about it", "done")+` && `+userTextsAre("/ping")+` && (() => {
		const q = document.querySelector('#log .reply-to');
		return q !== null && q.textContent === '↩ (deleted message)' && q.disabled })()`)
	b.do(chromedp.Reload())
	b.waitFor("the deletions after reload", connected+` && `+botTextsAre(pong, "about it", "done")+` && `+userTextsAre("/ping")+
		` && document.querySelector('#log .reply-to') === null`)
	c.checkProblems()
}

// TestBrowserKeyboardFrames faces the page with keyboard and delete frames
// the adapter never sends: malformed keyboards in the history and in
// messages change nothing, a message without a keyboard leaves the one up,
// deletions of messages the page does not show and null ones are ignored,
// and the valid keyboard and deletion after them work.
func TestBrowserKeyboardFrames(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	fake := startFakeChat(t)
	const bot = `"bot":true,"from":{"id":"bot","name":"Bot"},"time":"2026-11-30T09:00:00Z"`
	fake.behave(func(ws *websocket.Conn) {
		fake.write(t, ws, `{"type":"history","chat":{"id":"c1","type":"private","title":""},`+
			`"user":{"id":"u1","name":"Ann"},"bot":{"id":"bot","name":"Bot"},"max_text":16384,"keyboard":{"rows":"Tea"},"messages":[`+
			`{"id":"1",`+bot+`,"text":"first"}]}`)
		for _, f := range []string{
			`{"type":"message","message":{"id":"2",` + bot + `,"text":"bad rows","keyboard":{"rows":[[""],[5],"x",null]}}}`,
			`{"type":"message","message":{"id":"3",` + bot + `,"text":"a string","keyboard":"Tea"}}`,
			`{"type":"message","message":{"id":"4",` + bot + `,"text":"good","keyboard":{"rows":[["A",7,"B"]],"placeholder":5}}}`,
			`{"type":"message","message":{"id":"5",` + bot + `,"text":"none"}}`,
			`{"type":"message","message":{"id":"6",` + bot + `,"text":"null","keyboard":null}}`,
			`{"type":"delete","message":{"id":"99"}}`,
			`{"type":"delete","message":null}`,
			`{"type":"delete","message":{"id":7}}`,
			`{"type":"delete","message":{"id":"3"}}`,
		} {
			fake.write(t, ws, f)
		}
	})
	b := c.newTab(t)
	b.do(chromedp.Navigate(fake.url()))
	b.waitFor("the frames", connected+` && `+botTextsAre("first", "bad rows", "good", "none", "null")+` && (() => {
		const kb = document.getElementById('reply-keyboard');
		return !kb.hidden && Array.from(kb.querySelectorAll('.rk-btn'), b => b.textContent).join() === 'A,B' &&
			document.getElementById('input').placeholder.startsWith('Message') })()`)
	c.checkProblems()
}
