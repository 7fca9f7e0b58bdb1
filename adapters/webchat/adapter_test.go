package webchat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

func TestPingPong(t *testing.T) {
	a, bot := start(t, webchat.Config{})
	c := connect(t, a, hello{Name: "Ann"})
	h := c.hist
	if h.Chat.ID == "" || h.Chat.Type != "private" || h.User.ID == "" || h.User.Name != "Ann" ||
		h.Bot.Name != webchat.DefaultBotName || h.MaxText <= 0 || len(h.Messages) != 0 {
		t.Fatalf("history frame = %+v", h)
	}

	before := time.Now()
	c.say(t, "/ping")
	msgs := c.readMessages(t, 2)
	if got := texts(msgs); !slices.Equal(got, []string{"user:/ping", "pong"}) {
		t.Fatalf("messages = %q; want the echo, then pong", got)
	}
	echo := msgs[0]
	if echo.From != (wireUser{ID: h.User.ID, Name: "Ann"}) || echo.Time.Before(before.Add(-time.Second)) {
		t.Errorf("echo = %+v", echo)
	}
	if pong := msgs[1]; !pong.Bot || pong.From.Name != webchat.DefaultBotName || pong.ID == "" || pong.ID == echo.ID {
		t.Errorf("pong = %+v", pong)
	}

	evs := bot.Events()
	if len(evs) != 1 {
		t.Fatalf("events = %+v; want 1", evs)
	}
	ev := evs[0]
	want := platform.Event{
		ID: ev.ID, Platform: "webchat", Kind: platform.EventMessage,
		Chat: platform.Chat{ID: h.Chat.ID, Type: platform.ChatPrivate},
		From: platform.User{ID: h.User.ID, Name: "Ann"},
		Text: "/ping", MessageID: echo.ID, Time: ev.Time,
	}
	if !reflect.DeepEqual(ev, want) || ev.ID == "" || ev.Time.Before(before.Add(-time.Second)) {
		t.Errorf("event = %+v; want %+v", ev, want)
	}
	if a.Name() != "webchat" {
		t.Errorf("Name = %q", a.Name())
	}
	bot.checkNoErrors(t)
}

// TestOrderUnderLoad has several chats ask for 100 messages each at once;
// every tab must see exactly 1…100 in order, including both tabs of a
// private chat that is open twice.
func TestOrderUnderLoad(t *testing.T) {
	const chats, n = 6, 100
	a, bot := start(t, webchat.Config{})
	var tabs []*client
	var askers []*client
	for i := range chats {
		c := connect(t, a, hello{Name: "user" + strconv.Itoa(i)})
		tabs = append(tabs, c)
		askers = append(askers, c)
		if i == 0 { // the same private chat in a second tab
			tabs = append(tabs, connect(t, a, hello{ChatID: c.hist.Chat.ID, UserID: c.hist.User.ID}))
		}
	}

	var wg sync.WaitGroup
	for _, c := range askers {
		wg.Go(func() {
			if err := c.trySend(map[string]string{"type": "message", "text": "/count " + strconv.Itoa(n)}); err != nil {
				t.Error(err)
			}
		})
	}
	want := counting([]string{"user:/count " + strconv.Itoa(n)}, n)
	for i, c := range tabs {
		wg.Go(func() {
			msgs, err := c.tryReadMessages(n + 1)
			if err != nil {
				t.Errorf("tab %d: %v", i, err)
				return
			}
			if got := texts(msgs); !slices.Equal(got, want) {
				t.Errorf("tab %d got %q; want %q", i, got, want)
			}
		})
	}
	wg.Wait()
	bot.checkNoErrors(t)

	// Event IDs increase in the order Run handed the events over.
	evs := bot.Events()
	if len(evs) != chats {
		t.Fatalf("%d events; want %d", len(evs), chats)
	}
	seq := func(id string) (run string, n uint64) {
		i := strings.LastIndexByte(id, '-')
		n, err := strconv.ParseUint(id[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("event ID %q; want <run>-<n>", id)
		}
		return id[:i], n
	}
	for i := 1; i < len(evs); i++ {
		prun, prev := seq(evs[i-1].ID)
		run, cur := seq(evs[i].ID)
		if run != prun || cur <= prev {
			t.Errorf("event IDs %s then %s; want increasing", evs[i-1].ID, evs[i].ID)
		}
	}
}

// TestHistoryOnReconnect closes a tab and opens the same chat again: the
// new tab gets the conversation and continues it.
func TestHistoryOnReconnect(t *testing.T) {
	a, bot := start(t, webchat.Config{})
	c1 := connect(t, a, hello{Name: "Ann"})
	c1.say(t, "/count 3")
	first := c1.readMessages(t, 4)
	c1.ws.Close()

	c2 := connect(t, a, hello{ChatID: c1.hist.Chat.ID, UserID: c1.hist.User.ID, Name: "Ann"})
	if c2.hist.Chat != c1.hist.Chat || c2.hist.User != c1.hist.User {
		t.Fatalf("reconnected to %+v as %+v; want %+v as %+v", c2.hist.Chat, c2.hist.User, c1.hist.Chat, c1.hist.User)
	}
	if got, want := texts(c2.hist.Messages), []string{"user:/count 3", "1", "2", "3"}; !slices.Equal(got, want) {
		t.Fatalf("history = %q; want %q", got, want)
	}
	for i, m := range c2.hist.Messages {
		if m.ID != first[i].ID || !m.Time.Equal(first[i].Time) {
			t.Errorf("history[%d] = %+v; want %+v", i, m, first[i])
		}
	}
	c2.say(t, "/ping")
	if got := texts(c2.readMessages(t, 2)); !slices.Equal(got, []string{"user:/ping", "pong"}) {
		t.Fatalf("after reconnect: %q", got)
	}
	evs := bot.Events()
	if len(evs) != 2 || evs[0].Chat != evs[1].Chat || evs[1].From.ID != c1.hist.User.ID {
		t.Fatalf("events = %+v; want two in the same chat from the same user", evs)
	}
	bot.checkNoErrors(t)
}

func TestHistoryBounded(t *testing.T) {
	a, bot := start(t, webchat.Config{HistorySize: 5})
	c1 := connect(t, a, hello{})
	c1.say(t, "/count 10")
	c1.readMessages(t, 11)
	c2 := connect(t, a, hello{ChatID: c1.hist.Chat.ID})
	if got, want := texts(c2.hist.Messages), []string{"6", "7", "8", "9", "10"}; !slices.Equal(got, want) {
		t.Fatalf("history = %q; want the last 5 messages %q", got, want)
	}
	bot.checkNoErrors(t)
}

// TestHistoryBytesOnTheWire fills a chat with the longest texts a tab may
// send, all '<': frames carry them unescaped (not as 6-byte \u003c), and
// the chat keeps only the newest messages that fit in HistoryBytes. A photo
// as large as HistoryBytes goes by reference, the tab fetches it, and the
// history keeps it as the reference, a few bytes.
func TestHistoryBytesOnTheWire(t *testing.T) {
	const budget = 64 << 10
	a, _ := start(t, webchat.Config{HistoryBytes: budget})
	c := connect(t, a, hello{})
	text := strings.Repeat("<", 16<<10)
	var ids []string
	for range 8 {
		if err := c.ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"message","text":"`+text+`"}`)); err != nil {
			t.Fatal(err)
		}
		c.ws.SetReadDeadline(time.Now().Add(ioTimeout))
		_, raw, err := c.ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > len(text)+512 || !strings.Contains(string(raw), text) {
			t.Fatalf("echo frame of %d bytes for a text of %d; want the text unescaped", len(raw), len(text))
		}
		var f frame
		if err := json.Unmarshal(raw, &f); err != nil || f.Message == nil || f.Message.Text != text {
			t.Fatalf("echo frame: %v", err)
		}
		ids = append(ids, f.Message.ID)
	}
	photo := bytes.Repeat([]byte{0x89}, budget)
	res, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: c.hist.Chat.ID},
		Message: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, Data: photo}}}})
	if err != nil {
		t.Fatal(err)
	}
	m := c.readMessages(t, 1)[0]
	if m.ID != res.MessageID || len(m.Attachments) != 1 || m.Attachments[0].Data != nil || m.Attachments[0].Size != int64(len(photo)) {
		t.Fatalf("the tab got %q; want the photo by reference", m.ID)
	}
	if got := fetchFile(t, a, c.hist.FileKey, m.Attachments[0].File); !bytes.Equal(got, photo) {
		t.Fatalf("fetched %d bytes of the photo; want its %d", len(got), len(photo))
	}
	ids = append(ids, m.ID)

	ws, _, err := dial(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteJSON(map[string]string{"type": "hello", "chat_id": c.hist.Chat.ID}); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(ioTimeout))
	_, raw, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var h frame
	if err := json.Unmarshal(raw, &h); err != nil || h.Type != "history" {
		t.Fatalf("history frame: %v", err)
	}
	var got []string
	for _, m := range h.Messages {
		got = append(got, m.ID)
	}
	// Each text takes a little over 16 KiB: three fit in 64 KiB, with
	// the photo, a reference of a few bytes.
	if want := ids[len(ids)-4:]; !slices.Equal(got, want) || len(raw) > budget+1024 {
		t.Fatalf("history of %d bytes keeps messages %q; want the newest three texts and the photo %q within %d bytes", len(raw), got, want, budget)
	}
}

func TestRoomFanOut(t *testing.T) {
	a, bot := start(t, webchat.Config{})
	names := []string{"Ann", "Bob", "Cy"}
	var tabs []*client
	for _, n := range names {
		c := connect(t, a, hello{Room: "lobby", Name: n, ChatID: "ignored-for-rooms"})
		if want := (wireChat{ID: "room:lobby", Type: "group", Title: "lobby"}); c.hist.Chat != want {
			t.Fatalf("chat = %+v; want %+v", c.hist.Chat, want)
		}
		tabs = append(tabs, c)
	}
	tabs[0].say(t, "/ping")
	for i, c := range tabs {
		if m := c.readMessages(t, 1)[0]; m.Text != "/ping" || m.From.Name != "Ann" || m.Bot {
			t.Fatalf("tab %d: first message %+v; want Ann's /ping", i, m)
		}
	}
	// Bob's message and the pong race; every tab must see them in one order.
	tabs[1].say(t, "hello all")
	var order []string
	for i, c := range tabs {
		got := texts(c.readMessages(t, 2))
		if !slices.Contains(got, "pong") || !slices.Contains(got, "user:hello all") {
			t.Fatalf("tab %d got %q", i, got)
		}
		if order == nil {
			order = got
		} else if !slices.Equal(got, order) {
			t.Errorf("tab %d got %q; tab 0 got %q", i, got, order)
		}
	}

	// The bot can write to the room by its ID.
	res, err := a.Sender().Send(context.Background(), platform.SendRequest{
		Target: platform.Chat{ID: webchat.RoomChatID("lobby")}, Message: platform.TextMessage("announcement"),
	})
	if err != nil || res.ChatID != "room:lobby" || res.MessageID == "" {
		t.Fatalf("Send to room = %+v, %v", res, err)
	}
	for i, c := range tabs {
		if m := c.readMessages(t, 1)[0]; m.Text != "announcement" || m.ID != res.MessageID {
			t.Errorf("tab %d got %+v", i, m)
		}
	}

	late := connect(t, a, hello{Room: "lobby", Name: "Dee"})
	if got := texts(late.hist.Messages); len(got) != 4 || got[3] != "announcement" {
		t.Errorf("late tab history = %q", got)
	}
	for _, ev := range bot.Events() {
		if ev.Chat != (platform.Chat{ID: "room:lobby", Type: platform.ChatGroup, Title: "lobby"}) {
			t.Errorf("event chat = %+v", ev.Chat)
		}
	}
	bot.checkNoErrors(t)
}

// TestOversizedFrame sends a frame over the read limit: that tab is closed
// with 1009 and nothing else is disturbed.
func TestOversizedFrame(t *testing.T) {
	a, bot := start(t, webchat.Config{}) // the default 64 KiB limit
	other := connect(t, a, hello{})
	big := connect(t, a, hello{})
	huge := fmt.Sprintf(`{"type":"message","text":"%s"}`, strings.Repeat("a", 70<<10))
	if err := big.ws.WriteMessage(websocket.TextMessage, []byte(huge)); err != nil {
		t.Fatal(err)
	}
	if code := big.expectClose(t); code != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d; want %d", code, websocket.CloseMessageTooBig)
	}
	other.say(t, "/ping")
	if got := texts(other.readMessages(t, 2)); !slices.Equal(got, []string{"user:/ping", "pong"}) {
		t.Fatalf("other tab: %q", got)
	}
	again := connect(t, a, hello{ChatID: big.hist.Chat.ID})
	again.say(t, "/ping")
	again.readMessages(t, 2)
	if n := len(bot.Events()); n != 2 {
		t.Errorf("%d events; want 2 (the oversized frame is not one)", n)
	}
	bot.checkNoErrors(t)
}

func TestOrigin(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		origin  string // "self" means the page's own origin
		ok      bool
	}{
		{"same origin", nil, "self", true},
		{"no origin header", nil, "", true},
		{"other origin", nil, "http://evil.example", false},
		{"other port", nil, "http://127.0.0.1:1", false},
		{"null origin", nil, "null", false},
		{"allowed", []string{"http://App.example:3000"}, "http://app.example:3000", true},
		{"allowed keeps self", []string{"http://app.example"}, "self", true},
		{"not in list", []string{"http://app.example"}, "http://evil.example", false},
		{"wildcard", []string{"*"}, "http://evil.example", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := start(t, webchat.Config{AllowedOrigins: tt.allowed})
			h := http.Header{}
			switch tt.origin {
			case "self":
				h.Set("Origin", "http://"+a.Addr())
			case "":
			default:
				h.Set("Origin", tt.origin)
			}
			ws, resp, err := dial(a, h)
			if tt.ok {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				ws.Close()
				return
			}
			if err == nil {
				ws.Close()
				t.Fatal("connection accepted; want 403")
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("dial: %v, response %+v; want 403", err, resp)
			}
		})
	}
}

// TestHostCheck plays DNS rebinding: a page of another site whose name now
// resolves to 127.0.0.1 sends its own name as Host, and as Origin for the
// WebSocket, so the same-origin check alone would accept it. On a loopback
// address only loopback names and the hosts of AllowedOrigins may be
// named; the page, its files and the WebSocket answer others 403.
func TestHostCheck(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		host    string // "PORT" is replaced by the adapter's port
		ok      bool
	}{
		{"listening address", nil, "127.0.0.1:PORT", true},
		{"localhost", nil, "localhost:PORT", true},
		{"localhost in capitals, no port", nil, "LocalHost", true},
		{"IPv6 loopback", nil, "[::1]:PORT", true},
		{"other loopback address", nil, "127.0.0.2:9", true},
		{"rebound name", nil, "evil.example:PORT", false},
		{"rebound name without port", nil, "evil.example", false},
		{"localhost suffix", nil, "localhost.evil.example:PORT", false},
		{"private address", nil, "192.168.1.10:PORT", false},
		{"allowed origin's host", []string{"https://Chat.example:8443"}, "chat.example:PORT", true},
		{"other host with allowed origins", []string{"https://chat.example"}, "evil.example:PORT", false},
		{"wildcard", []string{"*"}, "evil.example:PORT", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := start(t, webchat.Config{AllowedOrigins: tt.allowed})
			_, port, _ := net.SplitHostPort(a.Addr())
			host := strings.ReplaceAll(tt.host, "PORT", port)
			want := http.StatusForbidden
			if tt.ok {
				want = http.StatusOK
			}
			for _, path := range []string{"", "static/app.js", "static/style.css"} {
				req, err := http.NewRequest(http.MethodGet, a.URL()+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = host
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("GET /%s with Host %q = %s; want %d", path, host, resp.Status, want)
				}
			}
			// The WebSocket, from a page of that host.
			ws, resp, err := dial(a, http.Header{"Host": {host}, "Origin": {"http://" + host}})
			if tt.ok {
				if err != nil {
					t.Fatalf("WebSocket with Host %q: %v", host, err)
				}
				ws.Close()
				return
			}
			if err == nil {
				ws.Close()
				t.Fatalf("WebSocket with Host %q accepted; want 403", host)
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("WebSocket with Host %q: %v, %+v; want 403", host, err, resp)
			}
		})
	}
}

// TestBadFrames sends frames the server must refuse with an error frame,
// keeping the connection open.
func TestBadFrames(t *testing.T) {
	tests := []struct {
		name   string
		joined bool
		frame  string // sent as text; "<binary>" sends a binary frame
		code   string
	}{
		{"message before hello", false, `{"type":"message","text":"hi"}`, "not_joined"},
		{"callback before hello", false, `{"type":"callback","data":"x","message_id":"1"}`, "not_joined"},
		{"name before hello", false, `{"type":"name","name":"x"}`, "not_joined"},
		{"invalid JSON", false, `{"type":`, "bad_json"},
		{"not an object", false, `[1,2,3]`, "bad_json"},
		{"trailing data", true, `{"type":"message","text":"x"} {}`, "bad_json"},
		{"type not a string", false, `{"type":5}`, "bad_frame"},
		{"missing type", false, `{}`, "bad_frame"},
		{"unknown type", true, `{"type":"dance"}`, "unknown_type"},
		{"binary frame", true, `<binary>`, "bad_frame"},
		{"blank text", true, `{"type":"message","text":"  \n"}`, "bad_frame"},
		{"bad chat_id", false, `{"type":"hello","chat_id":"../etc"}`, "bad_frame"},
		{"bad room", false, `{"type":"hello","room":"a b"}`, "bad_frame"},
		{"second hello", true, `{"type":"hello"}`, "already_joined"},
		{"unknown button", true, `{"type":"callback","data":"x","message_id":"999999"}`, "unknown_button"},
		{"bad message_id", true, `{"type":"callback","data":"x","message_id":"abc"}`, "bad_frame"},
	}
	a, bot := start(t, webchat.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *client
			if tt.joined {
				c = connect(t, a, hello{})
			} else {
				ws, _, err := dial(a, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ws.Close() })
				c = &client{ws: ws}
			}
			typ, data := websocket.TextMessage, []byte(tt.frame)
			if tt.frame == "<binary>" {
				typ, data = websocket.BinaryMessage, []byte{0, 1, 2}
			}
			if err := c.ws.WriteMessage(typ, data); err != nil {
				t.Fatal(err)
			}
			c.expectError(t, tt.code)
			if !tt.joined { // still usable: join now
				c.send(t, map[string]string{"type": "hello"})
				if f := c.read(t); f.Type != "history" {
					t.Fatalf("after the error, hello got %+v", f)
				}
			}
			c.say(t, "/ping")
			if got := texts(c.readMessages(t, 2)); !slices.Equal(got, []string{"user:/ping", "pong"}) {
				t.Fatalf("after the error: %q", got)
			}
		})
	}
	bot.checkNoErrors(t)
}

func TestCallback(t *testing.T) {
	a, bot := start(t, webchat.Config{})
	c := connect(t, a, hello{Name: "Ann"})
	c.say(t, "/buttons")
	msgs := c.readMessages(t, 2)
	kb := msgs[1]
	if len(kb.Buttons) != 2 || kb.Buttons[0][0].Data != "yes" || kb.Buttons[1][0].URL != "https://example.com/docs" {
		t.Fatalf("keyboard message = %+v", kb)
	}
	c.send(t, map[string]string{"type": "callback", "data": "yes", "message_id": kb.ID})
	if m := c.readMessages(t, 1)[0]; m.Text != "you pressed yes" {
		t.Fatalf("reply = %+v", m)
	}
	evs := bot.Events()
	cb := evs[len(evs)-1]
	if cb.Kind != platform.EventCallback || cb.Text != "yes" || cb.MessageID != kb.ID || cb.From.Name != "Ann" || cb.Platform != "webchat" {
		t.Errorf("callback event = %+v", cb)
	}
	// Data that no button of that message carries is refused.
	c.send(t, map[string]string{"type": "callback", "data": "admin", "message_id": kb.ID})
	c.expectError(t, "unknown_button")
	c.send(t, map[string]string{"type": "callback", "data": "yes", "message_id": msgs[0].ID})
	c.expectError(t, "unknown_button")
	// A name change applies to later events.
	c.send(t, map[string]string{"type": "name", "name": "  Ann\u202e B\x00 "})
	c.say(t, "/ping")
	c.readMessages(t, 2) // its echo, then the answer: the bot has the event
	evs = bot.Events()
	if got := evs[len(evs)-1].From.Name; got != "Ann B" {
		t.Errorf("name after rename = %q; want %q", got, "Ann B")
	}
	bot.checkNoErrors(t)
}

// TestSendMessageFields checks that every field of an outbound message
// reaches the tab.
func TestSendMessageFields(t *testing.T) {
	a, _ := start(t, webchat.Config{BotName: "Robo"})
	c := connect(t, a, hello{})
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	msg := platform.OutboundMessage{
		Text: "*hi*", ParseMode: platform.ParseMarkdown, ReplyToID: "7",
		Attachments: []platform.Attachment{
			{Kind: platform.AttachPhoto, Data: png, Caption: "a pixel"},
			{Kind: platform.AttachDocument, URL: "https://example.com/a.pdf", FileName: "a.pdf"},
		},
		Buttons: [][]platform.Button{{{Text: "Go", Data: "go"}}},
	}
	res, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: c.hist.Chat.ID}, Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	if res.ChatID != c.hist.Chat.ID || res.MessageID == "" || res.SentAt.IsZero() {
		t.Errorf("result = %+v", res)
	}
	m := c.readMessages(t, 1)[0]
	if m.ID != res.MessageID || !m.Bot || m.From.Name != "Robo" || m.Text != "*hi*" || m.ParseMode != "Markdown" ||
		m.ReplyTo != "7" || !m.Time.Equal(res.SentAt) {
		t.Errorf("message = %+v", m)
	}
	if len(m.Attachments) != 2 {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	if p := m.Attachments[0]; p.Kind != "photo" || string(p.Data) != string(png) || p.MIME != "image/png" || p.Caption != "a pixel" {
		t.Errorf("photo = %+v", p)
	}
	if d := m.Attachments[1]; d.Kind != "document" || d.URL != "https://example.com/a.pdf" || d.FileName != "a.pdf" || d.Data != nil {
		t.Errorf("document = %+v", d)
	}
	if len(m.Buttons) != 1 || m.Buttons[0][0].Text != "Go" || m.Buttons[0][0].Data != "go" {
		t.Errorf("buttons = %+v", m.Buttons)
	}
}

func TestSendErrors(t *testing.T) {
	a, _ := start(t, webchat.Config{})
	c := connect(t, a, hello{})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		chat      string
		msg       platform.OutboundMessage
		want      error
		permanent bool
	}{
		{"no tab", context.Background(), "nobody-here", platform.TextMessage("x"), webchat.ErrNoConnection, false},
		{"room with no tab", context.Background(), webchat.RoomChatID("empty"), platform.TextMessage("x"), webchat.ErrNoConnection, false},
		{"invalid message", context.Background(), c.hist.Chat.ID, platform.OutboundMessage{}, platform.ErrInvalidMessage, true},
		{"invalid chat ID", context.Background(), "a b", platform.TextMessage("x"), webchat.ErrInvalidChatID, true},
		{"empty room name", context.Background(), "room:", platform.TextMessage("x"), webchat.ErrInvalidChatID, true},
		{"cancelled context", cancelled, c.hist.Chat.ID, platform.TextMessage("x"), context.Canceled, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A send that blocked instead of failing would hang here: no
			// deadline is needed for the adapter to answer.
			_, err := a.Sender().Send(tt.ctx, platform.SendRequest{Target: platform.Chat{ID: tt.chat}, Message: tt.msg})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Send = %v; want %v", err, tt.want)
			}
			if platform.IsPermanent(err) != tt.permanent {
				t.Errorf("IsPermanent(%v) = %v; want %v", err, !tt.permanent, tt.permanent)
			}
			if !strings.HasPrefix(err.Error(), "webchat: ") && tt.want != context.Canceled {
				t.Errorf("error %q does not start with the package name", err)
			}
		})
	}
	// Nothing of the failed sends reached the tab or its history.
	again := connect(t, a, hello{ChatID: c.hist.Chat.ID})
	if len(again.hist.Messages) != 0 {
		t.Errorf("history after failed sends = %q", texts(again.hist.Messages))
	}
}

// TestSendBeforeRun shows the Sender is valid without Run: with no tab it
// fails at once.
func TestSendBeforeRun(t *testing.T) {
	a, err := webchat.New(webchat.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: "x"}, Message: platform.TextMessage("hi")})
	if !errors.Is(err, webchat.ErrNoConnection) {
		t.Fatalf("Send = %v; want ErrNoConnection", err)
	}
	if a.Addr() != "" || a.URL() != "" {
		t.Errorf("Addr, URL = %q, %q before Run; want empty", a.Addr(), a.URL())
	}
}

// TestBusy fills the event buffer while the bot is stuck: the next message
// is refused with "busy", not queued without bound.
func TestBusy(t *testing.T) {
	a, err := webchat.New(webchat.Config{Addr: "127.0.0.1:0", EventBuffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	seen, release := make(chan string, 10), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
			seen <- ev.Text
			if ev.Text == "1" {
				<-release
			}
			return nil
		}})
	}()
	<-a.Ready()
	c := connect(t, a, hello{})
	c.say(t, "1")
	c.readMessages(t, 1)
	if got := <-seen; got != "1" { // Run is now stuck in handle with event 1
		t.Fatalf("handled %q first", got)
	}
	c.say(t, "2")
	c.say(t, "3")
	c.readMessages(t, 2) // both queued: echoes come only for queued events
	c.send(t, map[string]string{"type": "message", "text": "4", "ref": "fourth"})
	if f := c.read(t); f.Type != "error" || f.Code != "busy" || f.Ref != "fourth" {
		t.Fatalf("got %+v; want error busy for ref fourth", f)
	}
	close(release)
	for _, want := range []string{"2", "3"} {
		if got := <-seen; got != want {
			t.Fatalf("handled %q; want %q", got, want)
		}
	}
	c.say(t, "5")
	c.readMessages(t, 1)
	if got := <-seen; got != "5" {
		t.Fatalf("handled %q; want 5 (4 was refused)", got)
	}
	c.ws.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestMaxConnections: a tab over MaxConnections is refused with close
// 1013 (try again later) and a reason a page can show, not an HTTP status
// its script cannot see; once a tab closes, a new one gets in.
func TestMaxConnections(t *testing.T) {
	a, _ := start(t, webchat.Config{MaxConnections: 2})
	first := connect(t, a, hello{})
	connect(t, a, hello{})
	for range 3 {
		ws, _, err := dial(a, nil)
		if err != nil {
			t.Fatalf("dial over the cap: %v; want a WebSocket closed with 1013", err)
		}
		ws.SetReadDeadline(time.Now().Add(ioTimeout))
		_, _, err = ws.ReadMessage()
		ws.Close()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater || !strings.Contains(ce.Text, "too many open tabs") {
			t.Fatalf("tab over the cap ended with %v; want close 1013 saying too many open tabs", err)
		}
	}
	first.ws.Close()
	waitFor(t, "the closed tab to leave", func() bool { return webchat.OpenTabs(a) < 2 })
	connect(t, a, hello{})
}

// waitFor waits until cond holds, checking every few milliseconds, and
// fails the test if it still does not after ioTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", ioTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunStops checks Run's lifecycle: it serves, closes every tab with
// 1001 when its context ends, returns nil, and cannot run again. TestMain
// checks that no goroutine is left behind.
func TestRunStops(t *testing.T) {
	a, err := webchat.New(webchat.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	bot := newTestBot(a.Sender())
	defer bot.stop()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, bot.inbound()) }()
	<-a.Ready()
	host, port, _ := net.SplitHostPort(a.Addr())
	if host != "127.0.0.1" || port == "0" || a.URL() != "http://127.0.0.1:"+port+"/" {
		t.Fatalf("Addr, URL = %q, %q", a.Addr(), a.URL())
	}
	c1 := connect(t, a, hello{})
	c2 := connect(t, a, hello{Room: "r"})
	c1.say(t, "/ping")
	c1.readMessages(t, 2)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v; want nil", err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Run did not return")
	}
	for i, c := range []*client{c1, c2} {
		if code := c.expectClose(t); code != websocket.CloseGoingAway {
			t.Errorf("tab %d closed with %d; want %d", i, code, websocket.CloseGoingAway)
		}
	}
	if a.Addr() != "" {
		t.Errorf("Addr after Run = %q", a.Addr())
	}
	_, err = a.Sender().Send(context.Background(), platform.SendRequest{
		Target: platform.Chat{ID: c1.hist.Chat.ID}, Message: platform.TextMessage("late")})
	if !errors.Is(err, webchat.ErrNoConnection) {
		t.Errorf("Send after Run = %v; want ErrNoConnection", err)
	}
	if _, _, err := dial(a, nil); err == nil {
		t.Error("dial after Run succeeded")
	}
	if err := a.Run(context.Background(), bot.inbound()); !errors.Is(err, webchat.ErrAlreadyRunning) {
		t.Errorf("second Run = %v; want ErrAlreadyRunning", err)
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := webchat.New(webchat.Config{Addr: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background(), platform.Inbound{Handle: func(platform.Event) error { return nil }})
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), ln.Addr().String()) ||
		!strings.HasPrefix(err.Error(), "webchat: ") {
		t.Fatalf("Run = %v; want a webchat error naming %s and wrapping EADDRINUSE", err, ln.Addr())
	}
	select {
	case <-a.Ready():
		t.Error("Ready closed although Run failed")
	default:
	}
	// The failed start does not use up the adapter.
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, platform.Inbound{Handle: func(platform.Event) error { return nil }}) }()
	<-a.Ready()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after the port was freed = %v", err)
	}
}

func TestNilHandle(t *testing.T) {
	a, err := webchat.New(webchat.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background(), platform.Inbound{}); err == nil {
		t.Fatal("Run(nil handle) = nil")
	}
}

func TestNewConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  webchat.Config
		ok   bool
	}{
		{"zero", webchat.Config{}, true},
		{"negative history", webchat.Config{HistorySize: -1}, false},
		{"negative queue", webchat.Config{QueueSize: -1}, false},
		{"negative history bytes", webchat.Config{HistoryBytes: -1}, false},
		{"negative max history bytes", webchat.Config{MaxHistoryBytes: -1}, false},
		{"negative queue bytes", webchat.Config{QueueBytes: -1}, false},
		{"small byte budgets", webchat.Config{HistoryBytes: 1, MaxHistoryBytes: 1, QueueBytes: 1}, true},
		{"negative read limit", webchat.Config{ReadLimit: -1}, false},
		{"negative timeout", webchat.Config{WriteTimeout: -time.Second}, false},
		{"ping not before pong", webchat.Config{PingInterval: time.Minute, PongWait: time.Minute}, false},
		{"ping after default pong", webchat.Config{PingInterval: 2 * time.Minute}, false},
		{"origin with path", webchat.Config{AllowedOrigins: []string{"http://a.example/x"}}, false},
		{"origin without scheme", webchat.Config{AllowedOrigins: []string{"a.example"}}, false},
		{"ftp origin", webchat.Config{AllowedOrigins: []string{"ftp://a.example"}}, false},
		{"good origins", webchat.Config{AllowedOrigins: []string{"https://a.example:8443/", "*"}}, true},
		{"file dir", webchat.Config{FileDir: os.TempDir()}, true},
		{"missing file dir", webchat.Config{FileDir: filepath.Join(os.TempDir(), "herald-no-such-dir", "x")}, false},
		{"file dir a file", webchat.Config{FileDir: "adapter_test.go"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := webchat.New(tt.cfg)
			if tt.ok != (err == nil) || (err == nil) != (a != nil) {
				t.Fatalf("New = %v, %v; want ok=%v", a, err, tt.ok)
			}
			if err != nil && (!errors.Is(err, webchat.ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "webchat: ")) {
				t.Errorf("error %q does not wrap ErrInvalidConfig", err)
			}
		})
	}
}
