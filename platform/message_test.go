package platform_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		msg  platform.OutboundMessage
		ok   bool
	}{
		{"text", platform.TextMessage("hi"), true},
		{"empty", platform.OutboundMessage{}, false},
		{"html", platform.OutboundMessage{Text: "<b>x</b>", ParseMode: platform.ParseHTML}, true},
		{"bad parse mode", platform.OutboundMessage{Text: "x", ParseMode: "BBCode"}, false},
		{"photo by url", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "https://x/y.png"}}}, true},
		{"document bytes", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("x"), FileName: "x.txt"}}}, true},
		{"attachment both", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "u", Data: []byte("x")}}}, false},
		{"attachment neither", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto}}}, false},
		{"attachment kind", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: "hologram", URL: "u"}}}, false},
		{"button data", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "a", Data: "1"}, {Text: "b", URL: "https://b"}}}}, true},
		{"button no text", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Data: "1"}}}}, false},
		{"button both", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "a", Data: "1", URL: "u"}}}}, false},
		{"button neither", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "a"}}}}, false},
		{"edit", platform.EditMessage("7", "new text"), true},
		{"edit with buttons", platform.OutboundMessage{Text: "x", EditID: "7", Buttons: [][]platform.Button{{{Text: "a", Data: "1"}}}}, true},
		{"edit without text", platform.OutboundMessage{EditID: "7", Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "u"}}}, false},
		{"edit with attachment", platform.OutboundMessage{Text: "x", EditID: "7", Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "u"}}}, false},
		{"edit with reply", platform.OutboundMessage{Text: "x", EditID: "7", ReplyToID: "6"}, false},
		{"edit with keyboard", platform.OutboundMessage{Text: "x", EditID: "7", Keyboard: &platform.ReplyKeyboard{Remove: true}}, false},
		{"video by file ID", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachVideo, FileID: "f"}}}, true},
		{"every kind", platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachAudio, URL: "u"}, {Kind: platform.AttachVoice, Data: []byte("o")},
			{Kind: platform.AttachAnimation, FileID: "a"}, {Kind: platform.AttachSticker, FileID: "s"},
			{Kind: platform.AttachVideoNote, Data: []byte("v")},
		}}, true},
		{"file ID and URL", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachVideo, FileID: "f", URL: "u"}}}, false},
		{"file ID and data", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachVideo, FileID: "f", Data: []byte("x")}}}, false},
		{"received fields ignored", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: "f", Size: 9, Width: 1,
			Sizes: []platform.PhotoSize{{FileID: "g"}}, Duration: time.Second, MIMEType: "image/jpeg"}}}, true},
		{"album", platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "a"}, {Kind: platform.AttachPhoto, URL: "b"}}}, true},
		{"keyboard", platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{Rows: [][]string{{"a", "b"}, {"c"}}, OneTime: true}}, true},
		{"keyboard remove", platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{Remove: true}}, true},
		{"keyboard empty", platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{}}, false},
		{"keyboard empty rows", platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{Rows: [][]string{{}}}}, false},
		{"keyboard blank button", platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{Rows: [][]string{{"a", ""}}}}, false},
		{"keyboard remove with rows", platform.OutboundMessage{Text: "x", Keyboard: &platform.ReplyKeyboard{Remove: true, Rows: [][]string{{"a"}}}}, false},
		{"delete", platform.DeleteMessage("7"), true},
		{"delete with text", platform.OutboundMessage{DeleteID: "7", Text: "x"}, false},
		{"delete with edit", platform.OutboundMessage{DeleteID: "7", EditID: "7"}, false},
		{"delete with reply", platform.OutboundMessage{DeleteID: "7", ReplyToID: "6"}, false},
		{"delete with buttons", platform.OutboundMessage{DeleteID: "7", Buttons: [][]platform.Button{{{Text: "a", Data: "1"}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.msg.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate = %v; want nil", err)
			}
			if !tt.ok && !errors.Is(err, platform.ErrInvalidMessage) {
				t.Fatalf("Validate = %v; want ErrInvalidMessage", err)
			}
		})
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	ev := platform.Event{
		ID: "1", Platform: "telegram", Kind: platform.EventMessage,
		Chat: platform.Chat{ID: "-100", Type: platform.ChatGroup, Title: "g"},
		From: platform.User{ID: "7", Name: "Ann", Username: "ann"},
		Text: "/ping", MessageID: "5", ReplyToID: "4",
		Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
		Raw:  struct{ secret string }{"not serialised"},
		Attachments: []platform.Attachment{
			{Kind: platform.AttachPhoto, FileID: "p3", Size: 900, Width: 800, Height: 600, Caption: "cap",
				Sizes: []platform.PhotoSize{{FileID: "p1", Width: 90, Height: 60, Size: 100}, {FileID: "p3", Width: 800, Height: 600, Size: 900}}},
			{Kind: platform.AttachVoice, FileID: "v", MIMEType: "audio/ogg", Size: 4096, Duration: 3 * time.Second},
		},
		QueryID: "q1",
		Inline:  platform.InlineQuery{Offset: "10", ChatType: "sender", ResultID: "r", MessageID: "im"},
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var back platform.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	ev.Raw = nil
	if !reflect.DeepEqual(back, ev) {
		t.Fatalf("round trip = %+v; want %+v", back, ev)
	}
	if !ev.Chat.IsGroup() || (platform.Chat{Type: platform.ChatPrivate}).IsGroup() {
		t.Fatal("IsGroup wrong")
	}
}

// One meaning of "group" everywhere: a ChatGroup, not a channel.
func TestChatIsGroup(t *testing.T) {
	for typ, want := range map[platform.ChatType]bool{
		platform.ChatGroup: true, platform.ChatChannel: false, platform.ChatPrivate: false, "": false,
	} {
		if got := (platform.Chat{ID: "1", Type: typ}).IsGroup(); got != want {
			t.Errorf("Chat{Type: %q}.IsGroup() = %v; want %v", typ, got, want)
		}
	}
}

func TestCost(t *testing.T) {
	photo := platform.Attachment{Kind: platform.AttachPhoto, URL: "u"}
	for _, tt := range []struct {
		msg  platform.OutboundMessage
		want int
	}{
		{platform.TextMessage("x"), 1},
		{platform.DeleteMessage("1"), 1},
		{platform.OutboundMessage{Attachments: []platform.Attachment{photo, photo, photo}}, 1},
		{platform.OutboundMessage{Album: true, Attachments: []platform.Attachment{photo}}, 1},
		{platform.OutboundMessage{Album: true, Text: "x", Attachments: []platform.Attachment{photo, photo, photo}}, 3},
	} {
		if got := tt.msg.Cost(); got != tt.want {
			t.Errorf("Cost of %+v = %d; want %d", tt.msg, got, tt.want)
		}
	}
}
