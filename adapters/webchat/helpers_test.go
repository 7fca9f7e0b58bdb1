package webchat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// ioTimeout bounds every single wait on the network in these tests; a
// correct adapter answers in milliseconds.
const ioTimeout = 10 * time.Second

// testBot answers events through the adapter's Sender the way Herald's
// dispatcher would: one goroutine per chat sends that chat's replies in
// order, and chats are served concurrently.
//
//	/ping       → "pong"
//	/count N    → N messages "1" … "N"
//	/buttons    → "Choose" with buttons yes, no and a URL button
//	/html       → HTML with markup and script that must not run
//	/md         → Markdown with markup and a link
//	/photo      → a photo and a document, both as bytes
//	callback D  → "you pressed D"
type testBot struct {
	sender    platform.Sender
	receiving chan struct{} // Run's Inbound.Receiving
	stopOnce  sync.Once

	mu     sync.Mutex
	queues map[string]chan platform.Event
	events []platform.Event
	errs   []error
	sent   chan struct{} // a token per successful send, for waiting
	wg     sync.WaitGroup
}

func newTestBot(s platform.Sender) *testBot {
	return &testBot{sender: s, receiving: make(chan struct{}), queues: make(map[string]chan platform.Event), sent: make(chan struct{}, 1<<16)}
}

// inbound is what the bot gives Run.
func (b *testBot) inbound() platform.Inbound {
	return platform.Inbound{Handle: b.handle, Receiving: b.receiving}
}

// stopTaking closes Run's Inbound.Receiving: it takes no more events.
func (b *testBot) stopTaking() { b.stopOnce.Do(func() { close(b.receiving) }) }

// handle is the Run handle func: it records the event and queues it for
// the chat's worker, never blocking, and takes it.
func (b *testBot) handle(ev platform.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, ev)
	q := b.queues[ev.Chat.ID]
	if q == nil {
		q = make(chan platform.Event, 1024)
		b.queues[ev.Chat.ID] = q
		b.wg.Go(func() {
			for ev := range q {
				b.answer(ev)
			}
		})
	}
	select {
	case q <- ev:
	default:
		b.errs = append(b.errs, fmt.Errorf("test bot: queue of chat %s full", ev.Chat.ID))
	}
	return nil
}

// stop ends the workers once Run has returned (handle is not called any
// more).
func (b *testBot) stop() {
	b.mu.Lock()
	for _, q := range b.queues {
		close(q)
	}
	b.queues = map[string]chan platform.Event{}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *testBot) answer(ev platform.Event) {
	if ev.Kind == platform.EventCallback {
		b.reply(ev, platform.TextMessage("you pressed "+ev.Text))
		return
	}
	cmd, arg, _ := strings.Cut(ev.Text, " ")
	switch cmd {
	case "/ping":
		b.reply(ev, platform.TextMessage("pong"))
	case "/count":
		n, err := strconv.Atoi(arg)
		if err != nil {
			b.fail(fmt.Errorf("test bot: bad /count argument %q", arg))
			return
		}
		for i := 1; i <= n; i++ {
			b.reply(ev, platform.TextMessage(strconv.Itoa(i)))
		}
	default:
		if msg, ok := richReply(cmd); ok {
			b.reply(ev, msg)
		}
	}
}

// richReply returns the answer to the commands that exercise the page's
// rendering — /buttons, /html, /md and /photo — and whether cmd is one of
// them. The test bot and the browser test's engine both answer with it.
func richReply(cmd string) (platform.OutboundMessage, bool) {
	switch cmd {
	case "/buttons":
		return platform.OutboundMessage{Text: "Choose", Buttons: [][]platform.Button{
			{{Text: "Yes", Data: "yes"}, {Text: "No", Data: "no"}},
			{{Text: "Docs", URL: "https://example.com/docs"}},
		}}, true
	case "/html":
		return platform.OutboundMessage{ParseMode: platform.ParseHTML,
			Text: `<b>bold</b> &amp; <i>it&#97;lic</i><script>window.__xss = 1</script>` +
				`<img src="x" onerror="window.__xss = 2"><a href="javascript:window.__xss = 3">link</a> ` +
				`<a href='https://example.com/?a=1&amp;b=2'>site</a> &lt;3`}, true
	case "/photo":
		return platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachPhoto, Data: dotPNG(), Caption: "a dot"},
			{Kind: platform.AttachDocument, Data: []byte("hello\n"), FileName: "hello.txt"},
		}}, true
	case "/md":
		return platform.OutboundMessage{ParseMode: platform.ParseMarkdown,
			Text: "*bold* and `code` and [site](https://example.com) and [bad](javascript:alert(1))"}, true
	}
	return platform.OutboundMessage{}, false
}

func (b *testBot) reply(ev platform.Event, msg platform.OutboundMessage) {
	_, err := b.sender.Send(context.Background(), platform.SendRequest{Platform: ev.Platform, Target: ev.Chat, Message: msg})
	if err != nil {
		b.fail(err)
		return
	}
	b.sent <- struct{}{}
}

func (b *testBot) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, err)
}

// Events returns the events handled so far.
func (b *testBot) Events() []platform.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]platform.Event(nil), b.events...)
}

// checkNoErrors fails the test if any reply failed.
func (b *testBot) checkNoErrors(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := errors.Join(b.errs...); err != nil {
		t.Errorf("bot errors: %v", err)
	}
}

// start runs an adapter for cfg (on a free port of 127.0.0.1 unless cfg
// says otherwise) with a testBot, and stops both when the test ends,
// checking that Run returns nil.
func start(t *testing.T, cfg webchat.Config) (*webchat.Adapter, *testBot) {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	a, err := webchat.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	bot := newTestBot(a.Sender())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, bot.inbound()) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v; want nil", err)
			}
		case <-time.After(ioTimeout):
			t.Errorf("Run did not return %v after its context ended", ioTimeout)
		}
		bot.stop()
	})
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(ioTimeout):
		t.Fatal("adapter not ready")
	}
	return a, bot
}

// frame is any server frame, decoded.
type frame struct {
	Type     string    `json:"type"`
	Code     string    `json:"code"`
	Text     string    `json:"text"`
	Ref      string    `json:"ref"`
	Chat     wireChat  `json:"chat"`
	User     wireUser  `json:"user"`
	Bot      wireUser  `json:"bot"`
	MaxText  int       `json:"max_text"`
	MaxUp    int       `json:"max_upload"`
	FileKey  string    `json:"file_key"`
	Keyboard *keyboard `json:"keyboard"`
	Messages []message `json:"messages"`
	Message  *message  `json:"message"`
	Answer   *answer   `json:"answer"`
	Action   string    `json:"action"`
}

// answer is the answer of an answer frame.
type answer struct {
	QueryID   string `json:"query_id"`
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	Alert     bool   `json:"alert"`
}

type wireChat struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title"`
}

type wireUser struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type message struct {
	ID          string   `json:"id"`
	Bot         bool     `json:"bot"`
	From        wireUser `json:"from"`
	Text        string   `json:"text"`
	ParseMode   string   `json:"parse_mode"`
	ReplyTo     string   `json:"reply_to"`
	Attachments []struct {
		Kind     string `json:"kind"`
		URL      string `json:"url"`
		Data     []byte `json:"data"`
		File     string `json:"file"`
		Size     int64  `json:"size"`
		MIME     string `json:"mime"`
		FileName string `json:"file_name"`
		Caption  string `json:"caption"`
	} `json:"attachments"`
	Buttons [][]struct {
		Text string `json:"text"`
		Data string `json:"data"`
		URL  string `json:"url"`
	} `json:"buttons"`
	Keyboard *keyboard `json:"keyboard"`
	Time     time.Time `json:"time"`
}

// keyboard is a reply keyboard of a message or a history frame.
type keyboard struct {
	Rows        [][]string `json:"rows"`
	Remove      bool       `json:"remove"`
	OneTime     bool       `json:"one_time"`
	Placeholder string     `json:"placeholder"`
}

// texts returns the texts of msgs, prefixing users' messages with "user:".
func texts(msgs []message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text
		if !m.Bot {
			out[i] = "user:" + m.Text
		}
	}
	return out
}

// client is a tab played by a gorilla WebSocket client.
type client struct {
	ws   *websocket.Conn
	hist frame // the history frame that answered hello
}

// hello is a hello frame.
type hello struct {
	ChatID string `json:"chat_id,omitempty"`
	UserID string `json:"user_id,omitempty"`
	Name   string `json:"name,omitempty"`
	Room   string `json:"room,omitempty"`
}

// wsURL returns the adapter's WebSocket URL.
func wsURL(a *webchat.Adapter) string { return "ws://" + a.Addr() + "/ws" }

// dial opens a WebSocket to a with the given headers (nil: the page's own
// origin).
func dial(a *webchat.Adapter, h http.Header) (*websocket.Conn, *http.Response, error) {
	if h == nil {
		h = http.Header{"Origin": {"http://" + a.Addr()}}
	}
	d := websocket.Dialer{HandshakeTimeout: ioTimeout}
	return d.Dial(wsURL(a), h)
}

// connect opens a tab and joins it with h, failing the test on error.
func connect(t *testing.T, a *webchat.Adapter, h hello) *client {
	t.Helper()
	ws, _, err := dial(a, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &client{ws: ws}
	c.send(t, struct {
		Type string `json:"type"`
		hello
	}{"hello", h})
	f := c.read(t)
	if f.Type != "history" {
		t.Fatalf("first frame %+v; want history", f)
	}
	c.hist = f
	return c
}

func (c *client) send(t *testing.T, v any) {
	t.Helper()
	if err := c.trySend(v); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func (c *client) trySend(v any) error {
	c.ws.SetWriteDeadline(time.Now().Add(ioTimeout))
	return c.ws.WriteJSON(v)
}

func (c *client) say(t *testing.T, text string) {
	t.Helper()
	c.send(t, map[string]string{"type": "message", "text": text})
}

// tryRead returns the next frame.
func (c *client) tryRead() (frame, error) {
	c.ws.SetReadDeadline(time.Now().Add(ioTimeout))
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		return frame{}, fmt.Errorf("decoding %s: %w", data, err)
	}
	return f, nil
}

func (c *client) read(t *testing.T) frame {
	t.Helper()
	f, err := c.tryRead()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return f
}

// readMessages reads n message or echo frames, failing on any other.
func (c *client) readMessages(t *testing.T, n int) []message {
	t.Helper()
	msgs, err := c.tryReadMessages(n)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func (c *client) tryReadMessages(n int) ([]message, error) {
	var msgs []message
	for len(msgs) < n {
		f, err := c.tryRead()
		if err != nil {
			return msgs, fmt.Errorf("after %d of %d messages: %w", len(msgs), n, err)
		}
		if (f.Type != "message" && f.Type != "echo") || f.Message == nil || f.Message.Bot != (f.Type == "message") {
			return msgs, fmt.Errorf("after %d of %d messages: unexpected frame %+v", len(msgs), n, f)
		}
		msgs = append(msgs, *f.Message)
	}
	return msgs, nil
}

// expectError reads the next frame and checks it is an error with code.
func (c *client) expectError(t *testing.T, code string) {
	t.Helper()
	f := c.read(t)
	if f.Type != "error" || f.Code != code {
		t.Fatalf("got %+v; want error %q", f, code)
	}
	if f.Text == "" {
		t.Errorf("error %q has no text", code)
	}
}

// expectClose reads until the connection fails and returns the close code
// (-1 when it ended without a close frame).
func (c *client) expectClose(t *testing.T) int {
	t.Helper()
	for {
		_, err := c.tryRead()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after %v", ioTimeout)
		}
		return -1
	}
}

// dotPNG returns a 1×1 PNG image.
func dotPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

func counting(prefix []string, n int) []string {
	out := append([]string(nil), prefix...)
	for i := 1; i <= n; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// fileClient fetches the files tabs show by reference.
var fileClient = &http.Client{Timeout: ioTimeout}

// getFile fetches the file ref with a tab's file key and returns the
// response, its body read.
func getFile(t *testing.T, a *webchat.Adapter, key, ref string) (*http.Response, []byte) {
	t.Helper()
	resp, err := fileClient.Get(a.URL() + "file/" + ref + "?k=" + key)
	if err != nil {
		t.Fatalf("fetching file %s: %v", ref, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading file %s: %v", ref, err)
	}
	return resp, body
}

// fetchFile fetches the file ref with a tab's file key, failing the test
// unless it is sent.
func fetchFile(t *testing.T, a *webchat.Adapter, key, ref string) []byte {
	t.Helper()
	if ref == "" {
		t.Fatal("fetching a file: no reference (the file came inline?)")
	}
	resp, body := getFile(t, a, key, ref)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fetching file %s: %s: %s", ref, resp.Status, body)
	}
	return body
}
