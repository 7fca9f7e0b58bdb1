package webchat_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// TestAnswerCallback checks the rules of answers: the tab that pressed
// gets the answer, a press is answered at most once, an empty answer
// sends nothing, and what the page cannot show is refused.
func TestAnswerCallback(t *testing.T) {
	a, bot := start(t, webchat.Config{})
	tab := connect(t, a, hello{})
	tab.say(t, "/buttons")
	msgs := tab.readMessages(t, 2)
	menu := msgs[1]
	press := func() platform.Event {
		t.Helper()
		n := len(bot.Events())
		tab.send(t, map[string]string{"type": "callback", "data": "yes", "message_id": menu.ID})
		ev := waitEvents(t, bot, n+1)[n]
		tab.readMessages(t, 1) // the test bot's "you pressed yes"
		if ev.Kind != platform.EventCallback || !strings.HasPrefix(ev.QueryID, "press-") {
			t.Fatalf("press arrived as %+v; want a callback with a QueryID", ev)
		}
		return ev
	}
	ctx := context.Background()
	ev := press()
	if err := a.AnswerCallback(ctx, ev, platform.CallbackAnswer{Text: "Saved", Alert: true}); err != nil {
		t.Fatalf("AnswerCallback = %v", err)
	}
	if f := tab.read(t); f.Type != "answer" || f.Answer == nil || *f.Answer != (answer{QueryID: ev.QueryID, MessageID: menu.ID, Text: "Saved", Alert: true}) {
		t.Fatalf("frame %+v; want the answer", f)
	}
	if err := a.AnswerCallback(ctx, ev, platform.CallbackAnswer{Text: "again"}); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrAlreadyAnswered) {
		t.Errorf("a second answer = %v; want a permanent ErrAlreadyAnswered", err)
	}
	quiet := press()
	if err := a.AnswerCallback(ctx, quiet, platform.CallbackAnswer{}); err != nil {
		t.Errorf("an empty answer = %v", err)
	}
	for _, tc := range []struct {
		ans  platform.CallbackAnswer
		want error
	}{
		{platform.CallbackAnswer{URL: "https://example.com/"}, platform.ErrUnsupported},
		{platform.CallbackAnswer{Text: strings.Repeat("x", 1025)}, platform.ErrInvalidMessage},
	} {
		if err := a.AnswerCallback(ctx, press(), tc.ans); !platform.IsPermanent(err) || !errors.Is(err, tc.want) {
			t.Errorf("AnswerCallback(%.20v) = %v; want a permanent error wrapping %v", tc.ans, err, tc.want)
		}
	}
	if err := a.AnswerCallback(ctx, platform.Event{Kind: platform.EventCallback}, platform.CallbackAnswer{}); !errors.Is(err, platform.ErrInvalidMessage) {
		t.Errorf("an answer without a QueryID = %v; want ErrInvalidMessage", err)
	}

	// The next frame is the action: the empty answer sent nothing.
	if err := a.SendChatAction(ctx, ev.Chat, platform.ActionUploadPhoto); err != nil {
		t.Fatalf("SendChatAction = %v", err)
	}
	if f := tab.read(t); f.Type != "action" || f.Action != "upload_photo" {
		t.Fatalf("frame %+v; want the chat action", f)
	}
	if err := a.SendChatAction(ctx, ev.Chat, "dancing"); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
		t.Errorf("an unknown action = %v; want a permanent ErrInvalidMessage", err)
	}
	if err := a.SendChatAction(ctx, platform.Chat{ID: "nobody-here"}, platform.ActionTyping); !errors.Is(err, webchat.ErrNoConnection) || platform.IsPermanent(err) {
		t.Errorf("an action in a chat with no tab = %v; want a retryable ErrNoConnection", err)
	}
	bot.checkNoErrors(t)
}
