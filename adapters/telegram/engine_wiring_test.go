package telegram

import (
	"slices"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// The engine sets the commands menu from its command matchers as the
// adapter starts, routes presses by their data's prefix (OnCallback), and
// its handlers answer payments' checks, join requests, react and call
// methods by name; a check the handler leaves unanswered is refused when
// its handling ends.
func TestEngineTelegramWiring(t *testing.T) {
	votes := make(chan []string, 1)
	b := startTgEngine(t, func(e *engine.Engine) {
		e.OnCommand("vote", func(c *engine.Context) error {
			data, err := platform.CallbackData("vote", "yes", "2")
			if err != nil {
				return err
			}
			c.Reply(platform.OutboundMessage{Text: "Yes?", Buttons: [][]platform.Button{{platform.DataButton("Yes", data)}}})
			return nil
		}, engine.Description("vote on it"))
		e.OnCallback("vote", func(c *engine.Context) error {
			votes <- c.Args()
			return c.Answer("Counted", false)
		})
		e.OnEvent(platform.EventPreCheckout, func(c *engine.Context) error {
			if strings.HasPrefix(c.Text(), "ok") || c.Event().From.ID == "7" {
				return c.AnswerPreCheckout(platform.PreCheckoutAnswer{OK: true})
			}
			return nil // left unanswered: refused when the handling ends
		})
		e.OnEvent(platform.EventJoinRequest, func(c *engine.Context) error { return c.AnswerJoinRequest(true) })
		e.OnCommand("like", func(c *engine.Context) error {
			c.React("👍")
			c.Call("pinChatMessage", map[string]any{"chat_id": c.Chat().ID, "message_id": c.Event().MessageID})
			return nil
		})
	})
	ctx := waitCtx(t)

	if err := b.srv.WaitUntil(ctx, func() bool { return len(b.srv.CommandMenus()) > 0 }); err != nil {
		t.Fatalf("no commands menu set: %v", err)
	}
	var names []string
	for _, c := range b.srv.CommandMenus()[0].Commands {
		names = append(names, c.Command)
		if c.Command == "vote" && c.Description != "vote on it" {
			t.Errorf("/vote's description is %q", c.Description)
		}
	}
	if !slices.Contains(names, "vote") || !slices.Contains(names, "like") || !slices.Contains(names, "ping") {
		t.Fatalf("the menu has %q; want every command", names)
	}

	b.say(100, "/vote")
	sent, err := b.srv.WaitSent(ctx, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.srv.PushCallback(100, tgbotapi.User{ID: 100, FirstName: "U"}, sent[0].MessageID, "vote:yes:2")
	if got := <-votes; !slices.Equal(got, []string{"yes", "2"}) {
		t.Fatalf("OnCallback got args %q", got)
	}

	paid := b.srv.PushPreCheckout(ann, "XTR", 50, "ok-order")
	refused := b.srv.PushPreCheckout(tgbotapi.User{ID: 9, FirstName: "Bo"}, "XTR", 50, "bad-order")
	if err := b.srv.WaitUntil(ctx, func() bool { return len(b.srv.CheckoutAnswers()) == 2 }); err != nil {
		t.Fatalf("checks answered: %+v; %v", b.srv.CheckoutAnswers(), err)
	}
	for _, a := range b.srv.CheckoutAnswers() {
		if want := a.QueryID == paid; a.OK != want || a.QueryID != paid && a.QueryID != refused {
			t.Fatalf("check %+v; want %s accepted and %s refused", a, paid, refused)
		}
	}

	b.srv.PushJoinRequest(-500, tgbotapi.User{ID: 11, FirstName: "Jo"}, "hi")
	if err := b.srv.WaitUntil(ctx, func() bool { return len(b.srv.JoinAnswers()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if a := b.srv.JoinAnswers()[0]; !a.Approved || a.UserID != 11 {
		t.Fatalf("join answer %+v; want Jo approved", a)
	}

	b.say(100, "/like")
	if err := b.srv.WaitUntil(ctx, func() bool {
		return len(b.srv.Reactions(100)) == 1 && len(b.srv.Calls("pinChatMessage")) == 1
	}); err != nil {
		t.Fatalf("reactions %+v, calls %+v: %v", b.srv.Reactions(100), b.srv.Calls("pinChatMessage"), err)
	}
}

// A handler's streamed reply (Context.Stream) of 2,000 characters in 100
// writes ends as one message with the whole text, shown growing by edits
// in a group.
func TestEngineTelegramStream(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	b := startTgEngine(t, func(e *engine.Engine) {
		e.OnCommand("tell", func(c *engine.Context) error {
			s, err := c.Stream(platform.OutboundMessage{})
			if err != nil {
				return err
			}
			for i := range 100 {
				s.WriteString(strings.Repeat(string(rune('a'+i%26)), 20))
			}
			_, err = s.Close(c.Context())
			done <- err
			return err
		})
	})
	const group = -900
	b.say(group, "/tell")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sent := b.srv.Sent(group)
	if len(sent) != 1 {
		t.Fatalf("%d messages; want the stream as one", len(sent))
	}
	final := sent[0].Text
	if edits := b.srv.Edits(group); len(edits) > 0 {
		final = edits[len(edits)-1].Text
	}
	if len(final) != 2000 || !strings.HasPrefix(final, strings.Repeat("a", 20)+strings.Repeat("b", 20)) {
		t.Fatalf("the message ends with %d characters %q…", len(final), final[:min(len(final), 50)])
	}
}
