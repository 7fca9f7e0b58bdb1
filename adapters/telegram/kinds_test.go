package telegram

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// botAPIUpdate is an update of one kind, as Bot API 10.2 documents its
// shape, and what its event must say.
type botAPIUpdate struct {
	kind  string // the update's field: message, my_chat_member, ...
	json  string // without the update_id, which the test adds
	check func(t *testing.T, ev platform.Event)
}

const (
	userJSON        = `{"id":7,"is_bot":false,"first_name":"Ann","last_name":"Lee","username":"ann","language_code":"pt-br","is_premium":true}`
	botUserJSON     = `{"id":1,"is_bot":true,"first_name":"Herald","username":"herald_bot"}`
	forumJSON       = `{"id":-1001234567890,"type":"supergroup","title":"Herald fans","is_forum":true}`
	privateChat     = `{"id":7,"type":"private","first_name":"Ann","last_name":"Lee","username":"ann"}`
	channelJSON     = `{"id":-1009876543210,"type":"channel","title":"News","username":"news"}`
	bizConnection   = "AbCdEf-business-1"
	linkJSON        = `{"invite_link":"https://t.me/+AbC","creator":` + botUserJSON + `,"creates_join_request":true,"is_primary":false,"is_revoked":false}`
	boostSourceJSON = `{"source":"premium","user":` + userJSON + `}`
)

// botAPIUpdates has one update of every kind of Bot API 10.2, with fields
// Telegram added after Bot API 5.5 (topics, business, reactions, effects,
// quotes, paid media, link preview options, stars payments).
var botAPIUpdates = []botAPIUpdate{
	{"message", `{"message_id":42,"message_thread_id":17,"is_topic_message":true,"from":` + userJSON + `,"chat":` + forumJSON + `,"date":1772362800,
		"reply_to_message":{"message_id":17,"chat":` + forumJSON + `,"date":1772360000,"forum_topic_created":{"name":"Support","icon_color":7322096}},
		"text":"hello topic","entities":[{"type":"bold","offset":0,"length":5}],"link_preview_options":{"is_disabled":true},"effect_id":"5104841245755180586",
		"quote":{"text":"x","position":0}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventMessage && ev.Text == "hello topic" && ev.MessageID == "42", "message: %+v", ev)
			want(t, ev.Chat.Thread == "17" && ev.Chat.Type == platform.ChatGroup && ev.Chat.ID == "-1001234567890", "topic chat %+v", ev.Chat)
			want(t, ev.ReplyToID == "", "the topic's root taken as ReplyToID %q", ev.ReplyToID)
			want(t, ev.From.LanguageCode == "pt-br" && ev.From.Name == "Ann Lee", "from %+v", ev.From)
		}},
	{"edited_message", `{"message_id":43,"message_thread_id":17,"is_topic_message":true,"from":` + userJSON + `,"chat":` + forumJSON + `,"date":1772362800,"edit_date":1772362900,
		"reply_to_message":{"message_id":40,"message_thread_id":17,"chat":` + forumJSON + `,"date":1772362000,"text":"earlier"},"text":"fixed"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventEditedMessage && ev.Text == "fixed" && ev.ReplyToID == "40" && ev.Chat.Thread == "17",
				"edited message in a topic replying to 40: %+v", ev)
			want(t, ev.Time.Equal(time.Unix(1772362900, 0)), "time %v", ev.Time)
		}},
	{"channel_post", `{"message_id":5,"sender_chat":` + channelJSON + `,"chat":` + channelJSON + `,"date":1772362800,"text":"breaking","author_signature":"Ed","paid_star_count":0}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventMessage && ev.Chat.Type == platform.ChatChannel && ev.From.ID == "-1009876543210" && ev.Text == "breaking", "channel post %+v", ev)
		}},
	{"edited_channel_post", `{"message_id":5,"sender_chat":` + channelJSON + `,"chat":` + channelJSON + `,"date":1772362800,"edit_date":1772362801,"text":"fixed"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventEditedMessage && ev.Chat.Type == platform.ChatChannel && ev.Text == "fixed", "edited channel post %+v", ev)
		}},
	{"business_connection", `{"id":"` + bizConnection + `","user":` + userJSON + `,"user_chat_id":7,"date":1772362800,"rights":{"can_reply":true,"can_read_messages":true},"is_enabled":true}`,
		func(t *testing.T, ev platform.Event) {
			b := ev.Business
			want(t, ev.Kind == platform.EventBusinessConnection && b.ID == bizConnection && b.Enabled && b.CanReply && b.UserChatID == "7" && b.User.ID == "7",
				"business connection %+v", ev)
			want(t, ev.Chat.ID == "7" && ev.Chat.BusinessConnectionID == bizConnection && ev.From.ID == "7", "chat %+v from %+v", ev.Chat, ev.From)
		}},
	{"business_message", `{"message_id":9,"business_connection_id":"` + bizConnection + `","from":` + userJSON + `,"chat":` + privateChat + `,"date":1772362800,"text":"is the shop open?"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventMessage && ev.Text == "is the shop open?" && ev.Chat.BusinessConnectionID == bizConnection && ev.Chat.ID == "7",
				"business message %+v", ev)
		}},
	{"edited_business_message", `{"message_id":9,"business_connection_id":"` + bizConnection + `","from":` + userJSON + `,"chat":` + privateChat + `,"date":1772362800,"edit_date":1772362805,"text":"is it open?"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventEditedMessage && ev.Chat.BusinessConnectionID == bizConnection, "edited business message %+v", ev)
		}},
	{"deleted_business_messages", `{"business_connection_id":"` + bizConnection + `","chat":` + privateChat + `,"message_ids":[9,10]}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventMessagesDeleted && slices.Equal(ev.MessageIDs, []string{"9", "10"}) && ev.Chat.BusinessConnectionID == bizConnection,
				"deleted business messages %+v", ev)
		}},
	{"guest_message", `{"message_id":3,"guest_query_id":"gq1","from":` + userJSON + `,"chat":` + forumJSON + `,"date":1772362800,"text":"@herald_bot what time is it?"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther && ev.QueryID == "gq1" && ev.Text == "@herald_bot what time is it?" && ev.From.ID == "7", "guest message %+v", ev)
		}},
	{"message_reaction", `{"chat":` + forumJSON + `,"message_id":42,"user":` + userJSON + `,"date":1772362800,
		"old_reaction":[{"type":"emoji","emoji":"👍"}],"new_reaction":[{"type":"emoji","emoji":"🔥"},{"type":"custom_emoji","custom_emoji_id":"5368324170671202286"}]}`,
		func(t *testing.T, ev platform.Event) {
			r := ev.Reactions
			want(t, ev.Kind == platform.EventReaction && ev.MessageID == "42" && ev.From.ID == "7", "reaction %+v", ev)
			want(t, slices.Equal(r.Old, []platform.Reaction{{Emoji: "👍"}}) &&
				slices.Equal(r.New, []platform.Reaction{{Emoji: "🔥"}, {CustomEmojiID: "5368324170671202286"}}), "reactions %+v", r)
		}},
	{"message_reaction_count", `{"chat":` + channelJSON + `,"message_id":5,"date":1772362800,"reactions":[{"type":{"type":"emoji","emoji":"❤"},"total_count":12},{"type":{"type":"paid"},"total_count":3}]}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventReactionCount && ev.MessageID == "5" && slices.Equal(ev.Reactions.Counts, []platform.ReactionCount{
				{Reaction: platform.Reaction{Emoji: "❤"}, Count: 12}, {Reaction: platform.Reaction{Paid: true}, Count: 3}}), "reaction count %+v", ev)
		}},
	{"inline_query", `{"id":"iq1","from":` + userJSON + `,"query":"cats","offset":"","chat_type":"sender"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventInlineQuery && ev.QueryID == "iq1" && ev.Text == "cats" && ev.Inline.ChatType == "sender", "inline query %+v", ev)
		}},
	{"chosen_inline_result", `{"result_id":"r1","from":` + userJSON + `,"query":"cats","inline_message_id":"im1"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventInlineResult && ev.Inline.ResultID == "r1" && ev.Inline.MessageID == "im1", "chosen result %+v", ev)
		}},
	{"callback_query", `{"id":"cq1","from":` + userJSON + `,"message":{"message_id":50,"message_thread_id":17,"is_topic_message":true,"from":` + botUserJSON + `,"chat":` + forumJSON + `,"date":1772362800,"text":"menu"},"chat_instance":"-77","data":"vote:yes"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventCallback && ev.Text == "vote:yes" && ev.QueryID == "cq1" && ev.MessageID == "50" && ev.Chat.Thread == "17",
				"callback in a topic %+v", ev)
		}},
	{"shipping_query", `{"id":"sq1","from":` + userJSON + `,"invoice_payload":"order-1","shipping_address":{"country_code":"PT","state":"","city":"Lisboa","street_line1":"R. A","street_line2":"","post_code":"1000"}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther && ev.QueryID == "sq1" && ev.Payment.Payload == "order-1" && ev.From.ID == "7", "shipping query %+v", ev)
		}},
	{"pre_checkout_query", `{"id":"pcq1","from":` + userJSON + `,"currency":"XTR","total_amount":50,"invoice_payload":"order-2"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventPreCheckout && ev.QueryID == "pcq1" && ev.Payment != nil && *ev.Payment == platform.Payment{Currency: "XTR", Amount: 50, Payload: "order-2"},
				"pre-checkout query %+v", ev)
		}},
	{"purchased_paid_media", `{"from":` + userJSON + `,"paid_media_payload":"album-3"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther && ev.Payment.Payload == "album-3" && ev.From.ID == "7", "purchased paid media %+v", ev)
		}},
	{"poll", `{"id":"p1","question":"Lunch?","options":[{"persistent_id":"a","text":"Yes","voter_count":2},{"persistent_id":"b","text":"No","voter_count":1}],"total_voter_count":3,
		"is_closed":false,"is_anonymous":true,"type":"regular","allows_multiple_answers":false,"allows_revoting":true,"members_only":false,"correct_option_ids":[]}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther, "poll %+v", ev)
		}},
	{"poll_answer", `{"poll_id":"p1","user":` + userJSON + `,"option_ids":[0],"option_persistent_ids":["a"]}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther && ev.From.ID == "7", "poll answer %+v", ev)
		}},
	{"my_chat_member", `{"chat":` + privateChat + `,"from":` + userJSON + `,"date":1772362800,"old_chat_member":{"status":"member","user":` + botUserJSON + `},"new_chat_member":{"status":"kicked","user":` + botUserJSON + `,"until_date":0}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventBotBlocked && ev.From.ID == "7" && ev.Chat.ID == "7" && ev.Member.User.ID == "1" &&
				ev.Member.Old == platform.MemberRegular && ev.Member.New == platform.MemberBanned, "bot blocked %+v", ev)
		}},
	{"chat_member", `{"chat":` + forumJSON + `,"from":` + userJSON + `,"date":1772362800,"old_chat_member":{"status":"left","user":{"id":8,"is_bot":false,"first_name":"Bo"}},
		"new_chat_member":{"status":"restricted","user":{"id":8,"is_bot":false,"first_name":"Bo"},"is_member":true,"can_send_messages":false,"until_date":0},"invite_link":` + linkJSON + `,"via_join_request":true}`,
		func(t *testing.T, ev platform.Event) {
			m := ev.Member
			want(t, ev.Kind == platform.EventMemberUpdated && m.User.ID == "8" && m.Old == platform.MemberLeft && m.New == platform.MemberRestricted &&
				m.NewIsMember && m.ViaJoinRequest && m.InviteLink == "https://t.me/+AbC", "chat member %+v", ev)
		}},
	{"chat_join_request", `{"chat":` + forumJSON + `,"from":` + userJSON + `,"user_chat_id":7,"date":1772362800,"bio":"I like bots","invite_link":` + linkJSON + `}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventJoinRequest && ev.From.ID == "7" && ev.Text == "I like bots" && ev.Member.UserChatID == "7" &&
				ev.Member.InviteLink == "https://t.me/+AbC" && ev.Chat.ID == "-1001234567890", "join request %+v", ev)
		}},
	{"chat_boost", `{"chat":` + channelJSON + `,"boost":{"boost_id":"b1","add_date":1772362800,"expiration_date":1775000000,"source":` + boostSourceJSON + `}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther && ev.Chat.ID == "-1009876543210" && ev.From.ID == "7", "chat boost %+v", ev)
		}},
	{"removed_chat_boost", `{"chat":` + channelJSON + `,"boost_id":"b1","remove_date":1772362900,"source":` + boostSourceJSON + `}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther && ev.Chat.ID == "-1009876543210" && ev.Time.Equal(time.Unix(1772362900, 0)), "removed boost %+v", ev)
		}},
	{"managed_bot", `{"user":` + userJSON + `,"bot":{"id":99,"is_bot":true,"first_name":"Helper","username":"helper_bot"}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther && ev.From.ID == "7", "managed bot %+v", ev)
		}},
	{"subscription", `{"user":` + userJSON + `,"invoice_payload":"monthly","state":"active"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther && ev.From.ID == "7" && ev.Payment.Payload == "monthly", "subscription %+v", ev)
		}},
	// Messages of the kinds that became typed events.
	{"message", `{"message_id":60,"from":` + userJSON + `,"chat":` + privateChat + `,"date":1772362800,"successful_payment":{"currency":"XTR","total_amount":50,
		"invoice_payload":"order-2","telegram_payment_charge_id":"stxAbC","provider_payment_charge_id":""}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventPayment && ev.Payment.ChargeID == "stxAbC" && ev.Payment.Amount == 50 && ev.Payment.Currency == "XTR" && ev.Chat.ID == "7",
				"successful payment %+v", ev)
		}},
	{"message", `{"message_id":61,"from":` + userJSON + `,"chat":` + privateChat + `,"date":1772362800,"refunded_payment":{"currency":"XTR","total_amount":50,
		"invoice_payload":"order-2","telegram_payment_charge_id":"stxAbC"}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventRefund && ev.Payment.ChargeID == "stxAbC", "refunded payment %+v", ev)
		}},
	{"my_chat_member", `{"chat":` + forumJSON + `,"from":` + userJSON + `,"date":1772362800,"old_chat_member":{"status":"left","user":` + botUserJSON + `},"new_chat_member":{"status":"administrator","user":` + botUserJSON + `,"can_be_edited":false,"is_anonymous":false,"can_manage_chat":true,"can_delete_messages":true,"can_manage_video_chats":false,"can_restrict_members":false,"can_promote_members":false,"can_change_info":false,"can_invite_users":true,"can_post_stories":false,"can_edit_stories":false,"can_delete_stories":false}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventBotAdded && ev.Member.New == platform.MemberAdmin, "bot added %+v", ev)
		}},
	{"my_chat_member", `{"chat":` + privateChat + `,"from":` + userJSON + `,"date":1772362800,"old_chat_member":{"status":"kicked","user":` + botUserJSON + `,"until_date":0},"new_chat_member":{"status":"member","user":` + botUserJSON + `}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventBotUnblocked, "bot unblocked %+v", ev)
		}},
	{"my_chat_member", `{"chat":` + forumJSON + `,"from":` + userJSON + `,"date":1772362800,"old_chat_member":{"status":"member","user":` + botUserJSON + `},"new_chat_member":{"status":"left","user":` + botUserJSON + `}}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventBotRemoved, "bot removed %+v", ev)
		}},
	// A kind newer than the adapter still arrives, with its Raw.
	{"future_kind", `{"some":"thing"}`,
		func(t *testing.T, ev platform.Event) {
			want(t, ev.Kind == platform.EventOther, "a future kind %+v", ev)
		}},
}

func want(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

// updateJSONOf returns fixture u as the update with ID id.
func updateJSONOf(u botAPIUpdate, id int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"update_id":` + strconv.Itoa(id) + `,"` + u.kind + `":`)
	if err := json.Compact(&b, []byte(u.json)); err != nil {
		panic(u.kind + ": " + err.Error())
	}
	b.WriteString("}")
	return b.Bytes()
}

// Every kind of Bot API 10.2 maps to its event, with Raw the update as
// sent and the fields a bot reads set.
func TestEveryUpdateKind(t *testing.T) {
	covered := map[string]bool{}
	for i, fx := range botAPIUpdates {
		covered[fx.kind] = true
		raw := updateJSONOf(fx, 100+i)
		u, err := decodeUpdate(raw)
		if err != nil {
			t.Fatalf("%s: %v", fx.kind, err)
		}
		evs := updateToEvents(DefaultName, u, "herald_bot", testNow)
		if len(evs) != 1 {
			t.Fatalf("%s: %d events", fx.kind, len(evs))
		}
		ev := evs[0]
		if got, _ := ev.Raw.(json.RawMessage); !bytes.Equal(got, raw) || ev.ID != strconv.Itoa(100+i) || ev.Platform != DefaultName {
			t.Errorf("%s: ID %q, Platform %q, Raw %s", fx.kind, ev.ID, ev.Platform, ev.Raw)
		}
		fx.check(t, ev)
		// The event, Raw included, survives the journal's JSON.
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("%s: marshal: %v", fx.kind, err)
		}
		var back platform.Event
		if err := json.Unmarshal(b, &back); err != nil || !bytes.Equal(back.RawJSON(), raw) || back.Kind != ev.Kind {
			t.Errorf("%s: round trip kind %q, Raw %s (%v)", fx.kind, back.Kind, back.RawJSON(), err)
		}
	}
	for _, kind := range UpdateTypes {
		if !covered[kind] {
			t.Errorf("no fixture of the update kind %q", kind)
		}
	}
}

// Every kind reaches the handler through polling, whole and in order.
func TestEveryUpdateKindDelivered(t *testing.T) {
	h := newHarness(t, nil)
	var raws [][]byte
	for i, fx := range botAPIUpdates {
		raw := updateJSONOf(fx, 1+i)
		raws = append(raws, raw)
		if id := h.srv.PushRawUpdate(raw); id != 1+i {
			t.Fatalf("pushed update %d as %d", 1+i, id)
		}
	}
	r := h.run(t)
	for i, ev := range r.next(t, len(botAPIUpdates)) {
		fx := botAPIUpdates[i]
		if !bytes.Equal(ev.RawJSON(), raws[i]) || ev.ID != strconv.Itoa(1+i) {
			t.Errorf("%s: event %s with Raw %s", fx.kind, ev.ID, ev.RawJSON())
		}
		fx.check(t, ev)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if st := h.a.Stats(); st.Malformed != 0 || st.Taken != uint64(len(botAPIUpdates)) {
		t.Fatalf("Stats = %+v; want every update taken", st)
	}
}

// Every kind reaches the handler through the webhook, with Raw the body.
func TestEveryUpdateKindWebhook(t *testing.T) {
	a, err := New(Config{Token: testToken, Mode: Webhook})
	if err != nil {
		t.Fatal(err)
	}
	var got []platform.Event
	activate(t, a, func(ev platform.Event) error {
		got = append(got, ev)
		return nil
	})
	for i, fx := range botAPIUpdates {
		body := updateJSONOf(fx, 500+i)
		w := httptest.NewRecorder()
		a.WebhookHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
		if w.Code != http.StatusOK {
			t.Fatalf("%s: status %d", fx.kind, w.Code)
		}
		if len(got) != i+1 {
			t.Fatalf("%s: %d events after %d updates", fx.kind, len(got), i+1)
		}
		ev := got[i]
		if !bytes.Equal(ev.RawJSON(), body) || ev.ID != strconv.Itoa(500+i) {
			t.Errorf("%s: event %s with Raw %s", fx.kind, ev.ID, ev.RawJSON())
		}
		fx.check(t, ev)
	}
}
