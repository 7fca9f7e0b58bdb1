package webchat_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/plugins/fileecho"
)

// TestBrowserUpload sends a photo, captioned with the box's text, and a
// document from the page's attach button in headless Chromium, to the
// real engine running the fileecho plugin: the page shows each as the
// user's message, the plugin downloads each and sends it back with its
// size, a reload shows them all again, and a file over the server's limit
// is stopped by the page with a notice.
func TestBrowserUpload(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	dir := t.TempDir()
	png, notes := dotPNG(), []byte("Herald keeps notes.\n")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dot, txt, big := write("dot.png", png), write("notes.txt", notes), write("big.bin", make([]byte, 2000))
	ec := startEngine(t, webchat.Config{MaxUpload: 1000}, func(e *engine.Engine) error { return e.Use(fileecho.New()) })

	const (
		userFig = `document.querySelectorAll('#log .msg.user .attachments figure')`
		botFig  = `document.querySelectorAll('#log .msg.bot .attachments figure')`
	)
	shown := `(() => { const u = ` + userFig + `, b = ` + botFig + `;
		if (u.length !== 2 || b.length !== 2) { return false; }
		const img = u[0].querySelector('img'), back = b[0].querySelector('img');
		return img !== null && img.complete && img.naturalWidth === 1 && u[0].querySelector('figcaption').textContent === 'my dot' &&
			back !== null && back.complete && back.naturalWidth === 1 &&
			b[0].querySelector('figcaption').textContent === 'dot.png: photo, ` + strconv.Itoa(len(png)) + ` bytes' &&
			u[1].querySelector('a.document')?.textContent.includes('notes.txt') &&
			b[1].querySelector('a.document')?.download === 'notes.txt' &&
			b[1].querySelector('figcaption').textContent === 'notes.txt: document, ` + strconv.Itoa(len(notes)) + ` bytes' })()`

	b := c.first()
	b.do(chromedp.Navigate(ec.a.URL()))
	b.waitFor("the connection and the attach button", connected+` && !document.getElementById('attach').hidden && !document.getElementById('attach').disabled`)
	b.do(chromedp.SendKeys(chromedp.ID("input"), "my dot"))
	b.do(chromedp.SetUploadFiles(chromedp.ID("file"), []string{dot}))
	b.waitFor("the photo sent, its caption gone from the box", `document.querySelectorAll('#log .msg.user .attachments figure').length === 1 && document.getElementById('input').value === ''`)
	b.do(chromedp.SetUploadFiles(chromedp.ID("file"), []string{txt}))
	b.waitFor("both files and their echoes", shown)

	b.do(chromedp.SetUploadFiles(chromedp.ID("file"), []string{big}))
	b.waitFor("the notice of the file too large", bannerHas("too large"))

	b.do(chromedp.Reload())
	b.waitFor("the files after reload", connected+` && `+shown)
	if n := len(ec.e.DeadLetters()); n != 0 {
		t.Errorf("%d dead letters; want none", n)
	}
	c.checkProblems()
}
