package onebot_test

import (
	"context"
	"errors"
	"testing"

	"github.com/heraldbot/herald/adapters/onebot"
	"github.com/heraldbot/herald/platform"
)

// OneBot v11 cannot change a sent message: an edit fails for good, before
// any connection is looked for, with an error that is both the adapter's
// and the platform's ErrUnsupported.
func TestEditUnsupported(t *testing.T) {
	a, err := onebot.New(onebot.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Sender().Send(context.Background(), platform.SendRequest{
		Platform: a.Name(),
		Target:   platform.Chat{ID: "1:private:42", Type: platform.ChatPrivate},
		Message:  platform.EditMessage("7", "new text"),
	})
	if !errors.Is(err, onebot.ErrUnsupported) || !errors.Is(err, platform.ErrUnsupported) || !platform.IsPermanent(err) {
		t.Fatalf("edit = %v; want a permanent ErrUnsupported", err)
	}
	if errors.Is(onebot.ErrNotConnected, platform.ErrUnsupported) {
		t.Fatal("every onebot error matches platform.ErrUnsupported")
	}
}
