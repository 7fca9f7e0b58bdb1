package onebot

import (
	"context"
	"testing"

	"github.com/heraldbot/herald/platform"
)

// TestStopTaking: once Run's Inbound.Receiving closes, events are dropped
// while the connection stays open and sends still go through; Run ends
// only with its context.
func TestStopTaking(t *testing.T) {
	h := startAdapter(t, Config{})
	p := h.connect(h.reverseServer(), 10001)
	p.sendJSON(privateMsg(10001, 42, 1, "before"))
	if ev := h.event(); ev.Text != "before" {
		t.Fatalf("event %q", ev.Text)
	}

	h.stopTaking()
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
		t.Fatalf("Send after the stop: %v", err)
	}
	// The reader handled "after" before the send's response, on the same
	// goroutine: had it been delivered, it would be in the channel by now.
	select {
	case ev := <-h.events:
		t.Fatalf("event %q delivered after the stop", ev.Text)
	default:
	}
	select {
	case err := <-h.runErr:
		t.Fatalf("Run returned %v after the stop", err)
	default:
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

// roundTrip sends one message through p's connection and answers it: the
// reader handles p's frames in order, so when it returns, every event p
// sent before has been handled (delivered or dropped).
func roundTrip(t *testing.T, h *harness, p *peer, chat platform.Chat) {
	t.Helper()
	sent := make(chan error, 1)
	go func() {
		_, err := h.a.Sender().Send(context.Background(), sendReq(chat, "round trip"))
		sent <- err
	}()
	p.respond(p.next(), "ok", 0, map[string]any{"message_id": 1})
	if err := <-sent; err != nil {
		t.Fatalf("Send: %v", err)
	}
}

// TestStopTakingBeforeRun: a Run whose Receiving closed before it began
// takes no event; the next Run, with Receiving open, receives.
func TestStopTakingBeforeRun(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	close(closed)
	h := runAdapterTaking(t, a, closed)
	url := h.reverseServer()
	p := h.connect(url, 10001)
	p.sendJSON(privateMsg(10001, 42, 1, "dropped"))
	roundTrip(t, h, p, PrivateChat(10001, 42))
	select {
	case ev := <-h.events:
		t.Fatalf("event %q delivered although Receiving was closed before Run", ev.Text)
	default:
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	p.waitClosed()

	// The next Run receives again.
	h2 := runAdapter(t, a)
	p2 := h2.connect(url, 10001)
	p2.sendJSON(privateMsg(10001, 42, 2, "received"))
	if ev := h2.event(); ev.Text != "received" {
		t.Fatalf("event %q; want the next Run to receive", ev.Text)
	}
}
