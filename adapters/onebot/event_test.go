package onebot

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

func TestDecodeEventAndConvert(t *testing.T) {
	ts := time.Unix(1700000000, 0).UTC()
	tests := []struct {
		name    string
		in      string
		selfID  int64 // the connection's self ID
		want    platform.Event
		deliver bool
		check   func(t *testing.T, ev *Event)
	}{
		{
			name: "private message as CQ string with escapes",
			in: `{"time":1700000000,"self_id":10001,"post_type":"message","message_type":"private","sub_type":"friend",
				"message_id":77,"user_id":42,"message":"hi &amp; &#91;ok&#93;[CQ:face,id=14]","raw_message":"x",
				"sender":{"user_id":42,"nickname":"Ann","sex":"female","age":0}}`,
			selfID: 10001, deliver: true,
			want: platform.Event{ID: "10001:77", Platform: DefaultName, Kind: platform.EventMessage,
				Chat: platform.Chat{ID: "10001:42", Type: platform.ChatPrivate},
				From: platform.User{ID: "42", Name: "Ann"}, Text: "hi & [ok]", MessageID: "77", Time: ts},
			check: func(t *testing.T, ev *Event) {
				if len(ev.Message) != 2 || ev.Message[1].Type != "face" || ev.Message[1].Data["id"] != "14" {
					t.Errorf("segments = %#v", ev.Message)
				}
			},
		},
		{
			name: "group message as array with reply, card preferred",
			in: `{"time":1700000000,"self_id":10001,"post_type":"message","message_type":"group","sub_type":"normal",
				"message_id":-5,"group_id":999,"user_id":42,
				"message":[{"type":"reply","data":{"id":"-4"}},{"type":"at","data":{"qq":"10001"}},{"type":"text","data":{"text":" /ping "}},{"type":"text","data":{"text":"&amp;"}}],
				"sender":{"user_id":42,"nickname":"Ann","card":"Annie","role":"admin"}}`,
			selfID: 10001, deliver: true,
			want: platform.Event{ID: "10001:-5", Platform: DefaultName, Kind: platform.EventMessage,
				Chat: platform.Chat{ID: "10001:999", Type: platform.ChatGroup},
				From: platform.User{ID: "42", Name: "Annie"}, Text: " /ping &amp;", MessageID: "-5", ReplyToID: "-4", Time: ts},
			check: func(t *testing.T, ev *Event) {
				if ev.Sender.Role != "admin" || len(ev.Message.Mentions()) != 1 {
					t.Errorf("event = %+v", ev)
				}
			},
		},
		{
			name:   "ids as strings, self id from the event when the connection has none",
			in:     `{"time":"1700000000","self_id":"10002","post_type":"message","message_type":"group","message_id":"8","group_id":"7","user_id":"6","message":"x"}`,
			selfID: 0, deliver: true,
			want: platform.Event{ID: "10002:8", Platform: DefaultName, Kind: platform.EventMessage,
				Chat: platform.Chat{ID: "10002:7", Type: platform.ChatGroup},
				From: platform.User{ID: "6"}, Text: "x", MessageID: "8", Time: ts},
		},
		{
			name: "media as CQ codes (go-cqhttp)",
			in: `{"time":1700000000,"self_id":1,"post_type":"message","message_type":"group","message_id":3,"user_id":4,"group_id":5,` +
				`"message":"look[CQ:image,file=abc.image,subType=0,url=https://gchat.qpic.cn/x?a=1&amp;b=2][CQ:image,file=st.image,subType=1]` +
				`[CQ:record,file=v.amr,url=https://v/1.amr][CQ:video,file=https://v/2.mp4,size=2048]"}`,
			selfID: 1, deliver: true,
			want: platform.Event{ID: "1:3", Platform: DefaultName, Kind: platform.EventMessage,
				Chat: platform.Chat{ID: "1:5", Type: platform.ChatGroup}, From: platform.User{ID: "4"}, Text: "look", MessageID: "3", Time: ts,
				Attachments: []platform.Attachment{
					{Kind: platform.AttachPhoto, FileID: "abc.image", URL: "https://gchat.qpic.cn/x?a=1&b=2"},
					{Kind: platform.AttachSticker, FileID: "st.image"},
					{Kind: platform.AttachVoice, FileID: "v.amr", URL: "https://v/1.amr"},
					{Kind: platform.AttachVideo, FileID: "https://v/2.mp4", URL: "https://v/2.mp4", Size: 2048},
				}},
		},
		{
			name: "media as segments (NapCat)",
			in: `{"time":1700000000,"self_id":1,"post_type":"message","message_type":"private","message_id":3,"user_id":4,"message":[` +
				`{"type":"image","data":{"file":"A1.jpg","sub_type":1,"url":"https://m/A1","file_size":"123"}},` +
				`{"type":"file","data":{"file":"report.pdf","file_id":"/f-9","file_size":4096}},` +
				`{"type":"file","data":{"file":"f-10","name":"notes.txt","size":"-1"}},` +
				`{"type":"video","data":{"file":"base64://AAAA"}},` +
				`{"type":"text","data":{"text":"see"}}]}`,
			selfID: 1, deliver: true,
			want: platform.Event{ID: "1:3", Platform: DefaultName, Kind: platform.EventMessage,
				Chat: platform.Chat{ID: "1:4", Type: platform.ChatPrivate}, From: platform.User{ID: "4"}, Text: "see", MessageID: "3", Time: ts,
				Attachments: []platform.Attachment{
					{Kind: platform.AttachSticker, FileID: "A1.jpg", URL: "https://m/A1", Size: 123},
					{Kind: platform.AttachDocument, FileID: "/f-9", FileName: "report.pdf", Size: 4096},
					{Kind: platform.AttachDocument, FileID: "f-10", FileName: "notes.txt"},
					{Kind: platform.AttachVideo},
				}},
		},
		{
			name:   "group temporary session is a private chat",
			in:     `{"time":1700000000,"self_id":1,"post_type":"message","message_type":"private","sub_type":"group","message_id":3,"user_id":4,"group_id":5,"message":"t"}`,
			selfID: 1, deliver: true,
			want: platform.Event{ID: "1:3", Platform: DefaultName, Kind: platform.EventMessage,
				Chat: platform.Chat{ID: "1:4", Type: platform.ChatPrivate},
				From: platform.User{ID: "4"}, Text: "t", MessageID: "3", Time: ts},
		},
		{
			name:   "member joined",
			in:     `{"time":1700000000,"self_id":1,"post_type":"notice","notice_type":"group_increase","sub_type":"approve","group_id":5,"operator_id":9,"user_id":4}`,
			selfID: 1, deliver: true,
			want: platform.Event{ID: "1:notice:1", Platform: DefaultName, Kind: platform.EventMemberJoined,
				Chat: platform.Chat{ID: "1:5", Type: platform.ChatGroup}, From: platform.User{ID: "4"}, Time: ts},
			check: func(t *testing.T, ev *Event) {
				if ev.OperatorID != 9 || ev.SubType != "approve" {
					t.Errorf("event = %+v", ev)
				}
			},
		},
		{
			name:   "member left",
			in:     `{"time":1700000000,"self_id":1,"post_type":"notice","notice_type":"group_decrease","sub_type":"kick","group_id":5,"operator_id":9,"user_id":4}`,
			selfID: 1, deliver: true,
			want: platform.Event{ID: "1:notice:1", Platform: DefaultName, Kind: platform.EventMemberLeft,
				Chat: platform.Chat{ID: "1:5", Type: platform.ChatGroup}, From: platform.User{ID: "4"}, Time: ts},
		},
		{
			name:   "other notice",
			in:     `{"time":1700000000,"self_id":1,"post_type":"notice","notice_type":"group_recall","group_id":5,"user_id":4,"operator_id":4,"message_id":12}`,
			selfID: 1, deliver: true,
			want: platform.Event{ID: "1:notice:1", Platform: DefaultName, Kind: platform.EventOther,
				Chat: platform.Chat{ID: "1:5", Type: platform.ChatGroup}, From: platform.User{ID: "4"}, Time: ts},
		},
		{
			name:   "friend request",
			in:     `{"time":1700000000,"self_id":1,"post_type":"request","request_type":"friend","user_id":4,"comment":"add me","flag":"f1"}`,
			selfID: 1, deliver: true,
			want: platform.Event{ID: "1:request:1", Platform: DefaultName, Kind: platform.EventOther,
				Chat: platform.Chat{ID: "1:4", Type: platform.ChatPrivate}, From: platform.User{ID: "4"}, Text: "add me", Time: ts},
			check: func(t *testing.T, ev *Event) {
				if ev.Flag != "f1" || ev.RequestType != "friend" {
					t.Errorf("event = %+v", ev)
				}
			},
		},
		{
			name:   "own message is not a message",
			in:     `{"time":1700000000,"self_id":1,"post_type":"message_sent","message_type":"group","message_id":3,"user_id":1,"group_id":5,"message":"me"}`,
			selfID: 1, deliver: true,
			want: platform.Event{ID: "1:message_sent:1", Platform: DefaultName, Kind: platform.EventOther,
				Chat: platform.Chat{ID: "1:5", Type: platform.ChatGroup}, From: platform.User{ID: "1"}, Time: ts},
		},
		{
			name:   "heartbeat",
			in:     `{"time":1700000000,"self_id":1,"post_type":"meta_event","meta_event_type":"heartbeat","interval":5000,"status":{"online":true,"good":true}}`,
			selfID: 1, deliver: false,
			check: func(t *testing.T, ev *Event) {
				if ev.Interval != 5000 || !strings.Contains(string(ev.Status), "online") {
					t.Errorf("event = %+v", ev)
				}
			},
		},
		{
			name:    "lifecycle",
			in:      `{"time":1700000000,"self_id":1,"post_type":"meta_event","meta_event_type":"lifecycle","sub_type":"connect"}`,
			selfID:  0,
			deliver: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := DecodeEvent([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.JSON) != tt.in {
				t.Errorf("JSON not kept")
			}
			if tt.check != nil {
				tt.check(t, ev)
			}
			got, ok := toPlatform(DefaultName, ev, tt.selfID, "1")
			if ok != tt.deliver {
				t.Fatalf("delivered = %v; want %v", ok, tt.deliver)
			}
			if !ok {
				return
			}
			if got.Raw != ev {
				t.Errorf("Raw = %v; want the decoded event", got.Raw)
			}
			got.Raw = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("event\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeEventErrors(t *testing.T) {
	for _, in := range []string{
		``, `not json`, `[]`, `{}`, `{"post_type":""}`, `{"post_type":"message","user_id":"abc"}`,
		`{"post_type":"message","user_id":1.5}`, `{"post_type":"message","message":12}`, `{"post_type":{}}`,
		`{"post_type":"message","sender":[]}`,
		// A group's message or notice without its group_id: taken as the
		// sender's private chat, its answers would go there.
		`{"post_type":"message","message_type":"group","user_id":20077,"message_id":4242,"message":"/echo x"}`,
		`{"post_type":"message","message_type":"group","group_id":0,"user_id":1,"message_id":77}`,
		`{"post_type":"notice","notice_type":"group_increase","user_id":4}`,
	} {
		if _, err := DecodeEvent([]byte(in)); !errors.Is(err, ErrMalformedEvent) {
			t.Errorf("DecodeEvent(%q) = %v; want ErrMalformedEvent", in, err)
		}
	}
}

func TestEventTimeMissing(t *testing.T) {
	ev, err := DecodeEvent([]byte(`{"post_type":"message","message_type":"private","user_id":1,"message":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	got, _ := toPlatform(DefaultName, ev, 0, "1")
	if got.Time.Before(before) {
		t.Fatalf("Time = %v; want about now", got.Time)
	}
	if got.Chat.ID != "1" {
		t.Fatalf("Chat.ID = %q; want bare 1 with no self ID known", got.Chat.ID)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"time":1,"self_id":1,"post_type":"message","message_type":"private","message_id":1,"user_id":2,"message":"a[CQ:at,qq=1]"}`,
		`{"post_type":"message","message_type":"group","group_id":"3","user_id":2,"message":[{"type":"text","data":{"text":"x"}},{"type":"reply","data":{"id":5}}]}`,
		`{"post_type":"message","message":{"type":"face","data":null}}`,
		`{"post_type":"notice","notice_type":"group_increase","group_id":1,"user_id":2}`,
		`{"post_type":"request","request_type":"group","flag":7}`,
		`{"post_type":"meta_event","meta_event_type":"heartbeat","interval":"5000","status":null}`,
		`{"post_type":"message","sender":{"user_id":null,"nickname":5}}`,
		`{"post_type":1}`, `null`, `[]`, `{"post_type":"message","message":"[CQ:"}`, `{"time":99999999999999999999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeEvent(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("error %v does not wrap ErrMalformedEvent", err)
			}
			return
		}
		if ev.PostType == "" {
			t.Fatal("decoded an event without post_type")
		}
		got, ok := toPlatform(DefaultName, ev, ev.SelfID, "1")
		if ok == (ev.PostType == PostMetaEvent) {
			t.Fatalf("delivered = %v for post type %q", ok, ev.PostType)
		}
		if ok && (got.Platform != DefaultName || got.ID == "" || got.Raw != ev) {
			t.Fatalf("converted event = %+v", got)
		}
		if ok && got.Kind == platform.EventMessage && got.Text != ev.Message.Text() {
			t.Fatalf("Text = %q; want %q", got.Text, ev.Message.Text())
		}
		if ok && got.Kind == platform.EventMessage {
			checkAttachments(t, ev.Message, got.Attachments)
		} else if ok && got.Attachments != nil {
			t.Fatalf("a %s event with attachments %+v", got.Kind, got.Attachments)
		}
	})
}
