package platform_test

import (
	"encoding/json"
	"errors"
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
		{"attachment kind", platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: "video", URL: "u"}}}, false},
		{"button data", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "a", Data: "1"}, {Text: "b", URL: "https://b"}}}}, true},
		{"button no text", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Data: "1"}}}}, false},
		{"button both", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "a", Data: "1", URL: "u"}}}}, false},
		{"button neither", platform.OutboundMessage{Text: "x", Buttons: [][]platform.Button{{{Text: "a"}}}}, false},
		{"edit", platform.EditMessage("7", "new text"), true},
		{"edit with buttons", platform.OutboundMessage{Text: "x", EditID: "7", Buttons: [][]platform.Button{{{Text: "a", Data: "1"}}}}, true},
		{"edit without text", platform.OutboundMessage{EditID: "7", Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "u"}}}, false},
		{"edit with attachment", platform.OutboundMessage{Text: "x", EditID: "7", Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "u"}}}, false},
		{"edit with reply", platform.OutboundMessage{Text: "x", EditID: "7", ReplyToID: "6"}, false},
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
	if back != ev {
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
