package telegram

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// streamReply streams text to chat in chunks pieces, one every gap,
// through a platform.Stream paced by the adapter's StreamInterval, and
// returns the final result.
func streamReply(t *testing.T, a *Adapter, chat platform.Chat, tmpl platform.OutboundMessage, chunks []string, gap time.Duration) platform.SendResult {
	t.Helper()
	s, err := platform.NewStream(t.Context(), platform.StreamConfig{
		ID: "reply-1", Message: tmpl, Interval: a.StreamInterval(chat),
		Send: func(ctx context.Context, msg platform.OutboundMessage) (platform.SendResult, error) {
			return a.Send(ctx, platform.SendRequest{Platform: a.Name(), Target: chat, Message: msg})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if _, err := s.WriteString(c); err != nil {
			t.Fatal(err)
		}
		time.Sleep(gap)
	}
	res, err := s.Close(t.Context())
	if err != nil {
		t.Fatalf("Close = %v", err)
	}
	return res
}

// chunksOf returns n chunks of size characters, numbered, and their whole.
func chunksOf(n, size int) ([]string, string) {
	var chunks []string
	for i := range n {
		c := fmt.Sprintf("%03d ", i)
		c += strings.Repeat(string(rune('a'+i%26)), size-len(c)-1) + " "
		chunks = append(chunks, c)
	}
	return chunks, strings.Join(chunks, "")
}

// A reply of 2,000 characters streamed in 100 chunks to a group ends as
// one message holding the whole text, shown growing by edits paced within
// Telegram's budget: the fake's limits (one message a second per chat, 20
// a minute per group) never answer 429.
func TestStreamGroupEdits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, a := memHarness(t, nil, telegramtest.WithLimits(telegramtest.TelegramLimits()))
		const group = -1001234567890
		chunks, whole := chunksOf(100, 20)
		if len(whole) != 2000 {
			t.Fatalf("whole text of %d characters", len(whole))
		}
		start := time.Now()
		res := streamReply(t, a, platform.Chat{ID: "-1001234567890", Type: platform.ChatGroup}, platform.OutboundMessage{}, chunks, 100*time.Millisecond)
		took := time.Since(start)
		sent := srv.Sent(group)
		if len(sent) != 1 || res.MessageID != "1" {
			t.Fatalf("%d messages, result %+v; want one message", len(sent), res)
		}
		if m, _ := srv.Message(group, 1); m.Text != whole {
			t.Fatalf("the message shows %d characters; want the whole %d", len(m.Text), len(whole))
		}
		edits := srv.Edits(group)
		if n := srv.Throttled(); n != 0 {
			t.Fatalf("%d requests over Telegram's budget", n)
		}
		// One edit per 3 s at most, the last the final text.
		if max := int(took/(3*time.Second)) + 1; len(edits) > max || len(edits) < 2 {
			t.Fatalf("%d edits in %v; want 2 to %d", len(edits), took, max)
		}
		for i := 1; i < len(edits); i++ {
			if d := edits[i].At.Sub(edits[i-1].At); d < 3*time.Second {
				t.Errorf("edits %d and %d %v apart; want 3 s", i-1, i, d)
			}
		}
		if len(srv.Drafts(group)) != 0 {
			t.Fatal("drafts in a group")
		}
	})
}

// In a private chat the reply grows as a message draft, and the final
// text is sent as one message.
func TestStreamPrivateDraft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, a := memHarness(t, nil, telegramtest.WithLimits(telegramtest.TelegramLimits()))
		chunks, whole := chunksOf(100, 20)
		res := streamReply(t, a, platform.Chat{ID: "7", Type: platform.ChatPrivate},
			platform.OutboundMessage{Buttons: [][]platform.Button{{{Text: "again", Data: "again"}}}, ReplyToID: "1"}, chunks, 50*time.Millisecond)
		sent := srv.Sent(7)
		if len(sent) != 1 || sent[0].Text != whole || res.MessageID != "1" || len(sent[0].Keyboard) != 1 {
			t.Fatalf("sent %d messages (%+v); want the whole text once, with its button", len(sent), res)
		}
		drafts := srv.Drafts(7)
		if len(drafts) < 3 || len(drafts) > 6 || srv.Throttled() != 0 || len(srv.Edits(7)) != 0 {
			t.Fatalf("%d drafts, %d throttled, %d edits", len(drafts), srv.Throttled(), len(srv.Edits(7)))
		}
		for i, d := range drafts {
			if d.DraftID != drafts[0].DraftID || d.DraftID == 0 || !strings.HasPrefix(whole, d.Text) {
				t.Errorf("draft %d: %+v", i, d)
			}
		}
	})
}

// When Telegram refuses drafts, the reply grows by edits instead; HTML
// shows only where its markup is closed.
func TestStreamDraftRefusedAndMarkup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, a := memHarness(t, nil)
		srv.Inject(telegramtest.Fault{Method: "sendMessageDraft", Status: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"})
		chunks := []string{"<b>Hel", "lo</b> wor", "ld <i>and ", "more</i>!"}
		res := streamReply(t, a, platform.Chat{ID: "7", Type: platform.ChatPrivate}, platform.OutboundMessage{ParseMode: platform.ParseHTML}, chunks, 1500*time.Millisecond)
		sent := srv.Sent(7)
		if len(sent) != 1 || res.MessageID != "1" {
			t.Fatalf("sent %+v; want one message", sent)
		}
		if m, _ := srv.Message(7, 1); m.Text != strings.Join(chunks, "") || m.ParseMode != "HTML" {
			t.Fatalf("final %+v", m)
		}
		shown := []string{sent[0].Text}
		for _, e := range srv.Edits(7) {
			shown = append(shown, e.Text)
		}
		for _, s := range shown {
			if strings.Count(s, "<b>") != strings.Count(s, "</b>") || strings.Count(s, "<i>") != strings.Count(s, "</i>") {
				t.Errorf("shown %q with markup open", s)
			}
		}
		if !a.noDrafts.Load() {
			t.Error("drafts not turned off after Telegram refused one")
		}
	})
}

// A streamed reply longer than one message ends as the first message,
// edited, and the rest of the text after it.
func TestStreamLongerThanAMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, a := memHarness(t, func(c *Config) { c.NoDrafts = true })
		chunks, whole := chunksOf(60, 100) // 6,000 characters
		streamReply(t, a, platform.Chat{ID: "7", Type: platform.ChatPrivate}, platform.OutboundMessage{}, chunks, 200*time.Millisecond)
		sent := srv.Sent(7)
		if len(sent) != 2 || len(srv.Drafts(7)) != 0 {
			t.Fatalf("%d messages, %d drafts; want 2 messages", len(sent), len(srv.Drafts(7)))
		}
		first, _ := srv.Message(7, 1)
		if got := first.Text + sent[1].Text; strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(whole, " ", "") {
			t.Fatalf("the two messages hold %d characters; want the whole %d", len(got), len(whole))
		}
		if utf16Len(first.Text) > maxTextUnits {
			t.Fatalf("first message of %d characters", utf16Len(first.Text))
		}
	})
}
