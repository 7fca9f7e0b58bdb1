package webchat_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// trySend sends msg to chat through a's Sender.
func trySend(a *webchat.Adapter, chat string, msg platform.OutboundMessage) (platform.SendResult, error) {
	return a.Sender().Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: chat}, Message: msg})
}

// historyTexts returns the texts of a history frame's messages, users'
// prefixed with "user:".
func historyTexts(c *client) []string { return texts(c.hist.Messages) }

// TestDeleteMessage deletes a bot message and a user's: the open tab gets
// a delete frame for each, in order, the history no longer has them, a
// button of the deleted message stops working and an edit of it fails; a
// deletion needs no open tab, one of a message the adapter never gave out
// fails for good, and one of a message the history has dropped succeeds.
func TestDeleteMessage(t *testing.T) {
	a, _ := start(t, webchat.Config{HistorySize: 4})
	c := connect(t, a, hello{ChatID: "d1", UserID: "u1"})
	c.say(t, "hi")
	said := c.readMessages(t, 1)[0]
	keep := sendTo(t, a, "d1", platform.TextMessage("keep"))
	doomed := sendTo(t, a, "d1", platform.OutboundMessage{Text: "doomed", Buttons: [][]platform.Button{{{Text: "X", Data: "x"}}}})
	c.readMessages(t, 2)

	for _, id := range []string{doomed.MessageID, said.ID} {
		res := sendTo(t, a, "d1", platform.DeleteMessage(id))
		if res.MessageID != id || res.ChatID != "d1" || res.SentAt.IsZero() {
			t.Errorf("deletion of %s = %+v; want a result naming it", id, res)
		}
		if f := c.read(t); f.Type != "delete" || f.Message == nil || f.Message.ID != id {
			t.Fatalf("got %+v; want the delete frame of message %s", f, id)
		}
	}
	c.send(t, map[string]string{"type": "callback", "data": "x", "message_id": doomed.MessageID})
	c.expectError(t, "unknown_button")
	if _, err := trySend(a, "d1", platform.EditMessage(doomed.MessageID, "back")); !errors.Is(err, webchat.ErrNoMessage) || !platform.IsPermanent(err) {
		t.Errorf("edit of a deleted message = %v; want a permanent ErrNoMessage", err)
	}
	if got := historyTexts(connect(t, a, hello{ChatID: "d1"})); !slices.Equal(got, []string{"keep"}) {
		t.Errorf("history after the deletions = %q; want only %q", got, "keep")
	}

	// No tab needed: the history changes.
	c.ws.Close()
	waitTabs(t, a, 1) // the second tab, opened above, is still open
	if _, err := trySend(a, "room:none", platform.DeleteMessage(keep.MessageID)); err != nil {
		t.Errorf("deletion in a chat the adapter does not know = %v; want success (the message is not there)", err)
	}
	sendTo(t, a, "d1", platform.DeleteMessage(keep.MessageID))
	if got := historyTexts(connect(t, a, hello{ChatID: "d1"})); len(got) != 0 {
		t.Errorf("history after deleting every message = %q; want none", got)
	}

	// A message the history dropped counts as deleted.
	old := sendTo(t, a, "d1", platform.TextMessage("old"))
	for range 4 {
		sendTo(t, a, "d1", platform.TextMessage("newer"))
	}
	if _, err := trySend(a, "d1", platform.DeleteMessage(old.MessageID)); err != nil {
		t.Errorf("deletion of a message the history dropped = %v; want success", err)
	}
	for _, id := range []string{"987654321", "0", "abc", "-1"} {
		if _, err := trySend(a, "d1", platform.DeleteMessage(id)); !errors.Is(err, webchat.ErrNoMessage) || !platform.IsPermanent(err) ||
			!strings.HasPrefix(err.Error(), "webchat: ") {
			t.Errorf("deletion of message %q, never given out = %v; want a permanent ErrNoMessage", id, err)
		}
	}
}

// waitTabs waits until a has n open tabs.
func waitTabs(t *testing.T, a *webchat.Adapter, n int) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for webchat.OpenTabs(a) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d open tabs; want %d", webchat.OpenTabs(a), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReplyKeyboardState checks the chat's reply keyboard: a message
// carries the keyboard it puts up, the history frame of a tab that joins
// later has the keyboard up (a message without one leaves it), a removal
// clears it, a send that fails for want of a tab changes nothing, and a
// keyboard too large to keep is refused for good.
func TestReplyKeyboardState(t *testing.T) {
	a, _ := start(t, webchat.Config{})
	c := connect(t, a, hello{ChatID: "k1"})
	if c.hist.Keyboard != nil {
		t.Fatalf("a new chat's history has keyboard %+v", c.hist.Keyboard)
	}
	up := &platform.ReplyKeyboard{Rows: [][]string{{"Tea", "Coffee"}, {"Water"}}, OneTime: true, Placeholder: "your drink"}
	sendTo(t, a, "k1", platform.OutboundMessage{Text: "pick", Keyboard: up})
	sameKeyboard := func(what string, k *keyboard) {
		t.Helper()
		if k == nil || !slices.EqualFunc(k.Rows, up.Rows, slices.Equal) || !k.OneTime || k.Remove || k.Placeholder != up.Placeholder {
			t.Errorf("%s: keyboard %+v; want %+v", what, k, up)
		}
	}
	sameKeyboard("the message", c.readMessages(t, 1)[0].Keyboard)
	sendTo(t, a, "k1", platform.TextMessage("later"))
	if k := c.readMessages(t, 1)[0].Keyboard; k != nil {
		t.Errorf("a message without a keyboard carries %+v", k)
	}
	sameKeyboard("a later tab's history", connect(t, a, hello{ChatID: "k1"}).hist.Keyboard)

	sendTo(t, a, "k1", platform.OutboundMessage{Text: "thanks", Keyboard: &platform.ReplyKeyboard{Remove: true}})
	if k := c.readMessages(t, 1)[0].Keyboard; k == nil || !k.Remove || len(k.Rows) > 0 {
		t.Errorf("the removal carries keyboard %+v; want a removal", k)
	}
	if k := connect(t, a, hello{ChatID: "k1"}).hist.Keyboard; k != nil {
		t.Errorf("history after the removal has keyboard %+v", k)
	}

	big := &platform.ReplyKeyboard{}
	for range 200 {
		big.Rows = append(big.Rows, []string{strings.Repeat("x", 100)})
	}
	if _, err := trySend(a, "k1", platform.OutboundMessage{Text: "big", Keyboard: big}); !errors.Is(err, platform.ErrInvalidMessage) || !platform.IsPermanent(err) {
		t.Errorf("a 20 KB keyboard = %v; want a permanent ErrInvalidMessage", err)
	}

	if _, err := trySend(a, "k2", platform.OutboundMessage{Text: "pick", Keyboard: up}); !errors.Is(err, webchat.ErrNoConnection) {
		t.Fatalf("a keyboard to a chat with no tab = %v; want ErrNoConnection", err)
	}
	if k := connect(t, a, hello{ChatID: "k2"}).hist.Keyboard; k != nil {
		t.Errorf("a failed send put up keyboard %+v", k)
	}
	// Nothing reached k1's tab for the refused keyboard: the next frame is
	// the next message.
	sendTo(t, a, "k1", platform.TextMessage("last"))
	if m := c.readMessages(t, 1)[0]; m.Text != "last" {
		t.Errorf("next message %q; want %q", m.Text, "last")
	}
}

// TestAttachmentTypes checks the media type the page gets for files sent
// as bytes: the attachment's MIMEType without its parameters, or, if it
// has none or an invalid one, what the bytes look like, named as browsers
// play it.
func TestAttachmentTypes(t *testing.T) {
	a, _ := start(t, webchat.Config{})
	c := connect(t, a, hello{ChatID: "m1"})
	ogg := append([]byte("OggS\x00"), make([]byte, 40)...)
	tests := []struct {
		at   platform.Attachment
		want string
	}{
		{platform.Attachment{Kind: platform.AttachVoice, Data: ogg, MIMEType: "audio/ogg; codecs=opus"}, "audio/ogg"},
		{platform.Attachment{Kind: platform.AttachVoice, Data: ogg}, "audio/ogg"},
		{platform.Attachment{Kind: platform.AttachVideo, Data: ogg}, "video/ogg"},
		{platform.Attachment{Kind: platform.AttachDocument, Data: ogg}, "application/ogg"},
		{platform.Attachment{Kind: platform.AttachAudio, Data: []byte("RIFF\x00\x00\x00\x00WAVEfmt "), MIMEType: "not a type"}, "audio/wav"},
		{platform.Attachment{Kind: platform.AttachPhoto, Data: dotPNG(), MIMEType: `image/png;name="a,b"`}, "image/png"},
		{platform.Attachment{Kind: platform.AttachDocument, Data: []byte("hi"), MIMEType: "text/plain,x/y"}, "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		sendTo(t, a, "m1", platform.OutboundMessage{Attachments: []platform.Attachment{tt.at}})
		m := c.readMessages(t, 1)[0]
		if len(m.Attachments) != 1 || m.Attachments[0].MIME != tt.want || m.Attachments[0].Kind != string(tt.at.Kind) {
			t.Errorf("%s of type %q: the page got %+v; want type %q", tt.at.Kind, tt.at.MIMEType, m.Attachments, tt.want)
		}
	}
}
