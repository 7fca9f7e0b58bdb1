package webchat_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// editedMessage is a message object as the edit tests read it: with the
// time of its last edit.
type editedMessage struct {
	message
	Edited time.Time `json:"edited"`
}

// editFrame is a server frame as the edit tests read it. Fields lists
// the fields of the message object of a message or edit frame.
type editFrame struct {
	Type     string          `json:"type"`
	Code     string          `json:"code"`
	Chat     wireChat        `json:"chat"`
	Message  *editedMessage  `json:"message"`
	Messages []editedMessage `json:"messages"`
	Fields   []string        `json:"-"`
	data     string          // as received, for failure messages
}

// String returns the frame as received, shortened.
func (f editFrame) String() string {
	if len(f.data) > 300 {
		return f.data[:300] + "…"
	}
	return f.data
}

// readFrame reads the next frame from ws.
func readFrame(t *testing.T, ws *websocket.Conn) editFrame {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(ioTimeout))
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var f editFrame
	var raw struct {
		Message map[string]json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	f.Fields = slices.Sorted(maps.Keys(raw.Message))
	f.data = string(data)
	return f
}

// expectFrame reads the next frame and checks its type, and for message
// and edit frames the message's ID.
func expectFrame(t *testing.T, ws *websocket.Conn, typ, id string) editFrame {
	t.Helper()
	f := readFrame(t, ws)
	if f.Type != typ || (id != "" && (f.Message == nil || f.Message.ID != id)) {
		t.Fatalf("got frame %+v; want %s of message %q", f, typ, id)
	}
	return f
}

// join opens a tab of a (a real server) and sends h as its hello,
// returning the tab and the history that answered it.
func join(t *testing.T, a *webchat.Adapter, h hello) (*websocket.Conn, editFrame) {
	t.Helper()
	ws, _, err := dial(a, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, joinOn(t, ws, h)
}

// joinOn sends h as the hello of ws and returns the history that answered
// it.
func joinOn(t *testing.T, ws *websocket.Conn, h hello) editFrame {
	t.Helper()
	ws.SetWriteDeadline(time.Now().Add(ioTimeout))
	if err := ws.WriteJSON(struct {
		Type string `json:"type"`
		hello
	}{"hello", h}); err != nil {
		t.Fatalf("hello: %v", err)
	}
	return expectFrame(t, ws, "history", "")
}

// press sends a button press under message id.
func press(t *testing.T, ws *websocket.Conn, id, data string) {
	t.Helper()
	ws.SetWriteDeadline(time.Now().Add(ioTimeout))
	if err := ws.WriteJSON(map[string]string{"type": "callback", "data": data, "message_id": id}); err != nil {
		t.Fatalf("press: %v", err)
	}
}

// sendTo sends msg to chat through a's Sender, failing the test on error.
func sendTo(t *testing.T, a *webchat.Adapter, chat string, msg platform.OutboundMessage) platform.SendResult {
	t.Helper()
	res, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: chat}, Message: msg})
	if err != nil {
		t.Fatalf("Send(%+v) = %v", msg, err)
	}
	return res
}

// buttonsOf returns the buttons of m as "text=data" or "text>url".
func buttonsOf(m editedMessage) [][]string {
	var rows [][]string
	for _, row := range m.Buttons {
		var r []string
		for _, b := range row {
			if b.URL != "" {
				r = append(r, b.Text+">"+b.URL)
			} else {
				r = append(r, b.Text+"="+b.Data)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func sameButtons(m editedMessage, want ...[]string) bool {
	return slices.EqualFunc(buttonsOf(m), want, slices.Equal[[]string])
}

// TestEdit edits a bot message in a room with two tabs: both get the edit
// frame in order with the chat's other messages, the result names the
// message, only the new buttons work, an edit without buttons removes
// them, and a tab that joins later sees the message edited in its place.
func TestEdit(t *testing.T) {
	a, bot := start(t, webchat.Config{})
	one, hist := join(t, a, hello{Room: "edits"})
	two, _ := join(t, a, hello{Room: "edits"})
	tabs := []*websocket.Conn{one, two}
	chat := hist.Chat.ID

	menu := sendTo(t, a, chat, platform.OutboundMessage{Text: "Pick", Buttons: [][]platform.Button{
		{{Text: "Tea", Data: "tea"}, {Text: "Coffee", Data: "coffee"}},
		{{Text: "Docs", URL: "https://example.com/docs"}},
	}})
	between := sendTo(t, a, chat, platform.TextMessage("between"))
	edit := sendTo(t, a, chat, platform.OutboundMessage{EditID: menu.MessageID, Text: "<b>Tea</b> it is",
		ParseMode: platform.ParseHTML, Buttons: [][]platform.Button{{{Text: "Back", Data: "back"}}}})
	after := sendTo(t, a, chat, platform.TextMessage("after"))

	if edit.MessageID != menu.MessageID || edit.ChatID != chat || edit.SentAt.Before(menu.SentAt) {
		t.Errorf("edit result = %+v; want message %s of %s, at or after %v", edit, menu.MessageID, chat, menu.SentAt)
	}
	b, _ := strconv.ParseUint(between.MessageID, 10, 64)
	if n, _ := strconv.ParseUint(after.MessageID, 10, 64); n != b+1 {
		t.Errorf("message after the edit has ID %s; want the next after %s: an edit takes no ID", after.MessageID, between.MessageID)
	}
	for i, ws := range tabs {
		expectFrame(t, ws, "message", menu.MessageID)
		expectFrame(t, ws, "message", between.MessageID)
		f := expectFrame(t, ws, "edit", menu.MessageID)
		m := f.Message
		if m.Text != "<b>Tea</b> it is" || m.ParseMode != "HTML" || !sameButtons(*m, []string{"Back=back"}) ||
			!m.Edited.Equal(edit.SentAt) {
			t.Errorf("tab %d: edit = %+v; want the new text, parse mode and buttons, edited at %v", i, m, edit.SentAt)
		}
		// An edit carries what it changes, not the rest of the message.
		if !slices.Equal(f.Fields, []string{"buttons", "edited", "id", "parse_mode", "text"}) {
			t.Errorf("tab %d: edit frame's message has fields %q", i, f.Fields)
		}
		expectFrame(t, ws, "message", after.MessageID)
	}

	// The old buttons are gone, the new one works.
	press(t, one, menu.MessageID, "tea")
	if f := readFrame(t, one); f.Type != "error" || f.Code != "unknown_button" {
		t.Fatalf("press of a removed button answered %+v; want unknown_button", f)
	}
	press(t, one, menu.MessageID, "back")
	for i, ws := range tabs {
		if f := readFrame(t, ws); f.Type != "message" || f.Message.Text != "you pressed back" {
			t.Fatalf("tab %d: press of the new button answered %+v; want the bot's reply", i, f)
		}
	}
	evs := bot.Events()
	if cb := evs[len(evs)-1]; cb.Kind != platform.EventCallback || cb.Text != "back" || cb.MessageID != menu.MessageID {
		t.Errorf("callback event = %+v; want back under %s", cb, menu.MessageID)
	}

	// An edit without buttons removes them.
	done := sendTo(t, a, chat, platform.EditMessage(menu.MessageID, "Done"))
	for i, ws := range tabs {
		f := expectFrame(t, ws, "edit", menu.MessageID)
		if m := f.Message; m.Text != "Done" || m.ParseMode != "" || m.Buttons != nil || !m.Edited.Equal(done.SentAt) {
			t.Errorf("tab %d: edit = %+v; want plain text Done without buttons", i, m)
		}
	}
	press(t, one, menu.MessageID, "back")
	if f := readFrame(t, one); f.Type != "error" || f.Code != "unknown_button" {
		t.Fatalf("press after the buttons were removed answered %+v; want unknown_button", f)
	}

	// A tab that joins now sees the message edited, in its place, with
	// its first time; the other messages are not marked.
	_, h := join(t, a, hello{Room: "edits"})
	if got := texts(messagesOf(h)); !slices.Equal(got, []string{"Done", "between", "after", "you pressed back"}) {
		t.Fatalf("history = %q", got)
	}
	m := h.Messages[0]
	if m.ID != menu.MessageID || m.ParseMode != "" || m.Buttons != nil || !m.Time.Equal(menu.SentAt) || !m.Edited.Equal(done.SentAt) {
		t.Errorf("edited message in the history = %+v; want sent at %v, edited at %v, no buttons", m, menu.SentAt, done.SentAt)
	}
	for _, m := range h.Messages[1:] {
		if !m.Edited.IsZero() {
			t.Errorf("message %s marked edited", m.ID)
		}
	}
	bot.checkNoErrors(t)
}

func messagesOf(f editFrame) []message {
	out := make([]message, len(f.Messages))
	for i, m := range f.Messages {
		out[i] = m.message
	}
	return out
}

// TestEditErrors checks that an edit of anything but a bot message kept
// in the target chat's history fails for good, wrapping ErrNoMessage (or
// the validation and chat ID errors), and changes nothing.
func TestEditErrors(t *testing.T) {
	a, _ := start(t, webchat.Config{HistorySize: 3})
	tab, hist := join(t, a, hello{})
	chat := hist.Chat.ID
	_, otherHist := join(t, a, hello{})
	other := sendTo(t, a, otherHist.Chat.ID, platform.TextMessage("elsewhere"))

	old := sendTo(t, a, chat, platform.TextMessage("old"))
	expectFrame(t, tab, "message", old.MessageID)
	tab.SetWriteDeadline(time.Now().Add(ioTimeout))
	if err := tab.WriteJSON(map[string]string{"type": "message", "text": "hi"}); err != nil {
		t.Fatal(err)
	}
	user := expectFrame(t, tab, "echo", "").Message.ID
	kept := sendTo(t, a, chat, platform.TextMessage("kept"))
	expectFrame(t, tab, "message", kept.MessageID)
	last := sendTo(t, a, chat, platform.TextMessage("last")) // pushes old out of a history of 3
	expectFrame(t, tab, "message", last.MessageID)

	edit := func(id string) platform.OutboundMessage { return platform.EditMessage(id, "edited") }
	tests := []struct {
		name string
		chat string
		msg  platform.OutboundMessage
		want error
	}{
		{"unknown ID", chat, edit("999999"), webchat.ErrNoMessage},
		{"not a message ID", chat, edit("abc"), webchat.ErrNoMessage},
		{"another chat's message", chat, edit(other.MessageID), webchat.ErrNoMessage},
		{"a user's message", chat, edit(user), webchat.ErrNoMessage},
		{"a message the history dropped", chat, edit(old.MessageID), webchat.ErrNoMessage},
		{"a chat the adapter does not know", "nobody-here", edit(kept.MessageID), webchat.ErrNoMessage},
		{"invalid chat ID", "a b", edit(kept.MessageID), webchat.ErrInvalidChatID},
		{"with an attachment", chat, platform.OutboundMessage{EditID: kept.MessageID, Text: "x",
			Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "https://example.com/a.png"}}}, platform.ErrInvalidMessage},
		{"as a reply", chat, platform.OutboundMessage{EditID: kept.MessageID, Text: "x", ReplyToID: kept.MessageID}, platform.ErrInvalidMessage},
		{"without text", chat, platform.OutboundMessage{EditID: kept.MessageID}, platform.ErrInvalidMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: tt.chat}, Message: tt.msg})
			if !errors.Is(err, tt.want) || !platform.IsPermanent(err) {
				t.Fatalf("Send = %v; want a permanent error wrapping %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "webchat: ") {
				t.Errorf("error %q does not start with the package name", err)
			}
		})
	}
	// No edit frame reached the tab, and the history is as it was.
	marker := sendTo(t, a, chat, platform.TextMessage("marker"))
	expectFrame(t, tab, "message", marker.MessageID)
	_, h := join(t, a, hello{ChatID: chat})
	if got := texts(messagesOf(h)); !slices.Equal(got, []string{"kept", "last", "marker"}) {
		t.Errorf("history = %q; want kept, last, marker", got)
	}
	for _, m := range h.Messages {
		if !m.Edited.IsZero() {
			t.Errorf("message %s marked edited", m.ID)
		}
	}
}

// pipeJoin opens a tab over ps and joins the chat chatID ("" for a new
// one).
func pipeJoin(t *testing.T, ps pipeServer, chatID string) (*websocket.Conn, editFrame) {
	t.Helper()
	ws := ps.dial(t)
	return ws, joinOn(t, ws, hello{ChatID: chatID})
}

// events collects the events Run hands over, for a test in a bubble.
type events chan platform.Event

func (e events) handle(ev platform.Event) error { e <- ev; return nil }

// TestEditWithoutTab edits a message while its chat has no open tab: a
// new message fails with ErrNoConnection, but the edit succeeds, and the
// tab that comes back shows the message edited, with the new buttons
// working and the old ones refused.
func TestEditWithoutTab(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs := make(events, 10)
		a, ps, stop := runInBubble(t, webchat.Config{}, evs.handle)
		tab, hist := pipeJoin(t, ps, "")
		chat := hist.Chat.ID
		menu := sendTo(t, a, chat, platform.OutboundMessage{Text: "Pick",
			Buttons: [][]platform.Button{{{Text: "Tea", Data: "tea"}}}})
		expectFrame(t, tab, "message", menu.MessageID)
		tab.Close()
		synctest.Wait() // the adapter has seen the tab go

		if _, err := a.Sender().Send(context.Background(), platform.SendRequest{
			Target: platform.Chat{ID: chat}, Message: platform.TextMessage("lost")}); !errors.Is(err, webchat.ErrNoConnection) {
			t.Fatalf("new message with no tab: %v; want ErrNoConnection", err)
		}
		time.Sleep(time.Minute) // fake time: the edit is a minute later
		edit := sendTo(t, a, chat, platform.OutboundMessage{EditID: menu.MessageID, Text: "Tea it is",
			Buttons: [][]platform.Button{{{Text: "Again", Data: "again"}}}})
		if edit.MessageID != menu.MessageID || edit.ChatID != chat || edit.SentAt.Sub(menu.SentAt) != time.Minute {
			t.Errorf("edit result = %+v; want message %s of %s, a minute after it was sent", edit, menu.MessageID, chat)
		}

		back, h := pipeJoin(t, ps, chat)
		if len(h.Messages) != 1 {
			t.Fatalf("history = %q; want the edited menu alone", texts(messagesOf(h)))
		}
		if m := h.Messages[0]; m.ID != menu.MessageID || m.Text != "Tea it is" || !sameButtons(m, []string{"Again=again"}) ||
			!m.Time.Equal(menu.SentAt) || !m.Edited.Equal(edit.SentAt) {
			t.Errorf("history shows %+v; want the edit, sent at %v, edited at %v", m, menu.SentAt, edit.SentAt)
		}
		press(t, back, menu.MessageID, "tea")
		if f := readFrame(t, back); f.Type != "error" || f.Code != "unknown_button" {
			t.Errorf("press of the old button answered %+v; want unknown_button", f)
		}
		press(t, back, menu.MessageID, "again")
		if ev := <-evs; ev.Kind != platform.EventCallback || ev.Text != "again" || ev.MessageID != menu.MessageID {
			t.Errorf("event = %+v; want the press of again under %s", ev, menu.MessageID)
		}
		stop()
		back.Close()
	})
}

// TestEditHistoryBytes checks edits against the history's byte budget:
// a message an edit makes larger counts with its new size and pushes the
// oldest messages out; one the edit makes larger than the budget on its
// own reaches the open tabs and leaves the history (its buttons stop
// working), and with no tab open that edit fails with ErrNoConnection and
// changes nothing.
func TestEditHistoryBytes(t *testing.T) {
	const budget = 3000
	cfg := webchat.Config{HistoryBytes: budget}
	text := func(n int) string { return strings.Repeat("x", n) }
	withButton := func(text, data string) platform.OutboundMessage {
		return platform.OutboundMessage{Text: text, Buttons: [][]platform.Button{{{Text: data, Data: data}}}}
	}

	t.Run("larger", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, ps, stop := runInBubble(t, cfg, func(platform.Event) error { return nil })
			tab, hist := pipeJoin(t, ps, "")
			chat := hist.Chat.ID
			var ids []string
			for range 3 { // about 800 bytes each, 2400 in all
				res := sendTo(t, a, chat, platform.TextMessage(text(700)))
				expectFrame(t, tab, "message", res.MessageID)
				ids = append(ids, res.MessageID)
			}
			// About 1900 bytes: 800 + 800 + 1900 > 3000, so the first goes;
			// 800 + 1900 fit.
			sendTo(t, a, chat, platform.EditMessage(ids[2], text(1800)))
			expectFrame(t, tab, "edit", ids[2])
			_, h := pipeJoin(t, ps, chat)
			if got := idsOf(h); !slices.Equal(got, ids[1:]) || len(h.Messages[1].Text) != 1800 {
				t.Errorf("history keeps %q; want %q, the last one edited", got, ids[1:])
			}
			stop()
		})
	})

	t.Run("too large with a tab", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			evs := make(events, 10)
			a, ps, stop := runInBubble(t, cfg, evs.handle)
			tab, hist := pipeJoin(t, ps, "")
			chat := hist.Chat.ID
			first := sendTo(t, a, chat, platform.TextMessage("first"))
			menu := sendTo(t, a, chat, withButton("menu", "old"))
			expectFrame(t, tab, "message", first.MessageID)
			expectFrame(t, tab, "message", menu.MessageID)

			res, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: chat},
				Message: platform.OutboundMessage{EditID: menu.MessageID, Text: text(budget),
					Buttons: [][]platform.Button{{{Text: "new", Data: "new"}}}}})
			if err != nil || res.MessageID != menu.MessageID {
				t.Fatalf("edit = %+v, %v; want it delivered to the open tab", res, err)
			}
			if f := expectFrame(t, tab, "edit", menu.MessageID); len(f.Message.Text) != budget {
				t.Errorf("edit frame has %d bytes of text; want %d", len(f.Message.Text), budget)
			}
			// Not kept: no button of it works, and a reload does not show
			// it; the rest of the history stays.
			press(t, tab, menu.MessageID, "new")
			if f := readFrame(t, tab); f.Type != "error" || f.Code != "unknown_button" {
				t.Errorf("press under the message too large to keep answered %+v; want unknown_button", f)
			}
			_, h := pipeJoin(t, ps, chat)
			if got := idsOf(h); !slices.Equal(got, []string{first.MessageID}) {
				t.Errorf("history keeps %q; want only %s", got, first.MessageID)
			}
			stop()
			if len(evs) != 0 {
				t.Errorf("%d events; want none", len(evs))
			}
		})
	})

	t.Run("too large without a tab", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			evs := make(events, 10)
			a, ps, stop := runInBubble(t, cfg, evs.handle)
			tab, hist := pipeJoin(t, ps, "")
			chat := hist.Chat.ID
			menu := sendTo(t, a, chat, withButton("menu", "old"))
			expectFrame(t, tab, "message", menu.MessageID)
			tab.Close()
			synctest.Wait() // the adapter has seen the tab go

			_, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: chat},
				Message: platform.EditMessage(menu.MessageID, text(budget))})
			if !errors.Is(err, webchat.ErrNoConnection) || platform.IsPermanent(err) {
				t.Fatalf("edit too large to keep, with no tab = %v; want the retryable ErrNoConnection", err)
			}
			back, h := pipeJoin(t, ps, chat)
			if len(h.Messages) != 1 || h.Messages[0].Text != "menu" || !h.Messages[0].Edited.IsZero() {
				t.Fatalf("history = %+v; want the menu unchanged", h.Messages)
			}
			press(t, back, menu.MessageID, "old")
			if ev := <-evs; ev.Text != "old" || ev.MessageID != menu.MessageID {
				t.Errorf("event = %+v; want the press of the unchanged menu's button", ev)
			}
			stop()
			back.Close()
		})
	})
}

func idsOf(f editFrame) []string {
	var ids []string
	for _, m := range f.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestEditQueueBytes checks that an edit frame counts against a tab's
// queue budget like a message frame: a tab that reads nothing keeps a
// small edit queued, and the large edit that would take its queue past
// QueueBytes disconnects it. The edit still succeeds, being kept in the
// history, where the tab finds it when it comes back.
func TestEditQueueBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, ps, stop := runInBubble(t, webchat.Config{QueueSize: 1000, QueueBytes: 10000}, func(platform.Event) error { return nil })
		slow, hist := pipeJoin(t, ps, "")
		chat := hist.Chat.ID
		send := func(msg platform.OutboundMessage) (platform.SendResult, error) {
			res, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: chat}, Message: msg})
			synctest.Wait() // let the writer take what it can
			return res, err
		}

		// The tab's writer holds this frame of about 4100 bytes: the pipe
		// takes nothing the tab does not read.
		msg, err := send(platform.TextMessage(strings.Repeat("m", 4000)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := send(platform.EditMessage(msg.MessageID, "small")); err != nil { // about 4250 queued
			t.Fatal(err)
		}
		if _, err := send(platform.TextMessage("still there?")); err != nil { // about 4350
			t.Fatalf("send after the small edit: %v; want the tab still connected", err)
		}
		// 6000 bytes more do not fit in 10000: the tab is dropped, and the
		// edit is kept for it.
		big, err := send(platform.EditMessage(msg.MessageID, strings.Repeat("e", 6000)))
		if err != nil {
			t.Fatalf("edit that overflows the only tab's queue: %v; want it kept in the history", err)
		}
		if _, err := send(platform.TextMessage("now?")); !errors.Is(err, webchat.ErrNoConnection) {
			t.Fatalf("send after the big edit: %v; want ErrNoConnection, the tab dropped", err)
		}
		// The tab reads at most what its writer was writing, never the
		// big edit, then the end.
		n := 0
		for {
			if _, _, err := slow.ReadMessage(); err != nil {
				break
			}
			n++
		}
		if n > 1 {
			t.Errorf("slow tab read %d frames after being dropped; want at most 1", n)
		}
		back, h := pipeJoin(t, ps, chat)
		if got := texts(messagesOf(h)); len(got) != 2 || got[0] != strings.Repeat("e", 6000) || got[1] != "still there?" ||
			!h.Messages[0].Edited.Equal(big.SentAt) {
			t.Errorf("history after reconnect has %d messages; want the big edit, then still there?", len(got))
		}
		stop()
		slow.Close()
		back.Close()
	})
}
