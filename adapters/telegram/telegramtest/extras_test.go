package telegramtest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
)

func ok(t *testing.T, srv *telegramtest.Server, method string, params url.Values) json.RawMessage {
	t.Helper()
	code, ar := call(t, srv, token, method, params)
	if code != http.StatusOK || !ar.Ok {
		t.Fatalf("%s %v = %d %s", method, params, code, ar.Description)
	}
	return ar.Result
}

func bad(t *testing.T, srv *telegramtest.Server, method string, params url.Values, want int) {
	t.Helper()
	if code, ar := call(t, srv, token, method, params); code != want || ar.Ok {
		t.Fatalf("%s %v = %d %s; want %d", method, params, code, ar.Description, want)
	}
}

// Topics, business connections and the send options are recorded, and
// every call is.
func TestSendOptionsRecorded(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	ok(t, srv, "sendMessage", url.Values{"chat_id": {"-1001"}, "text": {"in a topic"}, "message_thread_id": {"17"},
		"reply_parameters": {`{"message_id":3,"quote":"q","allow_sending_without_reply":true}`}, "disable_notification": {"true"},
		"protect_content": {"true"}, "message_effect_id": {"e1"}, "allow_paid_broadcast": {"true"},
		"entities": {`[{"type":"bold","offset":0,"length":2}]`}, "link_preview_options": {`{"is_disabled":true}`}})
	m := srv.Sent(-1001)[0]
	if m.ThreadID != 17 || m.ReplyToMessageID != 3 || m.Quote != "q" || !m.AllowSendingWithoutReply || !m.Silent || !m.Protected ||
		m.EffectID != "e1" || !m.PaidBroadcast || len(m.Entities) != 1 || m.LinkPreview == nil || !m.LinkPreview.IsDisabled {
		t.Fatalf("recorded %+v", m)
	}
	bad(t, srv, "sendMessage", url.Values{"chat_id": {"5"}, "text": {"x"}, "business_connection_id": {"nope"}}, http.StatusBadRequest)
	srv.AddBusinessConnection("biz", ann, true)
	ok(t, srv, "sendMessage", url.Values{"chat_id": {"7"}, "text": {"x"}, "business_connection_id": {"biz"}})
	if m := srv.Sent(7)[0]; m.BusinessConnectionID != "biz" {
		t.Fatalf("recorded %+v", m)
	}
	// A business message is edited through its connection only.
	bad(t, srv, "editMessageText", url.Values{"chat_id": {"7"}, "message_id": {"1"}, "text": {"y"}}, http.StatusBadRequest)
	ok(t, srv, "editMessageText", url.Values{"chat_id": {"7"}, "message_id": {"1"}, "text": {"y"}, "business_connection_id": {"biz"}})
	ok(t, srv, "deleteBusinessMessages", url.Values{"business_connection_id": {"biz"}, "message_ids": {"[1]"}})
	if d := srv.Deletions(7); len(d) != 1 || d[0].BusinessConnectionID != "biz" {
		t.Fatalf("deletions %+v", d)
	}
	if n := len(srv.Calls("")); n != 6 || len(srv.Calls("editMessageText")) != 2 {
		t.Fatalf("%d calls recorded", n)
	}
	// Unknown methods answer 404 unless given a result.
	bad(t, srv, "pinChatMessage", url.Values{"chat_id": {"7"}}, http.StatusNotFound)
	srv.SetResult("pinChatMessage", true)
	ok(t, srv, "pinChatMessage", url.Values{"chat_id": {"7"}})
}

// Drafts in private chats, reactions to messages there, invoices,
// pre-checkout answers, refunds, join requests and command menus.
func TestExtraMethods(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	ok(t, srv, "sendMessageDraft", url.Values{"chat_id": {"7"}, "draft_id": {"5"}, "text": {"Thinking"}})
	bad(t, srv, "sendMessageDraft", url.Values{"chat_id": {"-100"}, "draft_id": {"5"}, "text": {"x"}}, http.StatusBadRequest)
	bad(t, srv, "sendMessageDraft", url.Values{"chat_id": {"7"}, "draft_id": {"0"}, "text": {"x"}}, http.StatusBadRequest)
	if d := srv.Drafts(7); len(d) != 1 || d[0].DraftID != 5 || d[0].Text != "Thinking" {
		t.Fatalf("drafts %+v", d)
	}

	srv.SendUserMessage(7, ann, "hi")
	ok(t, srv, "setMessageReaction", url.Values{"chat_id": {"7"}, "message_id": {"1"}, "reaction": {`[{"type":"emoji","emoji":"👍"}]`}})
	bad(t, srv, "setMessageReaction", url.Values{"chat_id": {"7"}, "message_id": {"9"}, "reaction": {`[]`}}, http.StatusBadRequest)
	bad(t, srv, "setMessageReaction", url.Values{"chat_id": {"7"}, "message_id": {"1"}, "reaction": {`[{"type":"paid"}]`}}, http.StatusBadRequest)
	if r := srv.Reactions(7); len(r) != 1 || r[0].Emoji[0] != "👍" {
		t.Fatalf("reactions %+v", r)
	}

	ok(t, srv, "sendInvoice", url.Values{"chat_id": {"7"}, "title": {"T"}, "description": {"D"}, "payload": {"p"}, "currency": {"XTR"},
		"prices": {`[{"label":"x","amount":5}]`}})
	bad(t, srv, "sendInvoice", url.Values{"chat_id": {"7"}, "title": {"T"}, "description": {"D"}, "payload": {"p"}, "currency": {"XTR"},
		"prices": {`[{"label":"x","amount":5},{"label":"y","amount":1}]`}}, http.StatusBadRequest)
	if m := srv.Sent(7); len(m) != 1 || m[0].Kind != "invoice" || m[0].Invoice.Prices[0].Amount != 5 {
		t.Fatalf("invoice %+v", m)
	}

	q := srv.PushPreCheckout(ann, "XTR", 5, "p")
	bad(t, srv, "answerPreCheckoutQuery", url.Values{"pre_checkout_query_id": {q}, "ok": {"false"}}, http.StatusBadRequest)
	ok(t, srv, "answerPreCheckoutQuery", url.Values{"pre_checkout_query_id": {q}, "ok": {"true"}})
	bad(t, srv, "answerPreCheckoutQuery", url.Values{"pre_checkout_query_id": {q}, "ok": {"true"}}, http.StatusBadRequest)
	charge := srv.PushSuccessfulPayment(7, ann, "XTR", 5, "p")
	bad(t, srv, "refundStarPayment", url.Values{"user_id": {"8"}, "telegram_payment_charge_id": {charge}}, http.StatusBadRequest)
	ok(t, srv, "refundStarPayment", url.Values{"user_id": {"7"}, "telegram_payment_charge_id": {charge}})
	bad(t, srv, "refundStarPayment", url.Values{"user_id": {"7"}, "telegram_payment_charge_id": {charge}}, http.StatusBadRequest)
	if len(srv.CheckoutAnswers()) != 1 || len(srv.Refunds()) != 1 {
		t.Fatalf("answers %+v, refunds %+v", srv.CheckoutAnswers(), srv.Refunds())
	}

	srv.PushJoinRequest(-100, ann, "bio")
	ok(t, srv, "declineChatJoinRequest", url.Values{"chat_id": {"-100"}, "user_id": {"7"}})
	bad(t, srv, "approveChatJoinRequest", url.Values{"chat_id": {"-100"}, "user_id": {"7"}}, http.StatusBadRequest)
	if j := srv.JoinAnswers(); len(j) != 1 || j[0].Approved {
		t.Fatalf("join answers %+v", j)
	}

	ok(t, srv, "setMyCommands", url.Values{"commands": {`[{"command":"ping","description":"pong"}]`}, "scope": {`{"type":"all_private_chats"}`}})
	bad(t, srv, "setMyCommands", url.Values{"commands": {`[{"command":"Ping","description":"pong"}]`}}, http.StatusBadRequest)
	bad(t, srv, "setMyCommands", url.Values{"commands": {`[{"command":"ping","description":""}]`}}, http.StatusBadRequest)
	if m := srv.CommandMenus(); len(m) != 1 || m[0].Commands[0].Command != "ping" || m[0].Scope == "" {
		t.Fatalf("menus %+v", m)
	}
}

// Every update kind can be pushed, with the shapes of the Bot API.
func TestPushHelpers(t *testing.T) {
	srv := telegramtest.NewServer()
	defer srv.Close()
	ids := []int{
		srv.SendTopicMessage(-1001234567890, 17, ann, "/start"),
		srv.SendBusinessMessage("biz", ann, "hello"),
		srv.PushBusinessConnection("biz", ann, true, true),
		srv.PushReaction(7, 1, ann, nil, []string{"👍"}),
		srv.PushMyChatMember(7, ann, "member", "kicked"),
		srv.PushChatMember(-100, ann, ann, "left", "member"),
		srv.PushJoinRequest(-100, ann, "bio"),
		srv.PushJSON("chat_boost", map[string]any{"chat": map[string]any{"id": -100, "type": "channel"}, "boost": map[string]any{"boost_id": "b"}}),
	}
	srv.PushPreCheckout(ann, "XTR", 1, "p")
	srv.PushSuccessfulPayment(7, ann, "XTR", 1, "p")
	_, ar := call(t, srv, token, "getUpdates", url.Values{})
	var got []map[string]json.RawMessage
	if err := json.Unmarshal(ar.Result, &got); err != nil || len(got) != 10 {
		t.Fatalf("%d updates (%v)", len(got), err)
	}
	kinds := []string{"message", "business_message", "business_connection", "message_reaction", "my_chat_member", "chat_member",
		"chat_join_request", "chat_boost", "pre_checkout_query", "message"}
	for i, u := range got {
		if _, ok := u[kinds[i]]; !ok {
			t.Errorf("update %d has no %s: %v", i, kinds[i], u)
		}
		if i < len(ids) && string(u["update_id"]) != jsonNumber(ids[i]) {
			t.Errorf("update %d has ID %s; want %d", i, u["update_id"], ids[i])
		}
	}
	var topic struct {
		ThreadID int  `json:"message_thread_id"`
		IsTopic  bool `json:"is_topic_message"`
		Reply    struct {
			MessageID int `json:"message_id"`
		} `json:"reply_to_message"`
	}
	if json.Unmarshal(got[0]["message"], &topic) != nil || topic.ThreadID != 17 || !topic.IsTopic || topic.Reply.MessageID != 17 {
		t.Fatalf("topic message %s", got[0]["message"])
	}
	if b := srv.UpdateJSON("poll", map[string]any{"id": "p"}); !json.Valid(b) {
		t.Fatalf("UpdateJSON %s", b)
	}
}

func jsonNumber(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// With Telegram's limits on, a chat gets 3 messages at once and then one a
// second, a group 20 in any minute too; the rest is answered 429 with the
// wait.
func TestLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := telegramtest.NewServer(telegramtest.InMemory(), telegramtest.WithLimits(telegramtest.TelegramLimits()))
		defer srv.Close()
		send := func(chat string) (int, int) {
			resp, err := srv.Client().PostForm(srv.URL()+"/bot"+token+"/sendMessage", url.Values{"chat_id": {chat}, "text": {"x"}})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var ar struct {
				Parameters struct {
					RetryAfter int `json:"retry_after"`
				} `json:"parameters"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&ar)
			return resp.StatusCode, ar.Parameters.RetryAfter
		}
		for range 3 {
			if code, _ := send("7"); code != http.StatusOK {
				t.Fatalf("burst send = %d", code)
			}
		}
		if code, after := send("7"); code != http.StatusTooManyRequests || after != 1 {
			t.Fatalf("fourth send = %d, retry after %d; want 429 after 1 s", code, after)
		}
		time.Sleep(time.Second)
		if code, _ := send("7"); code != http.StatusOK {
			t.Fatalf("after a second = %d", code)
		}
		// A group: its chat's bucket, and 20 in any minute.
		for range 3 {
			send("-100")
		}
		if code, after := send("-100"); code != http.StatusTooManyRequests || after != 1 {
			t.Fatalf("group's fourth send = %d, retry after %d; want 429 after 1 s", code, after)
		}
		for i := range 17 {
			time.Sleep(time.Second)
			if code, _ := send("-100"); code != http.StatusOK {
				t.Fatalf("group's send %d, a second after the one before = %d", 4+i, code)
			}
		}
		time.Sleep(time.Second)
		if code, after := send("-100"); code != http.StatusTooManyRequests || after != 42 {
			t.Fatalf("group's 21st send within a minute = %d, retry after %d; want 429 until the first three left the minute (42 s)", code, after)
		}
		time.Sleep(42 * time.Second)
		if code, _ := send("-100"); code != http.StatusOK {
			t.Fatalf("group's send once the first three left the minute = %d", code)
		}
		if srv.Throttled() != 3 {
			t.Fatalf("Throttled = %d; want 3", srv.Throttled())
		}
	})
}
