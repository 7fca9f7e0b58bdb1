package webchat_test

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// TestBrowserAnswersAndTyping drives button answers and a chat action
// through the real engine in headless Chromium: a press answered with a
// text shows it as a passing notice, one answered with an alert keeps it
// until clicked, one not answered shows nothing, and a slow handler's
// "typing" shows under the conversation until its reply arrives.
func TestBrowserAnswersAndTyping(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	release := make(chan struct{})
	ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error {
		e.OnCommand("ask", func(c *engine.Context) error {
			c.Reply(platform.OutboundMessage{Text: "press one", Buttons: [][]platform.Button{{
				{Text: "Note", Data: "note"}, {Text: "Alert", Data: "alert"}, {Text: "Quiet", Data: "quiet"}}}})
			return nil
		})
		e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			switch c.Text() {
			case "note":
				return c.Answer("Noted", false)
			case "alert":
				return c.Answer("Careful!", true)
			}
			c.ReplyText("pressed " + c.Text())
			return nil
		})
		e.OnCommand("slow", func(c *engine.Context) error {
			if err := c.Typing(); err != nil {
				return err
			}
			select {
			case <-release:
			case <-c.Context().Done():
				return c.Context().Err()
			}
			c.ReplyText("done")
			return nil
		})
		return nil
	})

	b := c.first()
	b.open(ec.a.URL())
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/ask\n"))
	b.waitFor("the buttons", botTextsAre("press one"))
	button := func(n int) chromedp.CSS {
		return chromedp.CSS(`#log .msg.bot .keyboard .kb-btn:nth-child(` + strconv.Itoa(n) + `)`)
	}
	b.do(chromedp.Click(button(1)))
	b.waitFor("the notice", `(() => { const el = document.getElementById('banner');
		return !el.hidden && el.textContent === 'Noted' && el.classList.contains('info') })()`)
	b.do(chromedp.Click(button(2)))
	b.waitFor("the alert", `(() => { const el = document.getElementById('banner');
		return !el.hidden && el.textContent === 'Careful!' && el.classList.contains('alert') })()`)
	b.do(chromedp.Click(chromedp.ID("banner")))
	b.waitFor("the alert dismissed", bannerHidden)
	b.do(chromedp.Click(button(3)))
	b.waitFor("the quiet press's reply", botTextsAre("press one", "pressed quiet")+` && `+bannerHidden)

	b.do(chromedp.SendKeys(chromedp.ID("input"), "/slow\n"))
	b.waitFor("typing", `(() => { const el = document.getElementById('action');
		return !el.hidden && el.textContent === 'Herald is typing…' && el.dataset.action === 'typing' })()`)
	close(release)
	b.waitFor("the reply, typing gone", botTextsAre("press one", "pressed quiet", "done")+
		` && document.getElementById('action').hidden`)
	c.checkProblems()
}
