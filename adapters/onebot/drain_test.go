package onebot

import (
	"context"
	"testing"
)

// TestStopReceiving: after StopReceiving, events are dropped while the
// connection stays open and sends still go through; Run ends only with its
// context, and a later Run receives again.
func TestStopReceiving(t *testing.T) {
	h := startAdapter(t, Config{})
	p := h.connect(h.reverseServer(), 10001)
	p.sendJSON(privateMsg(10001, 42, 1, "before"))
	if ev := h.event(); ev.Text != "before" {
		t.Fatalf("event %q", ev.Text)
	}

	h.a.StopReceiving()
	h.a.StopReceiving() // idempotent
	p.sendJSON(privateMsg(10001, 42, 2, "after"))

	sent := make(chan error, 1)
	go func() {
		_, err := h.a.Sender().Send(context.Background(), sendReq(PrivateChat(10001, 42), "still sending"))
		sent <- err
	}()
	act := p.next()
	if act.Action != "send_private_msg" {
		t.Fatalf("action %q", act.Action)
	}
	p.respond(act, "ok", 0, map[string]any{"message_id": 7})
	if err := <-sent; err != nil {
		t.Fatalf("Send after StopReceiving: %v", err)
	}
	// The reader handled "after" before the send's response, on the same
	// goroutine: had it been delivered, it would be in the channel by now.
	select {
	case ev := <-h.events:
		t.Fatalf("event %q delivered after StopReceiving", ev.Text)
	default:
	}
	select {
	case err := <-h.runErr:
		t.Fatalf("Run returned %v after StopReceiving", err)
	default:
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}
