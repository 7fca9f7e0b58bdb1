package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/platform"
)

// An edit replaces its message in Shown and is logged in Sent; an edit of a
// message the adapter did not send to that chat fails for good.
func TestEdit(t *testing.T) {
	a := memory.New()
	s := a.Sender()
	ctx := context.Background()
	chat := memory.Private("c1")
	send := func(msg platform.OutboundMessage) (platform.SendResult, error) {
		return s.Send(ctx, platform.SendRequest{Platform: a.Name(), Target: chat, Message: msg})
	}
	first, err := send(platform.OutboundMessage{Text: "menu", Buttons: [][]platform.Button{{{Text: "a", Data: "a"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send(platform.TextMessage("second")); err != nil {
		t.Fatal(err)
	}
	res, err := send(platform.EditMessage(first.MessageID, "menu: a chosen"))
	if err != nil || res.MessageID != first.MessageID {
		t.Fatalf("edit = %+v, %v; want the edited message's ID %s", res, err, first.MessageID)
	}
	shown := a.Shown("c1")
	if len(shown) != 2 || shown[0].Message.Text != "menu: a chosen" || shown[0].Message.Buttons != nil || shown[1].Message.Text != "second" {
		t.Fatalf("Shown = %+v; want the edited menu, without buttons, then second", shown)
	}
	if got := a.Texts("c1"); len(got) != 3 || got[2] != "menu: a chosen" {
		t.Fatalf("Texts = %q; want the edit logged third", got)
	}

	for _, id := range []string{"999", first.MessageID} {
		target := chat
		if id == first.MessageID {
			target = memory.Private("other") // the message is in c1, not here
		}
		_, err := s.Send(ctx, platform.SendRequest{Platform: a.Name(), Target: target, Message: platform.EditMessage(id, "x")})
		if !errors.Is(err, memory.ErrNoMessage) || !platform.IsPermanent(err) {
			t.Fatalf("edit of message %s in %s = %v; want a permanent ErrNoMessage", id, target.ID, err)
		}
	}
}
