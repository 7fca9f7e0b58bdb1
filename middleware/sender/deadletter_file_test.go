package sender_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Save and Load carry dead letters across a restart: requests, attempts,
// times, error texts, permanence and the kinds callers branch on
// (platform.ErrBlocked, platform.ErrMaybeDelivered), in order, within the
// capacity.
func TestDeadLetterSaveLoad(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rich := platform.OutboundMessage{
		Text: "<b>hi</b>", ParseMode: platform.ParseHTML, ReplyToID: "7",
		Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte{0, 1, 2}, FileName: "a.bin"}},
		Buttons:     [][]platform.Button{{{Text: "ok", Data: "ok"}}},
	}
	src := sender.NewDeadLetterStore(10)
	src.Add(sender.DeadLetter{Request: platform.SendRequest{Platform: "telegram", Target: platform.Chat{ID: "1", Type: platform.ChatGroup}, Message: rich},
		Attempts: 5, Err: errors.New("sender: giving up after 5 attempts"), At: at})
	src.Add(sender.DeadLetter{Request: platform.SendRequest{Platform: "webchat", Target: platform.Chat{ID: "2"}, Message: platform.TextMessage("x")},
		Attempts: 1, Err: platform.Permanent(fmt.Errorf("403: %w", platform.ErrBlocked)), At: at.Add(time.Second)})
	src.Add(sender.DeadLetter{Request: platform.SendRequest{Platform: "telegram", Target: platform.Chat{ID: "3"}, Message: platform.TextMessage("y")},
		Attempts: 1, Err: platform.Permanent(platform.MaybeDelivered(errors.New("reset"))), At: at.Add(2 * time.Second)})
	var buf bytes.Buffer
	if err := src.Save(&buf); err != nil {
		t.Fatal(err)
	}
	if src.Len() != 3 {
		t.Fatal("Save took the letters out of the store")
	}

	dst := sender.NewDeadLetterStore(10)
	n, err := dst.Load(&buf)
	if err != nil || n != 3 {
		t.Fatalf("Load = %d, %v", n, err)
	}
	want, got := src.List(), dst.List()
	for i := range want {
		if !reflect.DeepEqual(got[i].Request, want[i].Request) || got[i].Attempts != want[i].Attempts || !got[i].At.Equal(want[i].At) ||
			got[i].Err.Error() != want[i].Err.Error() || platform.IsPermanent(got[i].Err) != platform.IsPermanent(want[i].Err) ||
			errors.Is(got[i].Err, platform.ErrBlocked) != errors.Is(want[i].Err, platform.ErrBlocked) ||
			errors.Is(got[i].Err, platform.ErrMaybeDelivered) != errors.Is(want[i].Err, platform.ErrMaybeDelivered) {
			t.Fatalf("letter %d loaded as %+v; saved %+v", i, got[i], want[i])
		}
	}
	if !errors.Is(got[1].Err, platform.ErrBlocked) || !errors.Is(got[2].Err, platform.ErrMaybeDelivered) || errors.Is(got[0].Err, platform.ErrBlocked) {
		t.Fatalf("loaded errors %v, %v, %v: the kinds are lost", got[0].Err, got[1].Err, got[2].Err)
	}

	small := sender.NewDeadLetterStore(1)
	var again bytes.Buffer
	_ = src.Save(&again)
	if n, err := small.Load(&again); n != 3 || err != nil || small.Len() != 1 || small.List()[0].Request.Target.ID != "3" {
		t.Fatalf("Load into a store of 1 = %d, %v, %+v; want the newest kept", n, err, small.List())
	}
	for _, bad := range []string{"not json\n", `{"request":{"target":{}}}` + "\n"} {
		if _, err := sender.NewDeadLetterStore(1).Load(strings.NewReader(bad)); !errors.Is(err, sender.ErrBadDeadLetters) {
			t.Errorf("Load(%q) = %v; want ErrBadDeadLetters", bad, err)
		}
	}
}

// Load never panics on any input, and what it loaded saves and loads again
// unchanged.
func FuzzDeadLetterLoad(f *testing.F) {
	f.Add(`{"request":{"platform":"telegram","target":{"id":"1"},"message":{"text":"hi"}},"attempts":3,"error":"boom","permanent":true,"at":"2026-11-30T12:00:00Z"}` + "\n")
	f.Add("\n\n{}\n")
	f.Add(`{"request":{"target":{"id":"1"},"message":{"attachments":[{"kind":"photo","data":"AAE="}]}}}`)
	f.Fuzz(func(t *testing.T, in string) {
		s := sender.NewDeadLetterStore(100)
		if _, err := s.Load(strings.NewReader(in)); err != nil {
			return
		}
		var first, second bytes.Buffer
		if err := s.Save(&first); err != nil {
			t.Fatal(err)
		}
		again := sender.NewDeadLetterStore(100)
		if _, err := again.Load(bytes.NewReader(first.Bytes())); err != nil {
			t.Fatalf("Load of Save's output: %v", err)
		}
		if err := again.Save(&second); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("round trip changed:\n%s\n%s", first.Bytes(), second.Bytes())
		}
	})
}
