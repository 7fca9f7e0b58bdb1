package webchat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/adaptertest"
	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// TestConformance runs the shared adapter suite against an adapter on a
// free port of 127.0.0.1, with gorilla WebSocket clients playing the
// browser tabs.
//
// Features: a tab shows whatever the bot sends (parse modes, buttons,
// photos, texts of any length) and cannot refuse a message, and Send only
// queues the message for the tab's writer and returns, so the peer can
// inject no failure and hold no send up. The one send failure of the web
// chat, a chat with no open tab (ErrNoConnection, retryable), is covered
// by the package's own tests.
func TestConformance(t *testing.T) {
	adaptertest.TestAdapter(t, newWebPeer, adaptertest.Features{
		NoPermanentFailure: true,
		NoRetryAfter:       true,
		NoTransientFailure: true,
		NoStall:            true,
	})
}

// webPeer plays the browser tabs of one adapter: the tab that opened a
// chat for the suite records the bot's messages in it, and each user who
// speaks in a chat has a tab of their own.
type webPeer struct {
	a *webchat.Adapter

	openMu sync.Mutex // one tab opens at a time, so no tab opens twice

	mu    sync.Mutex
	tabs  map[tabKey]*tab
	inbox map[string]*inbox // by chat ID: the bot messages its first tab read
	errs  []string          // error frames the tabs received
}

type tabKey struct{ chatID, userID string }

// inbox is the bot messages one chat received, with a channel closed and
// replaced at each new one.
type inbox struct {
	msgs    []platform.OutboundMessage
	changed chan struct{}
}

// tab is one WebSocket client joined to a chat; a reader goroutine reads
// its frames until the connection closes.
type tab struct {
	ws   *websocket.Conn
	wmu  sync.Mutex // one writer at a time
	done chan struct{}
}

func newWebPeer(t *testing.T) adaptertest.Peer {
	a, err := webchat.New(webchat.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	p := &webPeer{a: a, tabs: map[tabKey]*tab{}, inbox: map[string]*inbox{}}
	t.Cleanup(func() {
		p.mu.Lock()
		tabs := make([]*tab, 0, len(p.tabs))
		for _, tb := range p.tabs {
			tabs = append(tabs, tb)
		}
		errs := p.errs
		p.mu.Unlock()
		for _, tb := range tabs {
			tb.ws.Close()
			<-tb.done
		}
		if len(errs) > 0 {
			t.Errorf("the adapter sent error frames: %q", errs)
		}
	})
	return p
}

func (p *webPeer) Adapter() platform.Adapter { return p.a }

func (p *webPeer) Ready(ctx context.Context) error {
	select {
	case <-p.a.Ready():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *webPeer) User(n int) platform.User {
	return platform.User{ID: "u" + strconv.Itoa(n), Name: "User " + strconv.Itoa(n)}
}

// Chat opens the tab that records the chat's messages: the user's own for
// a private chat, a watcher's for a room.
func (p *webPeer) Chat(ctx context.Context, n int, typ platform.ChatType) (platform.Chat, error) {
	var chat platform.Chat
	var owner platform.User
	switch typ {
	case platform.ChatPrivate:
		chat = platform.Chat{ID: "c" + strconv.Itoa(n), Type: platform.ChatPrivate}
		owner = p.User(n)
	case platform.ChatGroup:
		room := "r" + strconv.Itoa(n)
		chat = platform.Chat{ID: webchat.RoomChatID(room), Type: platform.ChatGroup, Title: room}
		owner = platform.User{ID: "w" + strconv.Itoa(n), Name: "Watcher"}
	default:
		return platform.Chat{}, fmt.Errorf("webchat peer: no chats of type %q", typ)
	}
	if _, err := p.tab(ctx, chat, owner); err != nil {
		return platform.Chat{}, err
	}
	return chat, nil
}

func (p *webPeer) Say(ctx context.Context, chat platform.Chat, from platform.User, text string) error {
	tb, err := p.tab(ctx, chat, from)
	if err != nil {
		return err
	}
	return tb.write(ctx, map[string]string{"type": "message", "text": text})
}

func (p *webPeer) Received(ctx context.Context, chat platform.Chat, n int) ([]platform.OutboundMessage, error) {
	for {
		p.mu.Lock()
		box := p.inbox[chat.ID]
		if box == nil {
			p.mu.Unlock()
			return nil, fmt.Errorf("webchat peer: chat %s has no tab (Peer.Chat opens one)", chat.ID)
		}
		msgs := append([]platform.OutboundMessage(nil), box.msgs...)
		ch := box.changed
		p.mu.Unlock()
		if len(msgs) >= n {
			return msgs, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return msgs, ctx.Err()
		}
	}
}

func (p *webPeer) Inject(platform.Chat, adaptertest.Fault) error {
	return fmt.Errorf("webchat peer: a tab cannot fail a send: %w", adaptertest.ErrUnsupported)
}

// tab returns user's tab in chat, opening and joining it if needed. The
// first tab of a chat records the bot's messages in it.
func (p *webPeer) tab(ctx context.Context, chat platform.Chat, user platform.User) (*tab, error) {
	key := tabKey{chat.ID, user.ID}
	p.openMu.Lock()
	defer p.openMu.Unlock()
	p.mu.Lock()
	tb := p.tabs[key]
	p.mu.Unlock()
	if tb != nil {
		return tb, nil
	}

	ws, _, err := dial(p.a, nil)
	if err != nil {
		return nil, fmt.Errorf("webchat peer: dial: %w", err)
	}
	tb = &tab{ws: ws, done: make(chan struct{})}
	h := map[string]string{"type": "hello", "user_id": user.ID, "name": user.Name}
	if room, ok := strings.CutPrefix(chat.ID, "room:"); ok {
		h["room"] = room
	} else {
		h["chat_id"] = chat.ID
	}
	if err := tb.write(ctx, h); err != nil {
		ws.Close()
		return nil, err
	}
	ws.SetReadDeadline(deadline(ctx))
	var hist frame
	if err := ws.ReadJSON(&hist); err != nil || hist.Type != "history" || hist.Chat.ID != chat.ID {
		ws.Close()
		return nil, fmt.Errorf("webchat peer: joining chat %s: got %+v, %v; want its history", chat.ID, hist, err)
	}
	ws.SetReadDeadline(time.Time{})

	p.mu.Lock()
	p.tabs[key] = tb
	var box *inbox
	if p.inbox[chat.ID] == nil {
		box = &inbox{changed: make(chan struct{})}
		p.inbox[chat.ID] = box
	}
	p.mu.Unlock()
	go p.read(tb, box)
	return tb, nil
}

// read reads tb's frames until its connection closes, adding the bot's
// messages to box unless box is nil.
func (p *webPeer) read(tb *tab, box *inbox) {
	defer close(tb.done)
	for {
		_, data, err := tb.ws.ReadMessage()
		if err != nil {
			return
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			p.fail(fmt.Sprintf("undecodable frame %s: %v", data, err))
			continue
		}
		switch {
		case f.Type == "error" && f.Code == "stopping":
			// Expected: a message said after StopReceiving.
		case f.Type == "error":
			p.fail(f.Code + ": " + f.Text)
		case f.Type == "message" && f.Message != nil && box != nil:
			p.mu.Lock()
			box.msgs = append(box.msgs, outbound(*f.Message))
			close(box.changed)
			box.changed = make(chan struct{})
			p.mu.Unlock()
		}
	}
}

func (p *webPeer) fail(s string) {
	p.mu.Lock()
	p.errs = append(p.errs, s)
	p.mu.Unlock()
}

// write sends v as a JSON frame, bounded by ctx's deadline.
func (tb *tab) write(ctx context.Context, v any) error {
	tb.wmu.Lock()
	defer tb.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	tb.ws.SetWriteDeadline(deadline(ctx))
	if err := tb.ws.WriteJSON(v); err != nil {
		return fmt.Errorf("webchat peer: write: %w", err)
	}
	return nil
}

// deadline returns ctx's deadline, or ioTimeout from now.
func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(ioTimeout)
}

// outbound reads a bot message of the page's protocol back into an
// OutboundMessage.
func outbound(m message) platform.OutboundMessage {
	out := platform.OutboundMessage{Text: m.Text, ParseMode: platform.ParseMode(m.ParseMode), ReplyToID: m.ReplyTo}
	for _, at := range m.Attachments {
		out.Attachments = append(out.Attachments, platform.Attachment{
			Kind: platform.AttachmentKind(at.Kind), URL: at.URL, Data: at.Data, FileName: at.FileName, Caption: at.Caption,
		})
	}
	for _, row := range m.Buttons {
		r := make([]platform.Button, len(row))
		for i, b := range row {
			r[i] = platform.Button{Text: b.Text, Data: b.Data, URL: b.URL}
		}
		out.Buttons = append(out.Buttons, r)
	}
	return out
}
