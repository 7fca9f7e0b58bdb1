package telegram

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

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
			want: []platform.Event{{ID: "15", Kind: platform.EventMessage, Chat: platform.Chat{ID: "-5", Type: platform.ChatGroup, Title: "g"}, From: ann, Text: "look", MessageID: "8", ReplyToID: "2", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: "f", Width: 1, Height: 1, Caption: "look", Sizes: []platform.PhotoSize{{FileID: "f", Width: 1, Height: 1}}}}}},
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
			want: []platform.Event{{ID: "19", Kind: platform.EventCallback, Chat: group, From: ann, Text: "vote:yes", MessageID: "21", Time: testNow, QueryID: "cb1"}},
		},
		{
			name: "callback from an inline message has no chat",
			json: `{"update_id":20,"callback_query":{"id":"cb2","from":` + annJSON + `,"inline_message_id":"im","chat_instance":"ci","data":"x"}}`,
			want: []platform.Event{{ID: "20", Kind: platform.EventCallback, From: ann, Text: "x", Time: testNow, QueryID: "cb2", Inline: platform.InlineQuery{MessageID: "im"}}},
		},
		{
			name: "callback whose message has no message_id",
			json: `{"update_id":27,"callback_query":{"id":"cb3","from":` + annJSON + `,"message":{"chat":` + groupJSON + `,"date":0},"chat_instance":"ci","data":"menu"}}`,
			want: []platform.Event{{ID: "27", Kind: platform.EventCallback, Chat: group, From: ann, Text: "menu", Time: testNow, QueryID: "cb3"}},
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
			name: "inline query",
			json: `{"update_id":23,"inline_query":{"id":"q","from":` + annJSON + `,"query":"cats","offset":"20","chat_type":"sender"}}`,
			want: []platform.Event{{ID: "23", Kind: platform.EventInlineQuery, From: ann, Text: "cats", Time: testNow, QueryID: "q",
				Inline: platform.InlineQuery{Offset: "20", ChatType: "sender"}}},
		},
		{
			name: "chosen inline result",
			json: `{"update_id":29,"chosen_inline_result":{"result_id":"r1","from":` + annJSON + `,"query":"cats","inline_message_id":"im2"}}`,
			want: []platform.Event{{ID: "29", Kind: platform.EventInlineResult, From: ann, Text: "cats", Time: testNow,
				Inline: platform.InlineQuery{ResultID: "r1", MessageID: "im2"}}},
		},
		{
			name: "photo in sizes, the largest first",
			json: `{"update_id":30,"message":{"message_id":40,"from":` + annJSON + `,"chat":` + privateJSON + `,"date":1772362800,"photo":[` +
				`{"file_id":"s","file_unique_id":"us","width":90,"height":60,"file_size":900},{"file_id":"l","file_unique_id":"ul","width":1280,"height":853,"file_size":99000},` +
				`{"file_id":"m","file_unique_id":"um","width":320,"height":213,"file_size":9000}]}}`,
			want: []platform.Event{{ID: "30", Kind: platform.EventMessage, Chat: private, From: ann, MessageID: "40", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: "l", Width: 1280, Height: 853, Size: 99000, Sizes: []platform.PhotoSize{
					{FileID: "s", Width: 90, Height: 60, Size: 900}, {FileID: "l", Width: 1280, Height: 853, Size: 99000}, {FileID: "m", Width: 320, Height: 213, Size: 9000}}}}}},
		},
		{
			name: "document",
			json: `{"update_id":31,"message":{"message_id":41,"chat":` + privateJSON + `,"date":1772362800,"caption":"the report","document":{"file_id":"d","file_unique_id":"ud","file_name":"r.pdf","mime_type":"application/pdf","file_size":12345}}}`,
			want: []platform.Event{{ID: "31", Kind: platform.EventMessage, Chat: private, Text: "the report", MessageID: "41", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachDocument, FileID: "d", FileName: "r.pdf", MIMEType: "application/pdf", Size: 12345, Caption: "the report"}}}},
		},
		{
			name: "an animation is not also a document",
			json: `{"update_id":32,"message":{"message_id":42,"chat":` + privateJSON + `,"date":1772362800,"animation":{"file_id":"a","file_unique_id":"ua","width":320,"height":240,"duration":3,"mime_type":"video/mp4","file_size":500},"document":{"file_id":"a","file_unique_id":"ua","mime_type":"video/mp4"}}}`,
			want: []platform.Event{{ID: "32", Kind: platform.EventMessage, Chat: private, MessageID: "42", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachAnimation, FileID: "a", MIMEType: "video/mp4", Size: 500, Width: 320, Height: 240, Duration: 3 * time.Second}}}},
		},
		{
			name: "voice with a duration",
			json: `{"update_id":33,"message":{"message_id":43,"chat":` + privateJSON + `,"date":1772362800,"voice":{"file_id":"v","file_unique_id":"uv","duration":7,"mime_type":"audio/ogg","file_size":4000}}}`,
			want: []platform.Event{{ID: "33", Kind: platform.EventMessage, Chat: private, MessageID: "43", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachVoice, FileID: "v", MIMEType: "audio/ogg", Size: 4000, Duration: 7 * time.Second}}}},
		},
		{
			name: "video with a negative size",
			json: `{"update_id":34,"message":{"message_id":44,"chat":` + privateJSON + `,"date":1772362800,"video":{"file_id":"vi","file_unique_id":"u","width":640,"height":360,"duration":12,"file_name":"c.mp4","mime_type":"video/mp4","file_size":-3}}}`,
			want: []platform.Event{{ID: "34", Kind: platform.EventMessage, Chat: private, MessageID: "44", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachVideo, FileID: "vi", FileName: "c.mp4", MIMEType: "video/mp4", Width: 640, Height: 360, Duration: 12 * time.Second}}}},
		},
		{
			name: "video note",
			json: `{"update_id":35,"message":{"message_id":45,"chat":` + privateJSON + `,"date":1772362800,"video_note":{"file_id":"n","file_unique_id":"u","length":240,"duration":5,"file_size":70}}}`,
			want: []platform.Event{{ID: "35", Kind: platform.EventMessage, Chat: private, MessageID: "45", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachVideoNote, FileID: "n", Width: 240, Height: 240, Duration: 5 * time.Second, Size: 70}}}},
		},
		{
			name: "audio",
			json: `{"update_id":36,"message":{"message_id":46,"chat":` + privateJSON + `,"date":1772362800,"audio":{"file_id":"au","file_unique_id":"u","duration":200,"title":"t","file_name":"s.mp3","mime_type":"audio/mpeg","file_size":3000000}}}`,
			want: []platform.Event{{ID: "36", Kind: platform.EventMessage, Chat: private, MessageID: "46", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachAudio, FileID: "au", FileName: "s.mp3", MIMEType: "audio/mpeg", Size: 3000000, Duration: 200 * time.Second}}}},
		},
		{
			name: "animated sticker",
			json: `{"update_id":37,"message":{"message_id":47,"chat":` + privateJSON + `,"date":1772362800,"sticker":{"file_id":"st","file_unique_id":"u","width":512,"height":512,"is_animated":true}}}`,
			want: []platform.Event{{ID: "37", Kind: platform.EventMessage, Chat: private, MessageID: "47", Time: at,
				Attachments: []platform.Attachment{{Kind: platform.AttachSticker, FileID: "st", Width: 512, Height: 512, MIMEType: "application/x-tgsticker"}}}},
		},
		{
			name: "my_chat_member: the bot removed from a group, with chat and date",
			json: `{"update_id":24,"my_chat_member":{"chat":` + groupJSON + `,"from":` + annJSON + `,"date":1772362800,"old_chat_member":{"user":{"id":1,"first_name":"b"},"status":"member"},"new_chat_member":{"user":{"id":1,"first_name":"b"},"status":"kicked"}}}`,
			want: []platform.Event{{ID: "24", Kind: platform.EventBotRemoved, Chat: group, From: ann, Time: at,
				Member: &platform.MemberUpdate{User: platform.User{ID: "1", Name: "b"}, Old: platform.MemberRegular, New: platform.MemberBanned}}},
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
			u, err := decodeUpdate([]byte(tt.json))
			if err != nil {
				t.Fatalf("bad test JSON: %v", err)
			}
			got := updateToEvents(DefaultName, u, "herald_bot", testNow)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events %+v; want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if raw, _ := got[i].Raw.(json.RawMessage); got[i].Platform != "telegram" || string(raw) != tt.json {
					t.Errorf("event %d: Platform %q, Raw %s; want telegram, the update's JSON", i, got[i].Platform, got[i].Raw)
				}
				w := tt.want[i]
				w.Platform, w.Raw = "telegram", got[i].Raw
				if !reflect.DeepEqual(got[i], w) {
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
		`{"update_id":9,"message":{"photo":[{"file_id":"a","width":-1,"height":99999999999,"file_size":-7},{}],"caption":"c"}}`,
		`{"update_id":10,"message":{"animation":{"file_id":"a","duration":-4},"document":{"file_id":"a"},"voice":{},"sticker":{"is_animated":true}}}`,
		`{"update_id":11,"inline_query":{"id":"q","query":"x","offset":"o"},"callback_query":{"id":"c"}}`,
		`{"update_id":12,"message":{"photo":[]}}`,
		`{"update_id":13,"my_chat_member":{"chat":{"id":1,"type":"private"},"new_chat_member":{"status":"kicked"}}}`,
		`{"update_id":14,"message_reaction":{"new_reaction":[{"type":"x"},{"type":"paid"}]},"message_reaction_count":{"reactions":[{}]}}`,
		`{"update_id":15,"successful_payment":{},"message":{"successful_payment":{"total_amount":-1,"subscription_expiration_date":999999999999999}}}`,
		`{"update_id":16,"deleted_business_messages":{"message_ids":[0,-1,2]}}`,
	} {
		f.Add([]byte(s))
	}
	for i, fx := range botAPIUpdates {
		f.Add(updateJSONOf(fx, i+1))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := decodeUpdate(data)
		if err != nil {
			return
		}
		for _, ev := range updateToEvents(DefaultName, u, "herald_bot", testNow) {
			if raw, _ := ev.Raw.(json.RawMessage); ev.Platform != "telegram" || string(raw) != string(data) || ev.Kind == "" {
				t.Fatalf("bad event %+v", ev)
			}
			if id := strconv.Itoa(u.UpdateID); ev.ID != id && !strings.HasPrefix(ev.ID, id+".") {
				t.Fatalf("event ID %q for update %d", ev.ID, u.UpdateID)
			}
			checkAttachments(t, ev.Attachments)
			if _, err := json.Marshal(ev); err != nil {
				t.Fatalf("event %+v does not marshal: %v", ev, err)
			}
			if ev.Payment != nil && ev.Payment.Amount < 0 {
				t.Fatalf("negative amount in %+v", ev)
			}
			if (ev.Kind == platform.EventInlineQuery || ev.Kind == platform.EventInlineResult) && ev.Chat.ID != "" {
				t.Fatalf("inline event with a chat: %+v", ev)
			}
			// Normalised text is a fixed point: no "@herald_bot" left on a
			// command, and never a command for another bot.
			if again, ok := normalizeCommand(ev.Text, "herald_bot"); ev.Kind != platform.EventCallback && ev.Kind != platform.EventOther &&
				ev.Kind != platform.EventInlineQuery && ev.Kind != platform.EventInlineResult && (!ok || again != ev.Text) {
				t.Fatalf("text %q normalises again to %q, %v", ev.Text, again, ok)
			}
		}
	})
}

// checkAttachments fails unless every attachment decoded from an update
// has a known kind, at most one, sizes and a duration that are not
// negative, and, for a photo, its FileID among its Sizes.
func checkAttachments(t *testing.T, atts []platform.Attachment) {
	t.Helper()
	if len(atts) > 1 {
		t.Fatalf("%d attachments from one message; want at most 1", len(atts))
	}
	for _, at := range atts {
		probe := platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: at.Kind, URL: "u"}}}
		if err := probe.Validate(); err != nil {
			t.Fatalf("attachment of an unknown kind %q", at.Kind)
		}
		if at.Size < 0 || at.Duration < 0 {
			t.Fatalf("attachment with size %d, duration %v", at.Size, at.Duration)
		}
		if at.Kind == platform.AttachPhoto {
			found := false
			for _, ps := range at.Sizes {
				found = found || ps.FileID == at.FileID
				if ps.Size < 0 {
					t.Fatalf("photo size with %d bytes", ps.Size)
				}
			}
			if !found {
				t.Fatalf("photo %q not among its sizes %+v", at.FileID, at.Sizes)
			}
		} else if len(at.Sizes) > 0 {
			t.Fatalf("a %s with photo sizes", at.Kind)
		}
	}
}

// FuzzAttachmentsOf decodes arbitrary messages into attachments: never a
// panic, and always attachments checkAttachments accepts.
func FuzzAttachmentsOf(f *testing.F) {
	for _, s := range []string{
		`{"photo":[{"file_id":"a","width":2,"height":2},{"file_id":"b","width":1,"height":9}]}`,
		`{"document":{"file_id":"d","file_name":"x","mime_type":"text/plain","file_size":3}}`,
		`{"video":{"file_id":"v","duration":-1,"file_size":-9}}`, `{"video_note":{"length":-3}}`,
		`{"audio":{}}`, `{"voice":{"duration":99999999999}}`, `{"sticker":{}}`, `{"animation":{}}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m message
		if json.Unmarshal(data, &m) != nil {
			return
		}
		checkAttachments(t, attachmentsOf(&m))
	})
}
