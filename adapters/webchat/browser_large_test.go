package webchat_test

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/plugins/fileecho"
)

// bigPNG returns a PNG of w×h pixels, stored without compression, so
// that its size is about 3·w·h bytes.
func bigPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		row := img.Pix[y*img.Stride:]
		for x := range w { // the pixel's R, G, B and A, not through img.Set, which is slow under -race
			p := row[4*x : 4*x+4]
			p[0], p[1], p[2], p[3] = uint8(x), uint8(y), uint8(x^y), 255
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestBrowserLargeFile sends files of 4 MiB, the default MaxUpload, from
// the page in headless Chromium to the real engine running the fileecho
// plugin: a photo of 3.97 MB and a document of exactly 4 MiB. Their echoes
// and the bot's answers, each of which was a frame of 5.6 MB that filled
// the tab's 8 MiB queue and dropped the tab, now go by reference: the
// page shows all four, fetching the files, without ever being
// disconnected, and a reload shows them again from the history.
func TestBrowserLargeFile(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	dir := t.TempDir()
	photo := bigPNG(t, 1150, 1150)
	doc := bytes.Repeat([]byte("herald "), webchat.DefaultMaxUpload/7+1)[:webchat.DefaultMaxUpload]
	if len(photo) > webchat.DefaultMaxUpload || len(photo) < 3_900_000 {
		t.Fatalf("a photo of %d bytes; want about 4 MB, at most %d", len(photo), webchat.DefaultMaxUpload)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	photoPath, docPath := write("big.png", photo), write("big.txt", doc)
	ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error { return e.Use(fileecho.New()) })

	const (
		userFig = `document.querySelectorAll('#log .msg.user .attachments figure')`
		botFig  = `document.querySelectorAll('#log .msg.bot .attachments figure')`
	)
	// The photos are loaded, from this connection's file URLs, and the
	// documents link to theirs.
	shown := `(() => { const u = ` + userFig + `, b = ` + botFig + `;
		if (u.length !== 2 || b.length !== 2) { return false; }
		const img = u[0].querySelector('img'), back = b[0].querySelector('img');
		const byRef = (e) => e !== null && new URL(e.src || e.href).pathname.includes('/file/');
		return byRef(img) && img.complete && img.naturalWidth === 1150 &&
			byRef(back) && back.complete && back.naturalWidth === 1150 &&
			b[0].querySelector('figcaption').textContent === 'big.png: photo, ` + strconv.Itoa(len(photo)) + ` bytes' &&
			byRef(u[1].querySelector('a.document')) && byRef(b[1].querySelector('a.document')) &&
			b[1].querySelector('a.document').download === 'big.txt' &&
			b[1].querySelector('figcaption').textContent === 'big.txt: document, ` + strconv.Itoa(len(doc)) + ` bytes' })()`
	// The bot's document, fetched as its link would download it.
	const fetchDoc = `(() => { window.__doc = 'pending';
		fetch(document.querySelectorAll('#log .msg.bot a.document')[0].href)
			.then(r => r.ok ? r.arrayBuffer() : Promise.reject(r.status))
			.then(b => { window.__doc = b.byteLength + ':' + new TextDecoder().decode(b.slice(0, 7)); },
				e => { window.__doc = 'failed ' + e; });
		return true })()`
	notDropped := `document.body.dataset.disconnects === undefined`

	b := c.first()
	b.open(ec.a.URL())
	b.do(chromedp.SetUploadFiles(chromedp.ID("file"), []string{photoPath}))
	b.waitFor("the photo and its echo", `document.querySelectorAll('#log .msg.bot .attachments figure').length === 1`)
	b.do(chromedp.SetUploadFiles(chromedp.ID("file"), []string{docPath}))
	b.waitFor("both files and the bot's answers", shown+` && `+notDropped)
	b.eval(fetchDoc + ` && ''`)
	b.waitFor("the bot's document fetched whole", `window.__doc === '`+strconv.Itoa(len(doc))+`:herald '`)

	b.do(chromedp.Reload())
	b.waitFor("the files after reload, from the history", connected+` && `+shown)
	if n := len(ec.e.DeadLetters()); n != 0 {
		t.Errorf("%d dead letters; want none", n)
	}
	c.checkProblems()
}
