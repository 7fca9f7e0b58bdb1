package engine_test

import (
	"errors"
	"testing"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// A menu edited in place: the button press names the message it is under,
// and Edit replaces that message's text and buttons, after the chat's
// earlier sends. An Edit without a message ID fails at once.
func TestEditMenuInPlace(t *testing.T) {
	e, mem := newEngine(t)
	e.OnCommand("menu", func(c *engine.Context) error {
		c.Reply(platform.OutboundMessage{Text: "Pick one", Buttons: [][]platform.Button{{
			{Text: "Tea", Data: "tea"}, {Text: "Coffee", Data: "coffee"},
		}}})
		return nil
	})
	noID := make(chan error, 1)
	e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
		c.ReplyText("noted")
		c.Edit(c.Event().MessageID, platform.TextMessage("You picked "+c.Text()))
		_, err := c.Edit("", platform.TextMessage("x")).Wait(c.Context())
		noID <- err
		return nil
	})
	runEngine(t, e)

	mem.Say(dm, ann, "/menu")
	sent, err := mem.WaitSent(testCtx(t), dm.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	mem.PressOn(dm, ann, sent[0].MessageID, "coffee")
	if _, err := mem.WaitSent(testCtx(t), dm.ID, 3); err != nil {
		t.Fatal(err)
	}
	if err := <-noID; !errors.Is(err, platform.ErrInvalidMessage) || !platform.IsPermanent(err) {
		t.Fatalf("Edit without an ID = %v; want a permanent ErrInvalidMessage", err)
	}
	shown := mem.Shown(dm.ID)
	if len(shown) != 2 || shown[0].Message.Text != "You picked coffee" || shown[0].Message.Buttons != nil || shown[1].Message.Text != "noted" {
		t.Fatalf("chat shows %+v; want the edited menu without buttons, then noted", shown)
	}
	if got := mem.Texts(dm.ID); got[1] != "noted" || got[2] != "You picked coffee" {
		t.Fatalf("sent %q; want the edit after the reply queued before it", got)
	}
}

// WithReplyTexts sets the words ReplySuccess and ReplyError add; without
// it they are DefaultReplyTexts'.
func TestReplyTexts(t *testing.T) {
	for _, tt := range []struct {
		name  string
		opts  []engine.Option
		wants []string
	}{
		{"default", nil, []string{"✅ done", "⚠️ no such note", "⚠️ Sorry, something went wrong."}},
		{"set", []engine.Option{engine.WithReplyTexts(engine.ReplyTexts{Success: "OK: ", Apology: "Oops."})}, []string{"OK: done", "no such note", "Oops."}},
		{"empty apology", []engine.Option{engine.WithReplyTexts(engine.ReplyTexts{})}, []string{"done", "no such note", "Sorry, something went wrong."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, mem := newEngine(t, tt.opts...)
			e.OnCommand("go", func(c *engine.Context) error {
				c.ReplySuccess("done")
				c.ReplyError(engine.NewUserError("no such note", nil))
				c.ReplyError(errors.New("disk on fire"))
				return nil
			})
			runEngine(t, e)
			mem.Say(dm, ann, "/go")
			waitTexts(t, mem, dm.ID, tt.wants...)
		})
	}
}
