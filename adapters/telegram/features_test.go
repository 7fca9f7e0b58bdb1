package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// memHarness is an adapter on an in-memory fake server, for tests in fake
// time.
func memHarness(t *testing.T, mutate func(*Config), opts ...telegramtest.Option) (*telegramtest.Server, *Adapter) {
	t.Helper()
	srv := telegramtest.NewServer(append([]telegramtest.Option{telegramtest.InMemory()}, opts...)...)
	t.Cleanup(srv.Close)
	cfg := Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client()}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, a
}

// A reply to a message in a forum topic goes to the topic: the event's
// Chat carries it, and every request of the reply carries its
// message_thread_id, text, photo, album and chat action alike.
func TestReplyInTopic(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	const group, topic = -1001234567890, 17
	h.srv.SendTopicMessage(group, topic, ann, "/ping")
	r := h.run(t)
	ev := r.next(t, 1)[0]
	if ev.Chat.Thread != "17" || ev.ReplyToID != "" || ev.Text != "/ping" {
		t.Fatalf("topic message event %+v; want Thread 17 and no reply to the topic's root", ev)
	}
	ctx := waitCtx(t)
	photo := platform.Attachment{Kind: platform.AttachPhoto, URL: "https://example.com/p.jpg"}
	for _, m := range []platform.OutboundMessage{
		{Text: "pong", ReplyToID: ev.MessageID},
		{Text: "a photo", Attachments: []platform.Attachment{photo}},
		{Album: true, Attachments: []platform.Attachment{photo, photo}},
	} {
		if _, err := h.a.Send(ctx, platform.SendRequest{Target: ev.Chat, Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.a.SendChatAction(ctx, ev.Chat, platform.ActionTyping); err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(group)
	if len(sent) != 5 {
		t.Fatalf("%d messages; want 5", len(sent))
	}
	for i, m := range sent {
		if m.ThreadID != topic || m.Params.Get("message_thread_id") != "17" {
			t.Errorf("message %d (%s) went to thread %d; want the topic %d", i, m.Method, m.ThreadID, topic)
		}
	}
	if sent[0].ReplyToMessageID == 0 {
		t.Errorf("the reply replies to nothing")
	}
	if acts := h.srv.ChatActions(group); len(acts) != 1 || acts[0].ThreadID != topic {
		t.Errorf("chat actions %+v; want typing in the topic", acts)
	}
	// A thread that is not a topic ID is refused before any request.
	_, err := h.a.Send(ctx, platform.SendRequest{Target: platform.Chat{ID: "-5", Thread: "x"}, Message: platform.TextMessage("x")})
	if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
		t.Fatalf("send to thread x = %v; want a permanent ErrInvalidMessage", err)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A reply to a business message goes through its connection: sends,
// edits, deletions and chat actions carry business_connection_id.
func TestReplyThroughBusinessConnection(t *testing.T) {
	h := newHarness(t, nil)
	const conn = "biz-1"
	customer := tgbotapi.User{ID: 77, FirstName: "Cy"}
	h.srv.SendBusinessMessage(conn, customer, "open today?")
	r := h.run(t)
	ev := r.next(t, 1)[0]
	if ev.Chat.BusinessConnectionID != conn || ev.Chat.ID != "77" || ev.Kind != platform.EventMessage {
		t.Fatalf("business message event %+v", ev)
	}
	ctx := waitCtx(t)
	res, err := h.a.Send(ctx, platform.SendRequest{Target: ev.Chat, Message: platform.OutboundMessage{Text: "yes, 9 to 5", ReplyToID: ev.MessageID}})
	if err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(77)
	if len(sent) != 1 || sent[0].BusinessConnectionID != conn || sent[0].ReplyToMessageID == 0 {
		t.Fatalf("sent %+v; want the reply through %s", sent, conn)
	}
	if _, err := h.a.Send(ctx, platform.SendRequest{Target: ev.Chat, Message: platform.EditMessage(res.MessageID, "yes, 9 to 6")}); err != nil {
		t.Fatalf("edit through the connection: %v", err)
	}
	if e := h.srv.Edits(77); len(e) != 1 || e[0].BusinessConnectionID != conn {
		t.Fatalf("edits %+v; want one through the connection", e)
	}
	if err := h.a.SendChatAction(ctx, ev.Chat, platform.ActionTyping); err != nil {
		t.Fatal(err)
	}
	if acts := h.srv.ChatActions(77); len(acts) != 1 || acts[0].BusinessConnectionID != conn {
		t.Fatalf("actions %+v", acts)
	}
	if _, err := h.a.Send(ctx, platform.SendRequest{Target: ev.Chat, Message: platform.DeleteMessage(res.MessageID)}); err != nil {
		t.Fatal(err)
	}
	if d := h.srv.Deletions(77); len(d) != 1 || d[0].BusinessConnectionID != conn {
		t.Fatalf("deletions %+v", d)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// The send options arrive as Telegram's parameters, and no request of any
// kind carries a parameter that is "null".
func TestSendOptions(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	h.srv.SendUserMessage(-100, ann, "quote me")
	h.srv.SendUserMessage(-100, ann, "and me")
	m := platform.OutboundMessage{
		Text:        "bold words",
		Reply:       &platform.Reply{MessageID: "2", ChatID: "-100", Quote: "and", QuotePosition: 0},
		LinkPreview: &platform.LinkPreview{Disabled: true},
		Silent:      true, Protected: true, EffectID: "5104841245755180586", PaidBroadcast: true,
		Entities: []platform.Entity{{Type: "bold", Offset: 0, Length: 4}, {Type: "text_link", Offset: 5, Length: 5, URL: "https://e.x"}},
	}
	if _, err := h.a.Send(ctx, sendTo("5", m)); err != nil {
		t.Fatal(err)
	}
	got := h.srv.Sent(5)[0]
	switch {
	case got.ReplyToMessageID != 2 || got.ReplyChatID != "-100" || got.Quote != "and" || !got.AllowSendingWithoutReply:
		t.Errorf("reply %d in %q quoting %q (allow %v)", got.ReplyToMessageID, got.ReplyChatID, got.Quote, got.AllowSendingWithoutReply)
	case got.LinkPreview == nil || !got.LinkPreview.IsDisabled:
		t.Errorf("link preview %+v", got.LinkPreview)
	case !got.Silent || !got.Protected || !got.PaidBroadcast || got.EffectID != m.EffectID:
		t.Errorf("flags %+v", got)
	case len(got.Entities) != 2 || got.Entities[1].URL != "https://e.x" || got.Entities[0].Type != "bold":
		t.Errorf("entities %+v", got.Entities)
	}
	// A required reply, plain text, a photo with a caption, a document, an
	// album and an edit: none sends "null".
	photo := platform.Attachment{Kind: platform.AttachPhoto, URL: "https://example.com/p.jpg", Caption: "c"}
	for _, m := range []platform.OutboundMessage{
		platform.TextMessage("plain"),
		{Text: "r", Reply: &platform.Reply{MessageID: "1", Required: true}},
		{Attachments: []platform.Attachment{photo}},
		{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("doc"), FileName: "a.txt"}}},
		{Album: true, Attachments: []platform.Attachment{photo, photo}},
	} {
		if _, err := h.a.Send(ctx, sendTo("5", m)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.a.Send(ctx, sendTo("5", platform.EditMessage("1", "edited"))); err != nil {
		t.Fatal(err)
	}
	if s := h.srv.Sent(5); s[2].AllowSendingWithoutReply || s[2].ReplyToMessageID != 1 {
		t.Errorf("a required reply: %+v", s[2])
	}
	for _, c := range h.srv.Calls("") {
		for k, vs := range c.Params {
			for _, v := range vs {
				if v == "null" {
					t.Errorf("%s sent %s=null", c.Method, k)
				}
			}
		}
	}
	// Entities and a long text that must be split cannot go together.
	_, err := h.a.Send(ctx, sendTo("5", platform.OutboundMessage{Text: strings.Repeat("x", 5000), Entities: []platform.Entity{{Type: "bold", Length: 1}}}))
	if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrInvalidMessage) {
		t.Fatalf("entities over two parts = %v; want a permanent ErrInvalidMessage", err)
	}
}

// Reactions: set, removed, and refused for a message that is not there.
func TestReactions(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	h.srv.SendUserMessage(5, ann, "nice")
	res, err := h.a.Send(ctx, sendTo("5", platform.ReactMessage("1", "👍")))
	if err != nil || res.MessageID != "1" {
		t.Fatalf("react = %+v, %v", res, err)
	}
	big := platform.OutboundMessage{ReactID: "1", Reactions: []platform.Reaction{{CustomEmojiID: "538"}}, BigReaction: true}
	if _, err := h.a.Send(ctx, sendTo("5", big)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.a.Send(ctx, sendTo("5", platform.ReactMessage("1"))); err != nil {
		t.Fatal(err)
	}
	rs := h.srv.Reactions(5)
	if len(rs) != 3 || !slices.Equal(rs[0].Emoji, []string{"👍"}) || !slices.Equal(rs[1].CustomEmoji, []string{"538"}) || !rs[1].IsBig ||
		len(rs[2].Emoji)+len(rs[2].CustomEmoji) != 0 {
		t.Fatalf("reactions %+v", rs)
	}
	if _, err := h.a.Send(ctx, sendTo("5", platform.ReactMessage("99", "👍"))); !platform.IsPermanent(err) {
		t.Fatalf("reaction to a missing message = %v; want permanent", err)
	}
	// A reaction event reaches the handler.
	h.srv.PushReaction(5, 1, ann, nil, []string{"🔥"})
	r := h.run(t)
	ev := r.next(t, 2)[1]
	if ev.Kind != platform.EventReaction || ev.MessageID != "1" || !slices.Equal(ev.Reactions.New, []platform.Reaction{{Emoji: "🔥"}}) {
		t.Fatalf("reaction event %+v", ev)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// Payments in Stars: an invoice, the pre-checkout answered once, the
// payment as an event, a refund.
func TestStarsPayment(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	inv := &platform.Invoice{Title: "Coffee", Description: "A cup", Payload: "order-1", Prices: []platform.Price{{Label: "Cup", Amount: 50}}}
	res, err := h.a.Send(ctx, sendTo("7", platform.OutboundMessage{Invoice: inv, Silent: true}))
	if err != nil || res.MessageID == "" {
		t.Fatalf("invoice = %+v, %v", res, err)
	}
	sent := h.srv.Sent(7)
	if len(sent) != 1 || sent[0].Kind != "invoice" || sent[0].Invoice.Currency != "XTR" || sent[0].Invoice.Prices[0].Amount != 50 ||
		sent[0].Invoice.ProviderToken != "" || !sent[0].Silent {
		t.Fatalf("sent %+v", sent)
	}

	qid := h.srv.PushPreCheckout(ann, "XTR", 50, "order-1")
	charge := h.srv.PushSuccessfulPayment(7, ann, "XTR", 50, "order-1")
	h.srv.PushJoinRequest(-100, ann, "hi")
	r := h.run(t)
	evs := r.next(t, 3)
	pre, paid, join := evs[0], evs[1], evs[2]
	if pre.Kind != platform.EventPreCheckout || pre.QueryID != qid || pre.Payment.Amount != 50 || pre.Payment.Payload != "order-1" {
		t.Fatalf("pre-checkout %+v", pre)
	}
	if err := h.a.AnswerPreCheckout(ctx, pre, platform.PreCheckoutAnswer{OK: true}); err != nil {
		t.Fatal(err)
	}
	if err := h.a.AnswerPreCheckout(ctx, pre, platform.PreCheckoutAnswer{OK: true}); !errors.Is(err, platform.ErrAlreadyAnswered) || !platform.IsPermanent(err) {
		t.Fatalf("second answer = %v; want a permanent ErrAlreadyAnswered", err)
	}
	if a := h.srv.CheckoutAnswers(); len(a) != 1 || !a[0].OK || a[0].QueryID != qid {
		t.Fatalf("answers %+v", a)
	}
	if paid.Kind != platform.EventPayment || paid.Payment.ChargeID != charge {
		t.Fatalf("payment %+v", paid)
	}
	if err := h.a.RefundStarPayment(ctx, paid.From.ID, paid.Payment.ChargeID); err != nil {
		t.Fatal(err)
	}
	if err := h.a.RefundStarPayment(ctx, paid.From.ID, paid.Payment.ChargeID); !platform.IsPermanent(err) {
		t.Fatalf("second refund = %v; want permanent", err)
	}
	if rf := h.srv.Refunds(); len(rf) != 1 || rf[0].ChargeID != charge || rf[0].UserID != 7 {
		t.Fatalf("refunds %+v", rf)
	}
	if join.Kind != platform.EventJoinRequest {
		t.Fatalf("join %+v", join)
	}
	if err := h.a.AnswerJoinRequest(ctx, join, true); err != nil {
		t.Fatal(err)
	}
	if err := h.a.AnswerJoinRequest(ctx, join, false); !platform.IsPermanent(err) {
		t.Fatalf("second join answer = %v; want permanent", err)
	}
	if ja := h.srv.JoinAnswers(); len(ja) != 1 || !ja[0].Approved || ja[0].UserID != 7 || ja[0].ChatID != -100 {
		t.Fatalf("join answers %+v", ja)
	}
	if err := h.a.AnswerJoinRequest(ctx, pre, true); !errors.Is(err, platform.ErrInvalidMessage) {
		t.Fatalf("answering a pre-checkout as a join request = %v", err)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A pre-checkout query nothing answers is refused by the run before
// Telegram's 10 s are up, with the mechanism that answers button presses:
// one answer, and a late AnswerPreCheckout is refused.
func TestPreCheckoutAnsweredLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, a := memHarness(t, nil)
		qid := srv.PushPreCheckout(ann, "XTR", 5, "p")
		ctx, cancel := context.WithCancel(t.Context())
		evs := make(chan platform.Event, 1)
		done := make(chan error, 1)
		go func() {
			done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error { evs <- ev; return nil }})
		}()
		ev := <-evs
		start := time.Now()
		if err := srv.WaitUntil(t.Context(), func() bool { return len(srv.CheckoutAnswers()) == 1 }); err != nil {
			t.Fatal(err)
		}
		ans := srv.CheckoutAnswers()[0]
		if d := time.Since(start); d != autoCheckoutAfter || ans.OK || ans.QueryID != qid || ans.ErrorMessage == "" {
			t.Fatalf("answered %+v after %v; want refused with a reason after %v", ans, d, autoCheckoutAfter)
		}
		if err := a.AnswerPreCheckout(t.Context(), ev, platform.PreCheckoutAnswer{OK: true}); !errors.Is(err, platform.ErrAlreadyAnswered) {
			t.Fatalf("answer after the run's = %v; want ErrAlreadyAnswered", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// The commands menu: names normalised, odd ones left out, scopes sent;
// NoCommandMenu sends nothing.
func TestSetCommands(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	cmds := []platform.Command{{Name: "/Help", Description: "what I do"}, {Name: "note-add", Description: "x"}, {Name: "ping"}, {Name: "help"}}
	if err := h.a.SetCommands(ctx, cmds, platform.CommandScope{}); err != nil {
		t.Fatal(err)
	}
	if err := h.a.SetCommands(ctx, cmds[:1], platform.CommandScope{Kind: platform.ScopeChat, ChatID: "-100", Language: "de"}); err != nil {
		t.Fatal(err)
	}
	menus := h.srv.CommandMenus()
	if len(menus) != 2 {
		t.Fatalf("menus %+v", menus)
	}
	want := []tgbotapi.BotCommand{{Command: "help", Description: "what I do"}, {Command: "ping", Description: "/ping"}}
	if !slices.Equal(menus[0].Commands, want) || menus[0].Scope != "" {
		t.Errorf("menu %+v; want %+v", menus[0], want)
	}
	var scope map[string]any
	if json.Unmarshal([]byte(menus[1].Scope), &scope) != nil || scope["type"] != "chat" || scope["chat_id"] != float64(-100) || menus[1].Language != "de" {
		t.Errorf("scoped menu %+v", menus[1])
	}
	if err := h.a.SetCommands(ctx, cmds, platform.CommandScope{Kind: platform.ScopeChatMember, ChatID: "-100"}); !errors.Is(err, platform.ErrInvalidMessage) {
		t.Errorf("a chat_member scope without a user = %v", err)
	}

	off := newHarness(t, func(c *Config) { c.NoCommandMenu = true })
	if err := off.a.SetCommands(ctx, cmds, platform.CommandScope{}); err != nil || off.srv.Requests("setMyCommands") != 0 {
		t.Fatalf("NoCommandMenu: %v, %d requests", err, off.srv.Requests("setMyCommands"))
	}
}

// Any method by name: parameters as Telegram takes them, the target as
// chat_id, the raw result back; a query's answer counts once.
func TestCallMethod(t *testing.T) {
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	h.srv.SetResult("createForumTopic", map[string]any{"message_thread_id": 99, "name": "Support", "icon_color": 7322096})
	msg, err := platform.CallMethod("createForumTopic", map[string]any{"name": "Support", "icon_color": 7322096})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.a.Send(ctx, sendTo("-1001", msg))
	if err != nil {
		t.Fatal(err)
	}
	var topic struct {
		ID int `json:"message_thread_id"`
	}
	if json.Unmarshal([]byte(res.Raw), &topic) != nil || topic.ID != 99 {
		t.Fatalf("result %+v", res)
	}
	calls := h.srv.Calls("createForumTopic")
	if len(calls) != 1 || calls[0].Params.Get("chat_id") != "-1001" || calls[0].Params.Get("name") != "Support" || calls[0].Params.Get("icon_color") != "7322096" {
		t.Fatalf("calls %+v", calls)
	}
	// A send by name reports the message it made.
	send, _ := platform.CallMethod("sendMessage", map[string]any{"text": "by name", "chat_id": 5})
	res, err = h.a.Send(ctx, sendTo("", send))
	if err != nil || res.MessageID != "1" {
		t.Fatalf("sendMessage by name = %+v, %v", res, err)
	}
	// An unknown method is Telegram's 404: permanent.
	unknown, _ := platform.CallMethod("noSuchMethod", nil)
	if _, err := h.a.Send(ctx, sendTo("5", unknown)); !platform.IsPermanent(err) {
		t.Fatalf("unknown method = %v; want permanent", err)
	}
	// Answering a button press by name counts as its one answer.
	h.srv.PushCallback(5, ann, 1, "x")
	r := h.run(t)
	ev := r.next(t, 1)[0]
	answer, _ := platform.CallMethod("answerCallbackQuery", map[string]any{"callback_query_id": ev.QueryID, "text": "done"})
	if _, err := h.a.Send(ctx, sendTo("", answer)); err != nil {
		t.Fatal(err)
	}
	if err := h.a.AnswerCallback(ctx, ev, platform.CallbackAnswer{}); !errors.Is(err, platform.ErrAlreadyAnswered) {
		t.Fatalf("AnswerCallback after an answer by name = %v; want ErrAlreadyAnswered", err)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
