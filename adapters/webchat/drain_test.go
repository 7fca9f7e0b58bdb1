package webchat_test

import (
	"context"
	"slices"
	"testing"

	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/platform"
)

var _ platform.Drainer = (*webchat.Adapter)(nil)

// TestStopReceiving: after StopReceiving, a tab's message is refused with
// "stopping" and not handled, while sends still reach the tab; Run ends
// only with its context.
func TestStopReceiving(t *testing.T) {
	a, err := webchat.New(webchat.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(ev platform.Event) { handled <- ev.Text }) }()
	<-a.Ready()
	c := connect(t, a, hello{})
	c.say(t, "before")
	c.readMessages(t, 1) // the echo
	if got := <-handled; got != "before" {
		t.Fatalf("handled %q", got)
	}

	a.StopReceiving()
	a.StopReceiving() // idempotent
	c.send(t, map[string]string{"type": "message", "text": "after", "ref": "a1"})
	if f := c.read(t); f.Type != "error" || f.Code != "stopping" || f.Ref != "a1" || f.Text == "" {
		t.Fatalf("got %+v; want error stopping for ref a1", f)
	}
	chat := platform.Chat{ID: c.hist.Chat.ID, Type: platform.ChatPrivate}
	if _, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: chat, Message: platform.TextMessage("still sending")}); err != nil {
		t.Fatalf("Send after StopReceiving: %v", err)
	}
	if got := texts(c.readMessages(t, 1)); !slices.Equal(got, []string{"still sending"}) {
		t.Fatalf("tab got %q", got)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v after StopReceiving", err)
	default:
	}
	c.ws.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(handled) != 0 {
		t.Fatalf("handled %q after StopReceiving", <-handled)
	}
}
