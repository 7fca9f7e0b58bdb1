package webchat_test

import (
	"context"
	"slices"
	"testing"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

// TestStopTaking: once Run's Inbound.Receiving closes, a tab's message is
// refused with "stopping" and not handled, while sends still reach the
// tab; Run ends only with its context.
func TestStopTaking(t *testing.T) {
	a, err := webchat.New(webchat.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	receiving := make(chan struct{})
	go func() {
		done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error { handled <- ev.Text; return nil }, Receiving: receiving})
	}()
	<-a.Ready()
	c := connect(t, a, hello{})
	c.say(t, "before")
	c.readMessages(t, 1) // the echo
	if got := <-handled; got != "before" {
		t.Fatalf("handled %q", got)
	}

	close(receiving)
	c.send(t, map[string]string{"type": "message", "text": "after", "ref": "a1"})
	if f := c.read(t); f.Type != "error" || f.Code != "stopping" || f.Ref != "a1" || f.Text == "" {
		t.Fatalf("got %+v; want error stopping for ref a1", f)
	}
	chat := platform.Chat{ID: c.hist.Chat.ID, Type: platform.ChatPrivate}
	if _, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: chat, Message: platform.TextMessage("still sending")}); err != nil {
		t.Fatalf("Send after the stop: %v", err)
	}
	if got := texts(c.readMessages(t, 1)); !slices.Equal(got, []string{"still sending"}) {
		t.Fatalf("tab got %q", got)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v after the stop", err)
	default:
	}
	c.ws.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(handled) != 0 {
		t.Fatalf("handled %q after the stop", <-handled)
	}
}
