package adaptertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/adaptertest"
	"github.com/heraldbot/herald/platform"
)

func TestInbox(t *testing.T) {
	var b adaptertest.Inbox
	go func() {
		b.Add("c", platform.TextMessage("1"))
		b.Add("c", platform.TextMessage("2"), platform.TextMessage("3"))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := b.Wait(ctx, "c", 3)
	if err != nil || len(got) != 3 || got[0].Text != "1" || got[2].Text != "3" {
		t.Fatalf("Wait = %+v, %v", got, err)
	}
	short, stop := context.WithCancel(context.Background())
	stop()
	if got, err := b.Wait(short, "other", 1); !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Fatalf("Wait on an empty chat = %+v, %v", got, err)
	}
}

// Edits change what Shown returns in place; Wait keeps returning the
// messages as received.
func TestInboxEdits(t *testing.T) {
	var b adaptertest.Inbox
	b.AddID("c", "1", platform.OutboundMessage{Text: "menu", Buttons: [][]platform.Button{{{Text: "a", Data: "a"}}}})
	b.Add("c", platform.TextMessage("no ID"))
	if !b.Edit("c", "1", platform.EditMessage("1", "edited")) {
		t.Fatal("Edit of message 1 reported no such message")
	}
	for _, id := range []string{"2", ""} {
		if b.Edit("c", id, platform.EditMessage(id, "x")) {
			t.Fatalf("Edit of message %q found one", id)
		}
	}
	shown := b.Shown("c")
	if len(shown) != 2 || shown[0].Text != "edited" || shown[0].Buttons != nil || shown[1].Text != "no ID" {
		t.Fatalf("Shown = %+v", shown)
	}
	got, err := b.Wait(context.Background(), "c", 2)
	if err != nil || got[0].Text != "menu" || len(got) != 2 {
		t.Fatalf("Wait = %+v, %v; want the messages as received", got, err)
	}
}
