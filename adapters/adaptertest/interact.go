package adaptertest

import (
	"errors"
	"testing"

	"github.com/heraldbot/herald/platform"
)

// testCallbackAnswer has a user press a button under the bot's message:
// the press must arrive as an EventCallback naming the message, with a
// QueryID, and the answer must reach the peer. With
// Features.NoCallbackAnswer, an adapter that is a CallbackAnswerer must
// refuse with platform.ErrUnsupported.
func testCallbackAnswer(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	ca, isAnswerer := e.a.(platform.CallbackAnswerer)
	if f.NoCallbackAnswer {
		if isAnswerer {
			ctx, cancel := e.ctx(promptly)
			defer cancel()
			err := ca.AnswerCallback(ctx, platform.Event{Platform: e.name, Kind: platform.EventCallback, QueryID: "1"}, platform.CallbackAnswer{})
			if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrUnsupported) {
				t.Errorf("AnswerCallback on an adapter without answers (Features.NoCallbackAnswer) = %v; want a permanent error wrapping platform.ErrUnsupported", err)
			}
		}
		return
	}
	pp, ok := e.peer.(PressPeer)
	switch {
	case !isAnswerer:
		t.Fatal("the adapter is not a platform.CallbackAnswerer; set Features.NoCallbackAnswer if the platform has no answers to button presses")
	case !ok:
		t.Fatal("the peer is not an adaptertest.PressPeer, which the callback check needs; set Features.NoCallbackAnswer if the platform has no answers to button presses")
	}
	if f.NoButtons {
		t.Skip("Features.NoButtons: there is no button to press")
	}
	chat, user := e.chat(0, platform.ChatPrivate), e.user(0)
	menu := e.mustSend(chat, platform.OutboundMessage{Text: "press it", Buttons: [][]platform.Button{{{Text: "Press", Data: "pressed"}}}})
	e.received(chat, 1)
	ctx, cancel := e.ctx(patience)
	defer cancel()
	if err := pp.Press(ctx, chat, user, menu.MessageID, "pressed"); err != nil {
		t.Fatalf("PressPeer.Press: %v", err)
	}
	evs, err := e.rec.wait(ctx, 1)
	if err != nil {
		t.Fatalf("the press: %v", err)
	}
	ev := evs[0]
	switch {
	case ev.Kind != platform.EventCallback || ev.Text != "pressed":
		t.Fatalf("press arrived as %s %q; want an EventCallback with the button's data %q", ev.Kind, ev.Text, "pressed")
	case ev.From.ID != user.ID || ev.Chat.ID != chat.ID:
		t.Errorf("press from %q in %q; want from %q in %q", ev.From.ID, ev.Chat.ID, user.ID, chat.ID)
	case !f.NoMessageID && ev.MessageID != menu.MessageID:
		t.Errorf("press names message %q; want the message %q the button is under", ev.MessageID, menu.MessageID)
	case ev.QueryID == "":
		t.Errorf("press %+v has no QueryID to answer it by", ev)
	}
	want := platform.CallbackAnswer{Text: "Thanks for pressing", Alert: true}
	if err := ca.AnswerCallback(ctx, ev, want); err != nil {
		t.Fatalf("AnswerCallback = %v; want success", err)
	}
	got, err := pp.Answered(ctx, ev)
	if err != nil || got.Text != want.Text || got.Alert != want.Alert {
		t.Errorf("the peer received the answer %+v (%v); want %+v", got, err, want)
	}
	err = ca.AnswerCallback(ctx, platform.Event{Platform: e.name, Kind: platform.EventCallback, Chat: chat}, platform.CallbackAnswer{})
	if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
		t.Errorf("AnswerCallback of a press without a QueryID = %v; want a permanent error wrapping platform.ErrInvalidMessage", err)
	}
}

// testChatAction shows "typing": it must succeed and, for an ActionPeer,
// arrive. With Features.NoChatAction, an adapter that is a ChatActor must
// refuse with platform.ErrUnsupported.
func testChatAction(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	chat := e.chat(0, platform.ChatPrivate)
	ctx, cancel := e.ctx(patience)
	defer cancel()
	actor, isActor := e.a.(platform.ChatActor)
	if f.NoChatAction {
		if isActor {
			err := actor.SendChatAction(ctx, chat, platform.ActionTyping)
			if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrUnsupported) {
				t.Errorf("SendChatAction on an adapter without chat actions (Features.NoChatAction) = %v; want a permanent error wrapping platform.ErrUnsupported", err)
			}
		}
		return
	}
	if !isActor {
		t.Fatal("the adapter is not a platform.ChatActor; set Features.NoChatAction if the platform shows no chat actions")
	}
	for _, c := range e.chats(0) {
		if err := actor.SendChatAction(ctx, c, platform.ActionTyping); err != nil {
			t.Fatalf("chat %s: SendChatAction(typing) = %v; want success", c.ID, err)
		}
		if ap, ok := e.peer.(ActionPeer); ok {
			got, err := ap.Actions(ctx, c, 1)
			if err != nil || len(got) != 1 || got[0] != platform.ActionTyping {
				t.Errorf("chat %s shows the actions %q (%v); want one typing", c.ID, got, err)
			}
		}
	}
	// A chat action is no message.
	e.mustSend(chat, platform.TextMessage("after typing"))
	e.expectOnly(chat, "after typing")
}

// testInline has a user send an inline query and choose a result: both
// must arrive as events, and the answer must reach the peer. With
// Features.NoInline, an adapter that is an InlineAnswerer must refuse with
// platform.ErrUnsupported.
func testInline(t *testing.T, h Harness, f Features) {
	e := setup(t, h, f)
	ia, isAnswerer := e.a.(platform.InlineAnswerer)
	ctx, cancel := e.ctx(patience)
	defer cancel()
	if f.NoInline {
		if isAnswerer {
			err := ia.AnswerInline(ctx, platform.Event{Platform: e.name, Kind: platform.EventInlineQuery, QueryID: "1"}, platform.InlineAnswer{})
			if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrUnsupported) {
				t.Errorf("AnswerInline on an adapter without inline queries (Features.NoInline) = %v; want a permanent error wrapping platform.ErrUnsupported", err)
			}
		}
		return
	}
	ip, ok := e.peer.(InlinePeer)
	switch {
	case !isAnswerer:
		t.Fatal("the adapter is not a platform.InlineAnswerer; set Features.NoInline if the platform has no inline queries")
	case !ok:
		t.Fatal("the peer is not an adaptertest.InlinePeer, which the inline check needs; set Features.NoInline if the platform has no inline queries")
	}
	user := e.user(0)
	if err := ip.Query(ctx, user, "herald cats"); err != nil {
		t.Fatalf("InlinePeer.Query: %v", err)
	}
	evs, err := e.rec.wait(ctx, 1)
	if err != nil {
		t.Fatalf("the inline query: %v", err)
	}
	q := evs[0]
	switch {
	case q.Kind != platform.EventInlineQuery || q.Text != "herald cats":
		t.Fatalf("inline query arrived as %s %q; want an EventInlineQuery %q", q.Kind, q.Text, "herald cats")
	case q.From.ID != user.ID || q.Chat.ID != "" || q.QueryID == "":
		t.Errorf("inline query from %q in chat %q with QueryID %q; want from %q, no chat and a QueryID", q.From.ID, q.Chat.ID, q.QueryID, user.ID)
	}
	answer := platform.InlineAnswer{Results: []platform.InlineResult{
		{ID: "text", Title: "A text", Description: "sends a text", Message: platform.TextMessage("meow")},
		{ID: "photo", Title: "A photo", Message: platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachPhoto, URL: "https://example.com/cat.jpg", Caption: "a cat"}}}},
	}}
	if err := ia.AnswerInline(ctx, q, answer); err != nil {
		t.Fatalf("AnswerInline = %v; want success", err)
	}
	got, err := ip.InlineAnswered(ctx, q)
	if err != nil || len(got.Results) != len(answer.Results) {
		t.Fatalf("the peer received the answer %+v (%v); want %d results", got, err, len(answer.Results))
	}
	for i, want := range answer.Results {
		r := got.Results[i]
		if r.ID != want.ID || r.Title != want.Title {
			t.Errorf("result %d is %q %q; want %q %q", i, r.ID, r.Title, want.ID, want.Title)
		}
		if want.Message.Text != "" && r.Message.Text != want.Message.Text {
			t.Errorf("result %d sends %q; want %q", i, r.Message.Text, want.Message.Text)
		}
		if len(want.Message.Attachments) > 0 && (len(r.Message.Attachments) != 1 || r.Message.Attachments[0].URL != want.Message.Attachments[0].URL) {
			t.Errorf("result %d sends %+v; want the photo %q", i, r.Message.Attachments, want.Message.Attachments[0].URL)
		}
	}
	if err := ip.Choose(ctx, user, "text", "herald cats"); err != nil {
		t.Fatalf("InlinePeer.Choose: %v", err)
	}
	evs, err = e.rec.wait(ctx, 2)
	if err != nil {
		t.Fatalf("the chosen result: %v", err)
	}
	if c := evs[1]; c.Kind != platform.EventInlineResult || c.Inline.ResultID != "text" || c.From.ID != user.ID || c.Text != "herald cats" {
		t.Errorf("chosen result arrived as %s %+v from %q with text %q; want an EventInlineResult naming %q from %q for %q",
			c.Kind, c.Inline, c.From.ID, c.Text, "text", user.ID, "herald cats")
	}
	err = ia.AnswerInline(ctx, platform.Event{Platform: e.name, Kind: platform.EventInlineQuery}, platform.InlineAnswer{})
	if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
		t.Errorf("AnswerInline of a query without a QueryID = %v; want a permanent error wrapping platform.ErrInvalidMessage", err)
	}
}
