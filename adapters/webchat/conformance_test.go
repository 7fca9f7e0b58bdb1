package webchat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
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
// every kind of attachment, albums, reply keyboards, texts of any length),
// edits and deletes messages in place, and cannot refuse a message, and Send only
// queues the message for the tab's writer and returns, so the peer can
// inject no permanent failure, no retry-after and no stall. The web chat's
// one send failure, a chat with no open tab (ErrNoConnection, retryable),
// is the transient failure the peer injects: it closes the chat's tabs,
// and, like a page that reloads, opens the tab that records the chat again
// once a send has failed for want of it. The peer hears of that failure
// through the adapter it hands the suite (webAdapter), which wraps the
// Sender only to watch its results and passes every send and result
// through unchanged.
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.TestAdapter(t, newWebPeer, adaptertest.Features{
		NoPermanentFailure: true,
		NoRetryAfter:       true,
		NoStall:            true,
		// The page has no inline queries, topics or reactions.
		NoInline: true, NoTopics: true, NoReactions: true,
	})
}

// webAdapter is the adapter under test as the suite sees it: the real
// one, with a Sender that tells the peer about sends that failed with
// ErrNoConnection, so the peer can reopen the tabs it closed.
type webAdapter struct {
	*webchat.Adapter
	p *webPeer
}

func (w webAdapter) Sender() platform.Sender {
	s := w.Adapter.Sender()
	return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
		res, err := s.Send(ctx, req)
		if errors.Is(err, webchat.ErrNoConnection) {
			w.p.reopen(ctx, req.Target)
		}
		return res, err
	})
}

// webPeer plays the browser tabs of one adapter: the tab that opened a
// chat for the suite (its owner's) records the bot's messages in it, and
// each user who speaks in a chat has a tab of their own.
type webPeer struct {
	a *webchat.Adapter

	openMu sync.Mutex // one tab opens or closes at a time, so no tab opens twice

	mu     sync.Mutex
	tabs   map[tabKey]*tab
	owners map[string]platform.User // by chat ID: whose tab records the chat
	inbox  map[string]*inbox        // by chat ID: the bot messages its owner's tabs read
	recv   adaptertest.Inbox        // the messages of inbox, for Received
	closed map[string]bool          // chats whose tabs Inject closed, until a send fails
	errs   []string                 // error frames and other surprises

	answers map[string]platform.CallbackAnswer // by QueryID: the answers tabs were shown
	actions map[string][]platform.ChatAction   // by chat ID: the actions its owner's tab was shown
	changed chan struct{}                      // closed and replaced when answers or actions change
}

type tabKey struct{ chatID, userID string }

// inbox is the bot messages one chat received; the messages themselves
// are in webPeer.recv.
type inbox struct {
	chatID string
	ids    map[string]bool // the IDs of the messages
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
	p := &webPeer{a: a, tabs: map[tabKey]*tab{}, owners: map[string]platform.User{},
		inbox: map[string]*inbox{}, closed: map[string]bool{},
		answers: map[string]platform.CallbackAnswer{}, actions: map[string][]platform.ChatAction{}, changed: make(chan struct{})}
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

func (p *webPeer) Adapter() platform.Adapter { return webAdapter{Adapter: p.a, p: p} }

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
	p.mu.Lock()
	p.owners[chat.ID] = owner
	p.mu.Unlock()
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

var _ adaptertest.FilePeer = (*webPeer)(nil)

// SayFile sends a file frame, as the page's attach button does.
func (p *webPeer) SayFile(ctx context.Context, chat platform.Chat, from platform.User, att platform.Attachment, data []byte) error {
	tb, err := p.tab(ctx, chat, from)
	if err != nil {
		return err
	}
	return tb.write(ctx, map[string]any{"type": "file", "kind": att.Kind, "file_name": att.FileName,
		"mime": att.MIMEType, "content": data, "caption": att.Caption})
}

func (p *webPeer) Received(ctx context.Context, chat platform.Chat, n int) ([]platform.OutboundMessage, error) {
	p.mu.Lock()
	box := p.inbox[chat.ID]
	p.mu.Unlock()
	if box == nil {
		return nil, fmt.Errorf("webchat peer: chat %s has no tab (Peer.Chat opens one)", chat.ID)
	}
	return p.recv.Wait(ctx, chat.ID, n)
}

// Inject closes every tab of chat, the way a user closes or reloads the
// page, and waits until the adapter has taken them out of the chat, so
// that the next send to it fails with ErrNoConnection. That failure
// reopens the owner's tab (see webAdapter), and later sends work again.
// Only FaultTransient can be injected.
var _ adaptertest.ShowingPeer = (*webPeer)(nil)

// Shown returns the chat's messages as its tab shows them, edits applied.
func (p *webPeer) Shown(_ context.Context, chat platform.Chat) ([]platform.OutboundMessage, error) {
	return p.recv.Shown(chat.ID), nil
}

func (p *webPeer) Inject(chat platform.Chat, f adaptertest.Fault) error {
	if f.Kind != adaptertest.FaultTransient {
		return fmt.Errorf("webchat peer: a tab cannot fail a send with a %s fault: %w", f.Kind, adaptertest.ErrUnsupported)
	}
	p.openMu.Lock()
	defer p.openMu.Unlock()
	p.mu.Lock()
	var tabs []*tab
	for k, tb := range p.tabs {
		if k.chatID == chat.ID {
			tabs = append(tabs, tb)
			delete(p.tabs, k)
		}
	}
	p.closed[chat.ID] = true
	p.mu.Unlock()
	if len(tabs) == 0 {
		return fmt.Errorf("webchat peer: chat %s has no tab to close (Peer.Chat opens one)", chat.ID)
	}
	var errs []error
	for _, tb := range tabs {
		errs = append(errs, tb.leave())
	}
	return errors.Join(errs...)
}

// reopen opens the owner's tab of a chat whose tabs Inject closed, once a
// send to it has failed.
func (p *webPeer) reopen(ctx context.Context, chat platform.Chat) {
	p.mu.Lock()
	closed, owner := p.closed[chat.ID], p.owners[chat.ID]
	delete(p.closed, chat.ID)
	p.mu.Unlock()
	if !closed {
		return
	}
	if _, err := p.tab(ctx, chat, owner); err != nil {
		p.fail(fmt.Sprintf("reopening the tab of chat %s: %v", chat.ID, err))
	}
}

// tab returns user's tab in chat, opening and joining it if needed. The
// chat owner's tab records the bot's messages in it; the history it gets
// on joining must hold no bot message the owner's earlier tabs did not
// receive (a failed send is not kept).
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
	if owner, ok := p.owners[chat.ID]; ok && owner.ID == user.ID {
		box = p.inbox[chat.ID]
		if box == nil {
			box = &inbox{chatID: chat.ID, ids: map[string]bool{}}
			p.inbox[chat.ID] = box
		}
		for _, m := range hist.Messages {
			if m.Bot && !box.ids[m.ID] {
				p.errs = append(p.errs, fmt.Sprintf("chat %s keeps bot message %s (%q) that its tab never received", chat.ID, m.ID, m.Text))
			}
		}
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
			// Expected: a message said once Run takes no more events.
		case f.Type == "error":
			p.fail(f.Code + ": " + f.Text)
		case f.Type == "message" && f.Message != nil && box != nil:
			p.mu.Lock()
			box.ids[f.Message.ID] = true
			p.recv.AddID(box.chatID, f.Message.ID, outbound(*f.Message))
			p.mu.Unlock()
		case f.Type == "edit" && f.Message != nil && box != nil:
			if !p.recv.Edit(box.chatID, f.Message.ID, outbound(*f.Message)) {
				p.fail("an edit of message " + f.Message.ID + ", which this tab never got")
			}
		case f.Type == "answer" && f.Answer != nil:
			p.mu.Lock()
			p.answers[f.Answer.QueryID] = platform.CallbackAnswer{Text: f.Answer.Text, Alert: f.Answer.Alert}
			p.changedLocked()
			p.mu.Unlock()
		case f.Type == "action" && box != nil:
			p.mu.Lock()
			p.actions[box.chatID] = append(p.actions[box.chatID], platform.ChatAction(f.Action))
			p.changedLocked()
			p.mu.Unlock()
		case f.Type == "delete" && f.Message != nil && box != nil:
			// A message the tab never got (one the suite says does not
			// exist never gets this far) is not shown: nothing to do.
			p.recv.Delete(box.chatID, f.Message.ID)
		}
	}
}

// changedLocked wakes those waiting for an answer or an action.
func (p *webPeer) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// waitFor waits until ok, called with p.mu held, reports true.
func (p *webPeer) waitFor(ctx context.Context, ok func() bool) error {
	for {
		p.mu.Lock()
		done, changed := ok(), p.changed
		p.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

var (
	_ adaptertest.PressPeer  = (*webPeer)(nil)
	_ adaptertest.ActionPeer = (*webPeer)(nil)
)

// Press sends a callback frame from user's tab, as a click on the button
// does.
func (p *webPeer) Press(ctx context.Context, chat platform.Chat, from platform.User, messageID, data string) error {
	tb, err := p.tab(ctx, chat, from)
	if err != nil {
		return err
	}
	return tb.write(ctx, map[string]string{"type": "callback", "data": data, "message_id": messageID})
}

// Answered waits for the answer frame of the press ev.
func (p *webPeer) Answered(ctx context.Context, ev platform.Event) (platform.CallbackAnswer, error) {
	var a platform.CallbackAnswer
	err := p.waitFor(ctx, func() bool {
		var ok bool
		a, ok = p.answers[ev.QueryID]
		return ok
	})
	return a, err
}

// Actions waits until chat's owner's tab was shown n chat actions.
func (p *webPeer) Actions(ctx context.Context, chat platform.Chat, n int) ([]platform.ChatAction, error) {
	var got []platform.ChatAction
	err := p.waitFor(ctx, func() bool {
		got = slices.Clone(p.actions[chat.ID])
		return len(got) >= n
	})
	return got, err
}

func (p *webPeer) fail(s string) {
	p.mu.Lock()
	p.errs = append(p.errs, s)
	p.mu.Unlock()
}

// leave closes the tab the way a closing page does, and waits until the
// adapter has noticed: it shuts the sending half of the TCP connection, and
// the adapter, reading its end, takes the tab out of its chat before it
// closes the socket, which ends the tab's reader.
func (tb *tab) leave() error {
	defer tb.ws.Close()
	tb.wmu.Lock()
	tcp, ok := tb.ws.NetConn().(*net.TCPConn)
	var err error
	if ok {
		err = tcp.CloseWrite()
	}
	tb.wmu.Unlock()
	if !ok || err != nil {
		return fmt.Errorf("webchat peer: half-closing a tab: %T, %v", tb.ws.NetConn(), err)
	}
	select {
	case <-tb.done:
		return nil
	case <-time.After(ioTimeout):
		return fmt.Errorf("webchat peer: the adapter kept a closed tab open for %v", ioTimeout)
	}
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
	if k := m.Keyboard; k != nil {
		out.Keyboard = &platform.ReplyKeyboard{Rows: k.Rows, Remove: k.Remove, OneTime: k.OneTime, Placeholder: k.Placeholder}
	}
	return out
}
