package webchat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// browserTimeout bounds the whole browser test, browser start included,
// and pollTimeout each wait for the page: bounds only, far above the
// second or two a test takes, since Chromium starting on a loaded machine
// (under go test ./..., beside other test binaries) can take many times
// longer.
const (
	browserTimeout = 2 * time.Minute
	pollTimeout    = 30 * time.Second
)

// browsers are the binaries findBrowser looks for, the headless shell
// first: Chromium's old headless mode, without the full browser's windows,
// extensions and browser UI, runs the package's browser tests on about a
// third of the CPU the full browser's headless mode takes (28 against 74
// core-seconds on 2 cores, which the rest of go test ./... shares).
var browsers = []string{
	"chromium-headless-shell", "chrome-headless-shell",
	"chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
}

// findBrowser returns the path of a Chromium or Chrome binary, or skips
// the test; with HERALD_REQUIRE_BROWSER set (CI sets it), a missing
// browser fails the test instead.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range browsers {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("HERALD_REQUIRE_BROWSER") != "" {
		t.Fatal("HERALD_REQUIRE_BROWSER is set but no Chromium or Chrome is on PATH")
	}
	t.Skipf("no Chromium or Chrome on PATH (looked for %s); install one to run the browser tests, "+
		"on Debian or Ubuntu: apt-get update && apt-get install -y chromium-headless-shell", strings.Join(browsers, ", "))
	return ""
}

// chromium is a test's part of the headless Chromium the package's tests
// share: a browser context of its own (a profile, so that no page of
// another test sees what its pages stored), with its first tab. Its tabs
// share the profile (localStorage), each with its own sessionStorage, and
// the page's exceptions, console errors and security (CSP) messages in
// every tab are collected for checkProblems.
type chromium struct {
	t       *testing.T
	ctx     context.Context // the first tab
	began   time.Time
	started time.Duration // how long the first tab took to open, Chromium's start included if this test started it
	wg      sync.WaitGroup

	mu       sync.Mutex
	problems []string
}

// sharedChromium is the headless Chromium of the package's browser tests:
// the first test that needs it starts it, and TestMain stops it once every
// test has run. One process rather than one per test saves each test the
// second or two Chromium takes to start.
var sharedChromium shared

type shared struct {
	once sync.Once
	ctx  context.Context // the browser's first tab, open while it runs
	end  func()          // stops the browser and waits for its goroutines
	err  error
	mu   sync.Mutex // guards stopping
}

// browser returns the context of the shared browser's first tab, starting
// the browser (the binary at exe) on the first call.
func (s *shared) browser(exe string) (context.Context, error) {
	s.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Headless,
			// Two renderer processes for every test's pages, not one per
			// browser context: a profile's storage stays its own (that is
			// the context, not the process), and the browser tests take
			// 12–15% less CPU (21–24 against 25–29 core-seconds, run in
			// turn four times).
			chromedp.Flag("renderer-process-limit", "2"))
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		s.mu.Lock()
		s.ctx, s.end = bctx, func() { bcancel(); acancel() }
		s.mu.Unlock()
		started := make(chan error, 1)
		go func() { started <- chromedp.Do(bctx) }()
		select {
		case s.err = <-started:
		case <-time.After(browserTimeout):
			s.err = fmt.Errorf("not started after %v", browserTimeout)
		}
		if s.err != nil {
			acancel() // the next Do or the start ends with the allocator
		}
	})
	return s.ctx, s.err
}

// stop stops the browser, if a test started it.
func (s *shared) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end != nil {
		s.end()
		s.end = nil
	}
}

// startChromium opens a browser context of t's own in the shared browser,
// with its first tab; t's cleanup closes it.
func startChromium(t *testing.T) *chromium {
	t.Helper()
	exe := findBrowser(t)
	c := &chromium{t: t, began: time.Now()}
	browser, err := sharedChromium.browser(exe)
	if err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	ctx, cancel := context.WithTimeout(browser, browserTimeout)
	bctx, bcancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(func() {
		bcancel()
		cancel()
		c.wg.Wait()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("opening a browser context in %s: %v", exe, err)
	}
	c.started = time.Since(c.began)
	c.ctx = bctx
	c.watch(bctx)
	return c
}

// watch collects the problems the page in the tab of ctx reports.
func (c *chromium) watch(ctx context.Context) {
	console := chromedp.Console(ctx)
	c.wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError || m.Source == "security" {
				c.mu.Lock()
				c.problems = append(c.problems, m.String())
				c.mu.Unlock()
			}
		}
	})
}

// first returns the browser's first tab.
func (c *chromium) first() *browser { return &browser{t: c.t, ctx: c.ctx} }

// newTab opens another tab in the browser for t (the browser's test or
// one of its subtests), closed when t ends.
func (c *chromium) newTab(t *testing.T) *browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(c.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	c.watch(ctx)
	return &browser{t: t, ctx: ctx}
}

// checkProblems fails the test if a page reported a problem.
func (c *chromium) checkProblems() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) > 0 {
		c.t.Errorf("the page reported problems:\n%s", strings.Join(c.problems, "\n"))
	}
}

// browser drives one headless tab.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// eval returns the value of a JavaScript expression in the page.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v (page: %s)", expr, err, b.describe())
	}
	return v
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v (page: %s)", err, b.describe())
	}
}

// open loads the chat page at url and waits for its connection.
func (b *browser) open(url string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url))
	b.waitFor("the connection", connected)
}

// waitFor polls the page until the JavaScript expression is true. A poll
// the page's JavaScript context went away under (a reload's navigation
// replaced it, or chromedp had not yet seen the new one when the poll
// began) starts again in the new context, within the same bound.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(pollTimeout)
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr,
			chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(max(time.Until(deadline), time.Millisecond))))
		if err == nil {
			return
		}
		if !contextLost(err) || time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s: %v (page: %s)", what, err, b.describe())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// contextLost reports whether err, a poll's, says the page's JavaScript
// context it ran in is gone: Chromium's answers when a navigation
// destroyed it, or when the poll named a context already replaced.
func contextLost(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Cannot find context with specified id") ||
		strings.Contains(s, "Execution context was destroyed") ||
		strings.Contains(s, "Inspected target navigated or closed")
}

// describe returns what the page shows, for failure messages.
func (b *browser) describe() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		status: document.getElementById('status').dataset.state,
		banner: document.getElementById('banner').textContent,
		input: document.getElementById('input').value,
		bot: Array.from(document.querySelectorAll('#log .msg.bot .text'), e => e.textContent),
		user: Array.from(document.querySelectorAll('#log .msg.user .text'), e => e.textContent)})`))
	if err != nil {
		return "unavailable: " + err.Error()
	}
	return s
}

// botTextsAre is a JavaScript expression true when the bot messages on the
// page are exactly want, in order; a want ending in "*" matches every text
// that starts with the rest (the ping plugin's "pong (latency 2ms)" is
// "pong*").
func botTextsAre(want ...string) string { return textsAre(".msg.bot", want) }

func userTextsAre(want ...string) string { return textsAre(".msg.user", want) }

func textsAre(sel string, want []string) string {
	w, _ := json.Marshal(want)
	return `((got, want) => got.length === want.length && got.every((g, i) =>
		want[i].endsWith('*') ? g.startsWith(want[i].slice(0, -1)) : g === want[i]))(
		Array.from(document.querySelectorAll('#log ` + sel + ` .text'), e => e.textContent), ` + string(w) + `)`
}

// pong is the ping plugin's answer, for botTextsAre.
const pong = "pong*"

// eventLog records the messages the engine's handlers saw.
type eventLog struct {
	mu  sync.Mutex
	evs []platform.Event
}

func (l *eventLog) add(ev platform.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

func (l *eventLog) events() []platform.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]platform.Event(nil), l.evs...)
}

// startBrowserBot runs the adapter under the real engine with the ping,
// echo, count and help plugins (see startEngine) and the handlers for what
// the page shows that the plugins do not send: inline buttons and their
// callbacks, HTML, Markdown and attachments (see richReply). It records
// every message event in the returned log.
func startBrowserBot(t *testing.T) (*engineChat, *eventLog) {
	t.Helper()
	seen := &eventLog{}
	ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error {
		for _, cmd := range []string{"buttons", "html", "md", "photo"} {
			msg, _ := richReply("/" + cmd)
			e.OnCommand(cmd, func(c *engine.Context) error {
				c.Reply(msg)
				return nil
			})
		}
		e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
			c.ReplyText("you pressed " + c.Event().Text)
			return nil
		})
		// Before the plugins' handlers, so an event is logged before its
		// reply can show.
		e.OnMessage(func(c *engine.Context) error {
			seen.add(c.Event())
			return nil
		}, engine.Priority(-1))
		return nil
	})
	return ec, seen
}

const connected = `document.getElementById('status').dataset.state === 'connected'`

// TestBrowser drives the real page in headless Chromium, talking to the
// real engine and plugins: it sends commands with Enter and with the Send
// button, sees the replies in order, reloads and sees the history, presses
// an inline button, checks that bot HTML cannot run script, shows
// attachments, and survives a dropped connection.
func TestBrowser(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	ec, seen := startBrowserBot(t)
	a := ec.a

	b := c.first()
	b.open(a.URL())
	b.do(chromedp.SendKeys(chromedp.ID("name"), "Ann\n"))

	// Enter sends.
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/ping\n"))
	b.waitFor("pong", botTextsAre(pong))

	// The Send button sends; the replies keep their order.
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/count 5"), chromedp.Click(chromedp.ID("send")))
	want := counting([]string{pong}, 5)
	b.waitFor("1…5", botTextsAre(want...))
	b.waitFor("the user's messages", userTextsAre("/ping", "/count 5"))

	// A reload shows the conversation again, and keeps the name.
	b.do(chromedp.Reload())
	b.waitFor("the connection after reload", connected)
	b.waitFor("the history after reload", botTextsAre(want...)+" && "+userTextsAre("/ping", "/count 5"))
	b.waitFor("the stored name", `document.getElementById('name').value === 'Ann'`)

	// Inline buttons: a callback button answers, a URL button is a link.
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/buttons\n"))
	want = append(want, "Choose")
	b.waitFor("the buttons", botTextsAre(want...)+` && document.querySelector('#log .msg.bot .kb-btn[data-data="yes"]') !== null`)
	b.waitFor("the URL button", `(() => { const l = document.querySelector('#log .msg.bot a.kb-url');
		return l !== null && l.href === 'https://example.com/docs' && l.target === '_blank' && l.rel.includes('noopener') })()`)
	b.do(chromedp.Click(chromedp.CSS(`#log .msg.bot .kb-btn[data-data="yes"]`)))
	want = append(want, "you pressed yes")
	b.waitFor("the callback's answer", botTextsAre(want...))

	// HTML and Markdown from the bot are shown with their markup but run
	// nothing and link only to web addresses.
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/html\n"))
	b.waitFor("the HTML message", `(() => { const m = Array.from(document.querySelectorAll('#log .msg.bot')).pop();
		const t = m && m.querySelector('.text');
		if (!t || t.textContent !== 'bold & italiclink site <3') return false;
		const links = t.querySelectorAll('a');
		return t.querySelector('b').textContent === 'bold' && t.querySelector('i').textContent === 'italic' &&
			t.querySelector('script, img') === null && links.length === 2 && !links[0].hasAttribute('href') &&
			links[1].href === 'https://example.com/?a=1&b=2' && links[1].rel === 'noopener noreferrer' })()`)
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/md\n"))
	b.waitFor("the Markdown message", `(() => { const m = Array.from(document.querySelectorAll('#log .msg.bot')).pop();
		const t = m && m.querySelector('.text');
		if (!t || t.textContent !== 'bold and code and site and [bad](javascript:alert(1))') return false;
		const links = t.querySelectorAll('a');
		return t.querySelector('strong').textContent === 'bold' && t.querySelector('code').textContent === 'code' &&
			links.length === 1 && links[0].href === 'https://example.com/' })()`)
	// Attachments: a photo as an image, a document as a download link.
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/photo\n"))
	b.waitFor("the attachments", `(() => { const m = Array.from(document.querySelectorAll('#log .msg.bot')).pop();
		const img = m && m.querySelector('.attachments img'), doc = m && m.querySelector('.attachments a.document');
		return img !== null && img.src.startsWith('data:image/png;base64,') && img.complete && img.naturalWidth === 1 &&
			img.alt === 'a dot' && doc !== null && doc.download === 'hello.txt' && doc.href.startsWith('data:') })()`)
	want = append(want, "(html)", "(markdown)", "(photo)") // counted below, not compared

	// A dropped connection is announced, retried, and announced as back.
	b.waitFor("the banner observer", `(() => { window.__banners = [];
		const el = document.getElementById('banner');
		new MutationObserver(() => window.__banners.push(el.hidden ? '' : el.textContent))
			.observe(el, { childList: true, characterData: true, subtree: true, attributes: true });
		return true })()`)
	if n := webchat.DropConnections(a); n != 1 {
		t.Fatalf("dropped %d connections; want the page's 1", n)
	}
	b.waitFor("the lost and back notices", `window.__banners.some(s => s.includes('Connection lost')) &&
		window.__banners.some(s => s.includes('Reconnected')) && `+connected)
	b.waitFor("the conversation after reconnecting", `window.__xss === undefined && document.querySelectorAll('#log .msg.bot').length === `+
		strconv.Itoa(len(want)))
	b.do(chromedp.SendKeys(chromedp.ID("input"), "/ping\n"))
	b.waitFor("pong after reconnecting", `Array.from(document.querySelectorAll('#log .msg.bot .text')).pop().textContent.startsWith('pong')`)

	evs := seen.events()
	if last := evs[len(evs)-1]; last.From.Name != "Ann" || last.Text != "/ping" {
		t.Errorf("last event = %+v; want /ping from Ann", last)
	}
	c.checkProblems()
	// Stopped after the console check: the page then fails to reconnect.
	if err := ec.stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if st := ec.e.Stats(); st.HandlerErrors != 0 || st.HandlerPanics != 0 || st.DeadLetters != 0 || st.Sends.Retries != 0 ||
		st.Sends.Delivered != uint64(len(want)+1) {
		t.Errorf("engine stats = %+v; want %d replies delivered and no failures", st, len(want)+1)
	}
	t.Logf("browser test: %v in total, %v of it starting Chromium", time.Since(c.began).Round(time.Millisecond), c.started.Round(time.Millisecond))
}
