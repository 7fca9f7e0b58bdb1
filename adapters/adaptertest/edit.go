package adaptertest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// testEdit edits a message. Without Features.NoEdit: the result names the
// edited message, no new message arrives, a ShowingPeer shows the new text
// and buttons in place (then no buttons after an edit without any), and an
// edit of a message that does not exist fails for good. With NoEdit: the
// edit is refused with a permanent platform.ErrUnsupported error.
func testEdit(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	if f.NoEdit {
		ctx, cancel := e.ctx(patience)
		r := e.send(ctx, chat, platform.EditMessage("1", "edited"), patience)
		cancel()
		if !platform.IsPermanent(r.err) || !errors.Is(r.err, platform.ErrUnsupported) {
			t.Errorf("edit on a platform without edits = %v; want a permanent error wrapping platform.ErrUnsupported", r.err)
		}
		e.mustSend(chat, platform.TextMessage("after the edit"))
		e.expectOnly(chat, "after the edit")
		return
	}
	if f.NoMessageID {
		t.Skip("an edit needs the message's ID, and the platform gives none")
	}
	buttons := func(data ...string) [][]platform.Button {
		if f.NoButtons {
			return nil
		}
		row := make([]platform.Button, len(data))
		for i, d := range data {
			row[i] = platform.Button{Text: "Button " + d, Data: d}
		}
		return [][]platform.Button{row}
	}
	menu := e.mustSend(chat, platform.OutboundMessage{Text: "menu", Buttons: buttons("a", "b")})
	e.mustSend(chat, platform.TextMessage("after the menu"))
	e.received(chat, 2)

	edited := platform.OutboundMessage{Text: "menu, edited", EditID: menu.MessageID, Buttons: buttons("c")}
	res := e.mustSend(chat, edited)
	if res.MessageID != menu.MessageID || res.ChatID != chat.ID {
		t.Fatalf("edit result names message %q in chat %q; want the edited message %q in %q",
			res.MessageID, res.ChatID, menu.MessageID, chat.ID)
	}
	e.expectShown(chat, edited)
	bare := platform.EditMessage(menu.MessageID, "menu, without buttons")
	e.mustSend(chat, bare)
	e.expectShown(chat, bare)

	ctx, cancel := e.ctx(patience)
	r := e.send(ctx, chat, platform.EditMessage("987654321", "no such message"), patience)
	cancel()
	if !platform.IsPermanent(r.err) {
		t.Errorf("edit of a message that does not exist = %v; want a permanent error", r.err)
	}
}

// expectShown checks, if the peer can show its chats, that within patience
// chat shows want in place of its first message, and its second message
// after it: the edit changed the message, and added none.
func (e *env) expectShown(chat platform.Chat, want platform.OutboundMessage) {
	e.t.Helper()
	sp, ok := e.peer.(ShowingPeer)
	if !ok {
		return
	}
	ctx, cancel := e.ctx(patience)
	defer cancel()
	for {
		shown, err := sp.Shown(ctx, chat)
		if err == nil && len(shown) == 2 && sameShown(shown[0], want, e.f) && shown[1].Text == "after the menu" {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Errorf("chat %s shows %s (err %v); want %s, then %q", chat.ID, describe(shown), err,
				describe([]platform.OutboundMessage{want}), "after the menu")
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sameShown reports whether got shows want's text and, when the platform
// has buttons, its buttons.
func sameShown(got, want platform.OutboundMessage, f Features) bool {
	if got.Text != want.Text {
		return false
	}
	if f.NoButtons {
		return true
	}
	return len(got.Buttons) == len(want.Buttons) &&
		slices.EqualFunc(got.Buttons, want.Buttons, func(a, b []platform.Button) bool { return slices.Equal(a, b) })
}

func describe(msgs []platform.OutboundMessage) string {
	s := "["
	for i, m := range msgs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q with buttons %v", m.Text, m.Buttons)
	}
	return s + "]"
}
