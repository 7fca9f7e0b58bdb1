package telegram

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	annJSON     = `{"id":7,"first_name":"Ann","last_name":"Lee","username":"ann"}`
	privateJSON = `{"id":7,"type":"private","first_name":"Ann","last_name":"Lee"}`
	groupJSON   = `{"id":-1001234567890,"type":"supergroup","title":"Herald fans"}`
)

// date is 2026-03-01 11:00:00 UTC.
const date = 1772362800

func TestUpdateToEvents(t *testing.T) {
	ann := platform.User{ID: "7", Name: "Ann Lee", Username: "ann"}
	private := platform.Chat{ID: "7", Type: platform.ChatPrivate, Title: "Ann Lee"}
	group := platform.Chat{ID: "-1001234567890", Type: platform.ChatGroup, Title: "Herald fans"}
	at := time.Unix(date, 0).UTC()

	tests := []struct {
		name string
		json string
		want []platform.Event // Platform and Raw are checked for all
	}{
		{
			name: "private text",
			json: `{"update_id":10,"message":{"message_id":3,"from":` + annJSON + `,"chat":` + privateJSON + `,"date":1772362800,"text":"hello"}}`,
			want: []platform.Event{{ID: "10", Kind: platform.EventMessage, Chat: private, From: ann, Text: "hello", MessageID: "3", Time: at}},
		},
		{
			name: "command to this bot, any case",
			json: `{"update_id":11,"message":{"message_id":4,"from":` + annJSON + `,"chat":` + groupJSON + `,"date":1772362800,"text":"/start@Herald_Bot now please","entities":[{"type":"bot_command","offset":0,"length":17}]}}`,
			want: []platform.Event{{ID: "11", Kind: platform.EventMessage, Chat: group, From: ann, Text: "/start now please", MessageID: "4", Time: at}},
		},
		{
			name: "command to this bot without arguments",
			json: `{"update_id":11,"message":{"message_id":4,"chat":` + groupJSON + `,"date":1772362800,"text":"/ping@herald_bot"}}`,
			want: []platform.Event{{ID: "11", Kind: platform.EventMessage, Chat: group, Text: "/ping", MessageID: "4", Time: at}},
		},
		{
			name: "command to another bot is dropped",
			json: `{"update_id":12,"message":{"message_id":5,"from":` + annJSON + `,"chat":` + groupJSON + `,"date":1772362800,"text":"/start@other_bot"}}`,
			want: nil,
		},
		{
			name: "command without a username is unchanged",
			json: `{"update_id":13,"message":{"message_id":6,"chat":` + privateJSON + `,"date":1772362800,"text":"/help me"}}`,
			want: []platform.Event{{ID: "13", Kind: platform.EventMessage, Chat: private, Text: "/help me", MessageID: "6", Time: at}},
		},
		{
			name: "not a command: e-mail-like and paths",
			json: `{"update_id":14,"message":{"message_id":7,"chat":` + privateJSON + `,"date":1772362800,"text":"/usr/bin@x.y is here"}}`,
			want: []platform.Event{{ID: "14", Kind: platform.EventMessage, Chat: private, Text: "/usr/bin@x.y is here", MessageID: "7", Time: at}},
		},
		{
			name: "reply and caption",
			json: `{"update_id":15,"message":{"message_id":8,"from":` + annJSON + `,"chat":{"id":-5,"type":"group","title":"g"},"date":1772362800,"caption":"look","photo":[{"file_id":"f","file_unique_id":"u","width":1,"height":1}],"reply_to_message":{"message_id":2,"chat":{"id":-5,"type":"group"},"date":1}}}`,
			want: []platform.Event{{ID: "15", Kind: platform.EventMessage, Chat: platform.Chat{ID: "-5", Type: platform.ChatGroup, Title: "g"}, From: ann, Text: "look", MessageID: "8", ReplyToID: "2", Time: at}},
		},
		{
			name: "edited message uses the edit date",
			json: `{"update_id":16,"edited_message":{"message_id":3,"from":` + annJSON + `,"chat":` + privateJSON + `,"date":1,"edit_date":1772362800,"text":"hello!"}}`,
			want: []platform.Event{{ID: "16", Kind: platform.EventEditedMessage, Chat: private, From: ann, Text: "hello!", MessageID: "3", Time: at}},
		},
		{
			name: "channel post is from the channel",
			json: `{"update_id":17,"channel_post":{"message_id":9,"sender_chat":{"id":-100777,"type":"channel","title":"News","username":"news"},"chat":{"id":-100777,"type":"channel","title":"News","username":"news"},"date":1772362800,"text":"breaking"}}`,
			want: []platform.Event{{ID: "17", Kind: platform.EventMessage, Chat: platform.Chat{ID: "-100777", Type: platform.ChatChannel, Title: "News"},
				From: platform.User{ID: "-100777", Name: "News", Username: "news"}, Text: "breaking", MessageID: "9", Time: at}},
		},
		{
			name: "edited channel post",
			json: `{"update_id":18,"edited_channel_post":{"message_id":9,"chat":{"id":-100777,"type":"channel","title":"News"},"date":1772362800,"text":"fixed"}}`,
			want: []platform.Event{{ID: "18", Kind: platform.EventEditedMessage, Chat: platform.Chat{ID: "-100777", Type: platform.ChatChannel, Title: "News"}, Text: "fixed", MessageID: "9", Time: at}},
		},
		{
			name: "callback with a message",
			json: `{"update_id":19,"callback_query":{"id":"cb1","from":` + annJSON + `,"message":{"message_id":21,"chat":` + groupJSON + `,"date":1},"chat_instance":"ci","data":"vote:yes"}}`,
			want: []platform.Event{{ID: "19", Kind: platform.EventCallback, Chat: group, From: ann, Text: "vote:yes", MessageID: "21", Time: testNow}},
		},
		{
			name: "callback from an inline message has no chat",
			json: `{"update_id":20,"callback_query":{"id":"cb2","from":` + annJSON + `,"inline_message_id":"im","chat_instance":"ci","data":"x"}}`,
			want: []platform.Event{{ID: "20", Kind: platform.EventCallback, From: ann, Text: "x", Time: testNow}},
		},
		{
			name: "callback whose message has no message_id",
			json: `{"update_id":27,"callback_query":{"id":"cb3","from":` + annJSON + `,"message":{"chat":` + groupJSON + `,"date":0},"chat_instance":"ci","data":"menu"}}`,
			want: []platform.Event{{ID: "27", Kind: platform.EventCallback, Chat: group, From: ann, Text: "menu", Time: testNow}},
		},
		{
			name: "reply to a message without message_id",
			json: `{"update_id":28,"message":{"message_id":5,"from":` + annJSON + `,"chat":` + groupJSON + `,"date":1772362800,"text":"re","reply_to_message":{"chat":` + groupJSON + `,"date":1}}}`,
			want: []platform.Event{{ID: "28", Kind: platform.EventMessage, Chat: group, From: ann, Text: "re", MessageID: "5", Time: at}},
		},
		{
			name: "two members join",
			json: `{"update_id":21,"message":{"message_id":30,"from":` + annJSON + `,"chat":` + groupJSON + `,"date":1772362800,"new_chat_members":[{"id":8,"first_name":"Bo"},{"id":9,"first_name":"Cy","is_bot":true,"username":"cy_bot"}]}}`,
			want: []platform.Event{
				{ID: "21", Kind: platform.EventMemberJoined, Chat: group, From: platform.User{ID: "8", Name: "Bo"}, MessageID: "30", Time: at},
				{ID: "21.1", Kind: platform.EventMemberJoined, Chat: group, From: platform.User{ID: "9", Name: "Cy", Username: "cy_bot", IsBot: true}, MessageID: "30", Time: at},
			},
		},
		{
			name: "member leaves",
			json: `{"update_id":22,"message":{"message_id":31,"from":` + annJSON + `,"chat":` + groupJSON + `,"date":1772362800,"left_chat_member":{"id":8,"first_name":"Bo"}}}`,
			want: []platform.Event{{ID: "22", Kind: platform.EventMemberLeft, Chat: group, From: platform.User{ID: "8", Name: "Bo"}, MessageID: "31", Time: at}},
		},
		{
			name: "inline query is other",
			json: `{"update_id":23,"inline_query":{"id":"q","from":` + annJSON + `,"query":"cats","offset":""}}`,
			want: []platform.Event{{ID: "23", Kind: platform.EventOther, From: ann, Text: "cats", Time: testNow}},
		},
		{
			name: "my_chat_member is other, with chat and date",
			json: `{"update_id":24,"my_chat_member":{"chat":` + groupJSON + `,"from":` + annJSON + `,"date":1772362800,"old_chat_member":{"user":{"id":1,"first_name":"b"},"status":"member"},"new_chat_member":{"user":{"id":1,"first_name":"b"},"status":"kicked"}}}`,
			want: []platform.Event{{ID: "24", Kind: platform.EventOther, Chat: group, From: ann, Time: at}},
		},
		{
			name: "missing date and chat",
			json: `{"update_id":25,"message":{"message_id":1,"text":"hi"}}`,
			want: []platform.Event{{ID: "25", Kind: platform.EventMessage, Text: "hi", MessageID: "1", Time: testNow}},
		},
		{
			name: "empty update",
			json: `{"update_id":26}`,
			want: []platform.Event{{ID: "26", Kind: platform.EventOther, Time: testNow}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u tgbotapi.Update
			if err := json.Unmarshal([]byte(tt.json), &u); err != nil {
				t.Fatalf("bad test JSON: %v", err)
			}
			got := updateToEvents(&u, "herald_bot", testNow)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events %+v; want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i].Platform != "telegram" || got[i].Raw != &u {
					t.Errorf("event %d: Platform %q, Raw %p; want telegram, %p", i, got[i].Platform, got[i].Raw, &u)
				}
				w := tt.want[i]
				w.Platform, w.Raw = "telegram", got[i].Raw
				if got[i] != w {
					t.Errorf("event %d =\n %+v\nwant\n %+v", i, got[i], w)
				}
			}
		})
	}
}

func TestNormalizeCommand(t *testing.T) {
	tests := []struct {
		text, bot, want string
		ok              bool
	}{
		{"/start", "b", "/start", true},
		{"/start@b", "b", "/start", true},
		{"/start@B args", "b", "/start args", true},
		{"/start@b\nline two", "b", "/start\nline two", true},
		{"/start@c args", "b", "", false},
		{"/start@c", "", "/start@c", true}, // bot unknown: leave it
		{"/st-art@c", "b", "/st-art@c", true},
		{"/start@", "b", "/start@", true},
		{"/@b", "b", "/@b", true},
		{"/", "b", "/", true},
		{"", "b", "", true},
		{"hi /start@c", "b", "hi /start@c", true},
		{"/старт@b", "b", "/старт@b", true},
	}
	for _, tt := range tests {
		got, ok := normalizeCommand(tt.text, tt.bot)
		if got != tt.want || ok != tt.ok {
			t.Errorf("normalizeCommand(%q, %q) = %q, %v; want %q, %v", tt.text, tt.bot, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzUpdateToEvent(f *testing.F) {
	for _, s := range []string{
		`{"update_id":1,"message":{"message_id":1,"chat":{"id":1,"type":"private"},"text":"/a@b c","entities":[{"type":"bot_command","offset":0,"length":400}]}}`,
		`{"update_id":2,"callback_query":{"id":"x","data":"d"}}`,
		`{"update_id":3,"callback_query":{"id":"x","message":{"message_id":1}}}`,
		`{"update_id":4,"message":{"new_chat_members":[{"id":1},{"id":2}],"left_chat_member":{"id":3}}}`,
		`{"update_id":5,"edited_channel_post":{"sender_chat":{"id":-1,"type":"channel"}}}`,
		`{"update_id":6,"my_chat_member":{},"chat_member":{},"chat_join_request":{}}`,
		`{"update_id":7,"poll_answer":{},"pre_checkout_query":{},"shipping_query":{},"chosen_inline_result":{}}`,
		`{"update_id":8,"message":{"text":"/\u00ff@","date":-5,"edit_date":99999999999}}`,
		`{}`, `null`, `[]`, `{"update_id":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var u tgbotapi.Update
		if json.Unmarshal(data, &u) != nil {
			return
		}
		for _, ev := range updateToEvents(&u, "herald_bot", testNow) {
			if ev.Platform != "telegram" || ev.Raw != &u || ev.Kind == "" {
				t.Fatalf("bad event %+v", ev)
			}
			if id := strconv.Itoa(u.UpdateID); ev.ID != id && !strings.HasPrefix(ev.ID, id+".") {
				t.Fatalf("event ID %q for update %d", ev.ID, u.UpdateID)
			}
			// Normalised text is a fixed point: no "@herald_bot" left on a
			// command, and never a command for another bot.
			if again, ok := normalizeCommand(ev.Text, "herald_bot"); ev.Kind != platform.EventCallback && ev.Kind != platform.EventOther && (!ok || again != ev.Text) {
				t.Fatalf("text %q normalises again to %q, %v", ev.Text, again, ok)
			}
		}
	})
}
