package onebot

import (
	"errors"
	"testing"

	"github.com/heraldbot/herald/platform"
)

func TestChatID(t *testing.T) {
	if got := ChatID(10001, 42); got != "10001:42" {
		t.Fatalf("ChatID = %q", got)
	}
	if got := ChatID(0, 42); got != "42" {
		t.Fatalf("ChatID without self = %q", got)
	}
	if c := GroupChat(1, 2); c != (platform.Chat{ID: "1:2", Type: platform.ChatGroup}) {
		t.Fatalf("GroupChat = %+v", c)
	}
	if c := PrivateChat(1, 2); c != (platform.Chat{ID: "1:2", Type: platform.ChatPrivate}) {
		t.Fatalf("PrivateChat = %+v", c)
	}
	tests := []struct {
		in         string
		self, id   int64
		wantErrMsg bool
	}{
		{"10001:42", 10001, 42, false},
		{"42", 0, 42, false},
		{"", 0, 0, true},
		{"x", 0, 0, true},
		{"0", 0, 0, true},
		{"-5", 0, 0, true},
		{"1:", 0, 0, true},
		{":1", 0, 0, true},
		{"1:2:3", 0, 0, true},
		{"a:2", 0, 0, true},
		{"99999999999999999999", 0, 0, true},
	}
	for _, tt := range tests {
		self, id, err := ParseChatID(tt.in)
		if tt.wantErrMsg {
			if !errors.Is(err, ErrInvalidChat) {
				t.Errorf("ParseChatID(%q) = %d, %d, %v; want ErrInvalidChat", tt.in, self, id, err)
			}
			continue
		}
		if err != nil || self != tt.self || id != tt.id {
			t.Errorf("ParseChatID(%q) = %d, %d, %v", tt.in, self, id, err)
		}
	}
}
