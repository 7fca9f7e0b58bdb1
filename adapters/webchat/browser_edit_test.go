package webchat_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// menuState is a JavaScript expression true when the first bot message on
// the page is the message id with the text text, whose buttons are
// exactly buttons (none: no keyboard at all), marked edited, and quoted
// as text by the "noted" replies to it.
func menuState(id, text string, buttons ...string) string {
	return `((id, text, buttons) => {
		const msgs = document.querySelectorAll('#log .msg.bot');
		const m = msgs[0];
		if (!m || m.dataset.id !== id || document.querySelectorAll('#log .msg[data-id="' + id + '"]').length !== 1) return false;
		const t = m.querySelector(':scope > .text');
		const kb = Array.from(m.querySelectorAll('.keyboard .kb-btn'), b => b.textContent);
		const quotes = Array.from(document.querySelectorAll('#log .reply-to'), q => q.textContent);
		return t !== null && t.textContent === text && kb.join() === buttons.join() &&
			(buttons.length > 0 || m.querySelector('.keyboard') === null) &&
			m.querySelector(':scope > .meta .edited') !== null &&
			quotes.length > 0 && quotes.every(q => q === '↩ ' + text) })(` +
		jsString(id) + `, ` + jsString(text) + `, ` + jsArray(buttons) + `)`
}

// jsString returns s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsArray returns s as a JavaScript array of strings.
func jsArray(s []string) string {
	b, _ := json.Marshal(append([]string{}, s...))
	return string(b)
}

// TestBrowserEdit drives a menu that the bot edits in place, through the
// real engine, in headless Chromium: a press replaces the menu's text
// (HTML, rendered safely) and buttons in its place and marks it edited,
// a reply quoting it follows the edit, a new button works and its edit
// removes the keyboard, and a reload shows the message as edited.
func TestBrowserEdit(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error {
		e.OnCommand("menu", func(c *engine.Context) error {
			c.Reply(drinkMenu())
			return nil
		})
		e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			id := c.Event().MessageID
			if c.Text() == "done" {
				c.Edit(id, platform.TextMessage("Enjoy your coffee"))
				return nil
			}
			c.Reply(platform.OutboundMessage{Text: "noted", ReplyToID: id})
			c.Edit(id, platform.OutboundMessage{ParseMode: platform.ParseHTML,
				Text:    `You picked <b>` + c.Text() + `</b><script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2">`,
				Buttons: [][]platform.Button{{{Text: "Back", Data: "back"}, {Text: "Done", Data: "done"}}}})
			return nil
		})
		return nil
	})

	b := c.first()
	b.open(ec.a.URL())
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/menu\n"))
	b.waitFor("the menu", botTextsAre("Pick a drink")+` && document.querySelectorAll('#log .msg.bot .kb-btn').length === 2`)
	id := b.eval(`document.querySelector('#log .msg.bot').dataset.id`)
	if b.eval(`String(document.querySelector('#log .msg.bot .meta .edited') === null)`) != "true" {
		t.Errorf("a new message is marked edited (page: %s)", b.describe())
	}

	b.do(chromedp.Click(chromedp.CSS(`#log .msg.bot .kb-btn[data-data="coffee"]`)))
	b.waitFor("the menu edited in place", menuState(id, "You picked coffee", "Back", "Done")+
		` && `+botTextsAre("You picked coffee", "noted"))
	b.waitFor("the edit's HTML rendered safely", `(() => { const t = document.querySelector('#log .msg.bot .text');
		return t.querySelector('b').textContent === 'coffee' && t.querySelector('script, img') === null &&
			window.__xss === undefined })()`)

	// The new Done button works; its edit removes the keyboard.
	b.do(chromedp.Click(chromedp.CSS(`#log .msg.bot .kb-btn[data-data="done"]`)))
	b.waitFor("the keyboard removed", menuState(id, "Enjoy your coffee")+` && `+botTextsAre("Enjoy your coffee", "noted"))

	b.do(chromedp.Reload())
	b.waitFor("the connection after reload", connected)
	b.waitFor("the edited menu after reload", menuState(id, "Enjoy your coffee")+` && `+botTextsAre("Enjoy your coffee", "noted"))
	c.checkProblems()
}

// TestBrowserEditFrames faces the page with edit frames the adapter never
// sends: an edit of a message it does not show and a null one are
// ignored, an edit it cannot render leaves the message as it was, and an
// edit that gives a photo-only message text puts the text above the
// attachment, removes the buttons and updates the quote of a reply.
func TestBrowserEditFrames(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	fake := startFakeChat(t)
	proceed := make(chan struct{})
	release := sync.OnceFunc(func() { close(proceed) })
	t.Cleanup(release) // before the fake chat's cleanup, so its handler returns
	fake.behave(func(ws *websocket.Conn) {
		fake.write(t, ws, `{"type":"history","chat":{"id":"c1","type":"private","title":""},`+
			`"user":{"id":"u1","name":"Ann"},"bot":{"id":"bot","name":"Bot"},"max_text":16384,"messages":[`+
			`{"id":"1","bot":true,"from":{"id":"bot","name":"Bot"},"time":"2026-11-30T09:00:00Z",`+
			`"attachments":[{"kind":"document","url":"https://example.com/a.pdf"}],"buttons":[[{"text":"A","data":"a"}]]},`+
			`{"id":"2","bot":true,"from":{"id":"bot","name":"Bot"},"text":"reply","reply_to":"1","time":"2026-11-30T09:01:00Z"}]}`)
		fake.write(t, ws, `{"type":"edit","message":{"id":"99","text":"ghost","edited":"2026-11-30T09:02:00Z"}}`)
		fake.write(t, ws, `{"type":"edit","message":null}`)
		fake.write(t, ws, `{"type":"edit","message":{"id":"1","text":"bad","buttons":[[null]]}}`)
		fake.write(t, ws, `{"type":"message","message":{"id":"3","bot":true,"from":{"id":"bot","name":"Bot"},"text":"marker","time":"2026-11-30T09:03:00Z"}}`)
		<-proceed
		fake.write(t, ws, `{"type":"edit","message":{"id":"1","text":"*new*","parse_mode":"Markdown","edited":"2026-11-30T09:04:00Z"}}`)
		fake.write(t, ws, `{"type":"message","message":{"id":"4","bot":true,"from":{"id":"bot","name":"Bot"},"text":"after","time":"2026-11-30T09:05:00Z"}}`)
	})
	b := c.newTab(t)
	b.do(chromedp.Navigate(fake.url()))
	const first = `document.querySelector('#log .msg[data-id="1"]')`
	b.waitFor("the bad edits ignored", connected+` && `+botTextsAre("reply", "marker")+` && (() => { const m = `+first+`;
		return m.querySelector('.text') === null && m.querySelector('.kb-btn').textContent === 'A' &&
			m.querySelector('.edited') === null && document.querySelector('#log .reply-to').textContent === '↩ (attachment)' &&
			document.querySelectorAll('#log .msg').length === 3 })()`)
	release()
	b.waitFor("the edit shown", botTextsAre("new", "reply", "marker", "after")+` && (() => { const m = `+first+`;
		const t = m.querySelector(':scope > .text');
		return t.querySelector('strong').textContent === 'new' && t.nextElementSibling === m.querySelector(':scope > .attachments') &&
			m.querySelector('.attachments a.document') !== null && m.querySelector('.keyboard') === null &&
			m.querySelector('.meta .edited').title.startsWith('Edited at ') &&
			document.querySelector('#log .reply-to').textContent === '↩ new' })()`)
	c.checkProblems()
}
