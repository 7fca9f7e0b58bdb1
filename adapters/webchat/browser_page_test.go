package webchat_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// The tests in this file drive the page in headless Chromium through what
// TestBrowser does not: several tabs, and pages facing bad input.

// chatOf is a JavaScript expression for the ID of the chat the page shows.
const chatOf = `document.body.dataset.chat || ''`

// TestBrowserTabs opens two tabs of one browser: each is a private chat of
// its own, for the same user, and a reload keeps each tab's conversation.
func TestBrowserTabs(t *testing.T) {
	t.Parallel()
	c := startChromium(t)
	ec, seen := startBrowserBot(t)

	one := c.first()
	one.do(chromedp.Navigate(ec.a.URL()))
	one.waitFor("the first tab's connection", connected)
	one.do(chromedp.SendKeys(chromedp.ID("input"), "/echo one\n"))
	one.waitFor("the first tab's reply", botTextsAre("one"))

	two := c.newTab(t)
	two.do(chromedp.Navigate(ec.a.URL()))
	two.waitFor("the second tab's connection", connected)
	// The page is connected once it has shown the history.
	if n := two.eval(`String(document.querySelectorAll('#log .msg').length)`); n != "0" {
		t.Fatalf("the new tab shows %s messages; want an empty conversation of its own (page: %s)", n, two.describe())
	}
	two.do(chromedp.SendKeys(chromedp.ID("input"), "/echo two\n"))
	two.waitFor("the second tab's reply", botTextsAre("two"))
	if one.eval(`String(document.querySelectorAll('#log .msg').length)`) != "2" {
		t.Errorf("the first tab shows the second tab's messages (page: %s)", one.describe())
	}
	chat1, chat2 := one.eval(chatOf), two.eval(chatOf)
	if chat1 == "" || chat2 == "" || chat1 == chat2 {
		t.Fatalf("the tabs show chats %q and %q; want two different chats", chat1, chat2)
	}

	// A reload keeps each tab's chat and conversation.
	for _, tc := range []struct {
		b    *browser
		chat string
		text string
	}{{two, chat2, "two"}, {one, chat1, "one"}} {
		tc.b.do(chromedp.Reload())
		tc.b.waitFor("the connection after reload", connected)
		tc.b.waitFor("the tab's own history after reload", userTextsAre("/echo "+tc.text)+" && "+botTextsAre(tc.text))
		if got := tc.b.eval(chatOf); got != tc.chat {
			t.Errorf("after reload the tab shows chat %q; want %q", got, tc.chat)
		}
	}

	evs := seen.events()
	if len(evs) != 2 || evs[0].Chat.ID != chat1 || evs[1].Chat.ID != chat2 || evs[0].Chat.Type != platform.ChatPrivate ||
		evs[0].From.ID == "" || evs[0].From.ID != evs[1].From.ID {
		t.Errorf("events = %+v; want one in each tab's private chat, from the same user", evs)
	}
	c.checkProblems()
}

// bannerHas is a JavaScript expression true when the banner shows a notice
// containing text.
func bannerHas(text string) string {
	return `(() => { const b = document.getElementById('banner');
		return !b.hidden && b.textContent.includes(` + jsString(text) + `) })()`
}

const bannerHidden = `document.getElementById('banner').hidden`

// TestBrowserConnection drives what the page does around its connection:
// a tab over MaxConnections says why it was refused while it retries and
// gets in when another tab closes; "New chat" starts a new private chat,
// which a reload keeps; a page that cannot reach the bot says so and
// connects once the bot runs.
func TestBrowserConnection(t *testing.T) {
	t.Parallel()
	c := startChromium(t)

	// The pages of each case reach an engine of their own.
	t.Run("pages", func(t *testing.T) {
		t.Run("too many tabs", func(t *testing.T) {
			t.Parallel()
			ec := startEngine(t, webchat.Config{MaxConnections: 1}, nil)
			one := c.newTab(t)
			one.do(chromedp.Navigate(ec.a.URL()))
			one.waitFor("the first tab's connection", connected)
			two := c.newTab(t)
			two.do(chromedp.Navigate(ec.a.URL()))
			two.waitFor("the refusal", bannerHas("too many open tabs")+` && `+bannerHas("Retrying")+
				` && document.getElementById('status').dataset.state !== 'connected' && document.getElementById('send').disabled`)
			one.do(chromedp.Navigate("about:blank"))
			two.waitFor("the second tab's connection", connected+` && `+bannerHidden)
			two.do(chromedp.SendKeys(chromedp.ID("input"), "/echo two\n"))
			two.waitFor("the reply", botTextsAre("two"))
		})

		t.Run("back and forward", func(t *testing.T) {
			t.Parallel()
			// A page left for the back/forward cache closes its socket (the
			// browser may keep it open otherwise, holding the tab's place),
			// and connects again when it is shown from the cache.
			ec := startEngine(t, webchat.Config{}, nil)
			openTabs := func(want int) {
				t.Helper()
				for deadline := time.Now().Add(pollTimeout); webchat.OpenTabs(ec.a) != want; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%d tabs open after %v; want %d", webchat.OpenTabs(ec.a), pollTimeout, want)
					}
				}
			}
			left := c.newTab(t)
			left.open(ec.a.URL())
			openTabs(1)
			left.do(chromedp.Navigate("about:blank"))
			openTabs(0)

			// Coming back from the cache, by the events the browser fires
			// (chromedp loses track of a page restored from the cache).
			b := c.newTab(t)
			b.open(ec.a.URL())
			b.do(chromedp.SendKeys(chromedp.ID("input"), "/echo one\n"))
			b.waitFor("the reply", botTextsAre("one"))
			b.eval(`(window.dispatchEvent(new PageTransitionEvent('pagehide', {persisted: true})), "")`)
			openTabs(0)
			b.eval(`(window.dispatchEvent(new PageTransitionEvent('pageshow', {persisted: true})), "")`)
			b.waitFor("the connection after coming back", connected+` && `+botTextsAre("one"))
			openTabs(1)
			b.do(chromedp.SendKeys(chromedp.ID("input"), "/echo two\n"))
			b.waitFor("the reply after coming back", botTextsAre("one", "two"))
		})

		t.Run("new chat", func(t *testing.T) {
			t.Parallel()
			ec := startEngine(t, webchat.Config{}, nil)
			b := c.newTab(t)
			b.open(ec.a.URL())
			b.do(chromedp.SendKeys(chromedp.ID("input"), "/echo one\n"))
			b.waitFor("the reply", botTextsAre("one"))
			old := b.eval(chatOf)
			b.do(chromedp.Click(chromedp.ID("new-chat")))
			b.waitFor("a new chat", connected+` && document.body.dataset.chat !== `+jsString(old)+
				` && document.querySelectorAll('#log .msg').length === 0 && !document.getElementById('empty').hidden`)
			chat := b.eval(chatOf)
			b.do(chromedp.SendKeys(chromedp.ID("input"), "/echo two\n"))
			b.waitFor("the reply in the new chat", botTextsAre("two")+` && `+userTextsAre("/echo two"))
			b.do(chromedp.Reload())
			b.waitFor("the new chat after reload", connected+` && document.body.dataset.chat === `+jsString(chat)+
				` && `+botTextsAre("two"))
		})
	})
	c.checkProblems()

	// Last: the refused handshakes make Chromium report errors, which
	// checkProblems would count.
	t.Run("bot not running", func(t *testing.T) {
		a, err := webchat.New(webchat.Config{NoServer: true})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(a.Handler())
		t.Cleanup(srv.Close)
		b := c.newTab(t)
		b.do(chromedp.Navigate(srv.URL + "/"))
		b.waitFor("the notice", bannerHas("Cannot reach the bot")+
			` && document.getElementById('status').dataset.state !== 'connected'`)

		bot := newTestBot(a.Sender())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, bot.inbound()) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
			bot.stop()
		})
		b.waitFor("the connection once the bot runs", connected+` && `+bannerHidden)
		b.do(chromedp.SendKeys(chromedp.ID("input"), "/ping\n"))
		b.waitFor("pong", botTextsAre("pong"))
	})
}

// TestBrowserBadInput faces the page with what could once leave it stuck
// on "Connecting…": a document URL it cannot decode, frames it cannot
// render, a refused hello, an invalid room name; and checks that a message
// the bot refuses while stopping goes back into the input box.
func TestBrowserBadInput(t *testing.T) {
	t.Parallel()
	c := startChromium(t)

	// These pages reach an engine of their own.
	t.Run("engines", func(t *testing.T) {
		t.Run("document URL with a bare percent sign", func(t *testing.T) {
			t.Parallel()
			ec := startEngine(t, webchat.Config{}, func(e *engine.Engine) error {
				e.OnCommand("doc", func(c *engine.Context) error {
					c.Reply(platform.OutboundMessage{Attachments: []platform.Attachment{
						{Kind: platform.AttachDocument, URL: "https://example.com/report-100%.pdf"}}})
					return nil
				})
				return nil
			})
			b := c.newTab(t)
			b.open(ec.a.URL())
			b.do(chromedp.SendKeys(chromedp.ID("input"), "/doc\n"))
			const link = `Array.from(document.querySelectorAll('#log .msg.bot a.document'), e => e.textContent).join() === '📄 report-100%.pdf'`
			b.waitFor("the document link", link)
			b.do(chromedp.Reload())
			b.waitFor("the connection and history after reload", connected+" && "+link+
				` && !document.getElementById('send').disabled`)
		})

		t.Run("stopping gives the text back", func(t *testing.T) {
			t.Parallel()
			a, bot := start(t, webchat.Config{})
			b := c.newTab(t)
			b.open(a.URL())
			bot.stopTaking()
			b.do(chromedp.SendKeys(chromedp.ID("input"), "/ping\n"))
			b.waitFor("the text back in the box", `document.getElementById('input').value === '/ping' &&
				document.getElementById('banner').textContent.includes('shutting down') &&
				document.querySelectorAll('#log .msg').length === 0`)
		})

		t.Run("valid room", func(t *testing.T) {
			t.Parallel()
			ec := startEngine(t, webchat.Config{}, nil)
			b := c.newTab(t)
			b.do(chromedp.Navigate(ec.a.URL() + "?room=Café.2"))
			b.waitFor("the room", connected+` && document.body.dataset.chat === 'room:Café.2'`)
		})
	})

	fake := startFakeChat(t)
	t.Run("frames the page cannot render", func(t *testing.T) {
		fake.behave(func(ws *websocket.Conn) {
			msg := func(id, text string, extra string) string {
				return `{"id":"` + id + `","bot":true,"from":{"id":"bot","name":"Bot"},"text":"` + text +
					`","time":"2026-11-30T09:00:00Z"` + extra + `}`
			}
			fake.write(t, ws, `{"type":"history","chat":{"id":"c1","type":"private","title":""},`+
				`"user":{"id":"u1","name":"Ann"},"bot":{"id":"bot","name":"Bot"},"max_text":16384,"messages":[`+
				msg("1", "one", "")+","+msg("2", "bad", `,"attachments":"not a list"`)+","+msg("3", "two", "")+`]}`)
			fake.write(t, ws, `{"type":"message","message":`+msg("4", "bad", `,"buttons":"not rows"`)+`}`)
			fake.write(t, ws, `{"type":"message","message":null}`)
			fake.write(t, ws, `{"type":"echo","message":{"id":"5"}}`)
			fake.write(t, ws, `{"type":"message","message":`+msg("6", "three", "")+`}`)
		})
		b := c.newTab(t)
		b.do(chromedp.Navigate(fake.url()))
		const broken = "(this message cannot be shown)"
		b.waitFor("every message that can be shown, in order", connected+" && "+
			botTextsAre("one", broken, "two", broken, "three"))
	})

	t.Run("refused hello", func(t *testing.T) {
		before := fake.connections()
		fake.behave(func(ws *websocket.Conn) {
			fake.write(t, ws, `{"type":"error","code":"bad_frame","text":"hello: not today"}`)
		})
		b := c.newTab(t)
		b.do(chromedp.Navigate(fake.url()))
		b.waitFor("a lasting notice", `document.getElementById('status').dataset.state === 'error' &&
			!document.getElementById('banner').hidden && document.getElementById('banner').dataset.sticky === 'true' &&
			document.getElementById('banner').textContent.includes('hello: not today') &&
			document.getElementById('send').disabled`)
		fake.waitIdle(t) // the page hung up
		if n := fake.connections() - before; n != 1 {
			t.Errorf("the page connected %d times; want once, no retries after the refusal", n)
		}
		b.waitFor("the notice still there", `document.getElementById('status').dataset.state === 'error' &&
			document.getElementById('banner').textContent.includes('hello: not today')`)
	})

	for _, room := range []string{"my%20room", strings.Repeat("a", 65), "a%2Fb"} {
		t.Run("invalid room "+room, func(t *testing.T) {
			before := fake.connections()
			b := c.newTab(t)
			b.do(chromedp.Navigate(fake.url() + "?room=" + room))
			b.waitFor("a lasting notice", `document.getElementById('status').dataset.state === 'error' &&
				document.getElementById('banner').dataset.sticky === 'true' &&
				document.getElementById('banner').textContent.includes('not a valid room name') &&
				document.getElementById('send').disabled`)
			if n := fake.connections() - before; n != 0 {
				t.Errorf("the page connected %d times with an invalid room; want 0", n)
			}
		})
	}
	c.checkProblems()
}

// fakeChat serves the real page with a WebSocket endpoint of the test's
// own, to face the page with frames the adapter never sends. Each
// connection reads the page's hello, then runs the current behaviour, then
// reads until the page hangs up.
type fakeChat struct {
	srv *httptest.Server
	up  websocket.Upgrader

	mu     sync.Mutex
	do     func(ws *websocket.Conn)
	conns  int
	active int
	idle   *sync.Cond // broadcast when active drops
	open   map[*websocket.Conn]bool
}

func startFakeChat(t *testing.T) *fakeChat {
	t.Helper()
	a, err := webchat.New(webchat.Config{NoServer: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeChat{open: map[*websocket.Conn]bool{}}
	f.idle = sync.NewCond(&f.mu)
	mux := http.NewServeMux()
	mux.Handle("/", a.Handler())
	mux.HandleFunc("/ws", f.serveWS)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.mu.Lock()
		for ws := range f.open {
			ws.Close()
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

func (f *fakeChat) url() string { return f.srv.URL + "/" }

// behave sets what the next connections are answered with.
func (f *fakeChat) behave(do func(ws *websocket.Conn)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.do = do
}

// connections returns the number of WebSocket connections so far.
func (f *fakeChat) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// waitIdle waits until no connection is open.
func (f *fakeChat) waitIdle(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		f.mu.Lock()
		for f.active > 0 {
			f.idle.Wait()
		}
		f.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(ioTimeout):
		t.Fatalf("a connection still open after %v", ioTimeout)
	}
}

func (f *fakeChat) write(t *testing.T, ws *websocket.Conn, frame string) {
	ws.SetWriteDeadline(time.Now().Add(ioTimeout))
	if err := ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		t.Errorf("fake chat: write: %v", err)
	}
}

func (f *fakeChat) serveWS(w http.ResponseWriter, r *http.Request) {
	ws, err := f.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.conns++
	f.active++
	f.open[ws] = true
	do := f.do
	f.mu.Unlock()
	defer func() {
		ws.Close()
		f.mu.Lock()
		f.active--
		delete(f.open, ws)
		f.idle.Broadcast()
		f.mu.Unlock()
	}()
	ws.SetReadDeadline(time.Now().Add(ioTimeout))
	if _, _, err := ws.ReadMessage(); err != nil || do == nil { // the hello
		return
	}
	do(ws)
	ws.SetReadDeadline(time.Time{})
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
	}
}
