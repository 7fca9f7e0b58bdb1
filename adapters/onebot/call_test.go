package onebot

import (
	"context"
	"errors"
	"testing"

	"github.com/heraldbot/herald/platform"
)

// A method call goes out as the OneBot action of that name with its
// parameters, and its data comes back as the result's Raw; a failed
// action is an ActionError. A streamed reply's last part is sent as a
// message, the parts before it refused.
func TestCallActionAndStream(t *testing.T) {
	h := startAdapter(t, Config{})
	p := h.connect(h.reverseServer(), 1)
	go func() {
		a := p.next()
		if a.Action != "get_group_info" || string(a.Params["group_id"]) != "5001" {
			p.respond(a, "failed", 1400, nil)
			return
		}
		p.respond(a, "ok", 0, map[string]any{"group_name": "fans", "member_count": 3})
		a = p.next()
		p.respond(a, "failed", 1404, nil)
	}()
	call, err := platform.CallMethod("get_group_info", map[string]any{"group_id": 5001})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.a.Sender().Send(context.Background(), platform.SendRequest{Target: GroupChat(1, 5001), Message: call})
	if err != nil || res.Raw != `{"group_name":"fans","member_count":3}` {
		t.Fatalf("call = %+v, %v", res, err)
	}
	_, err = h.a.Sender().Send(context.Background(), platform.SendRequest{Target: GroupChat(1, 5001), Message: call})
	var ae *ActionError
	if !errors.As(err, &ae) || ae.Action != "get_group_info" || !platform.IsPermanent(err) {
		t.Fatalf("failed call = %v; want a permanent ActionError", err)
	}

	part := platform.OutboundMessage{Text: "so far", Stream: &platform.StreamPart{ID: "s"}}
	if _, err := h.a.Sender().Send(context.Background(), sendReqMsg(PrivateChat(1, 2), part)); !errors.Is(err, platform.ErrUnsupported) || !platform.IsPermanent(err) {
		t.Fatalf("a stream's part = %v; want a permanent ErrUnsupported", err)
	}
	go func() {
		a := p.next()
		if a.Action == "send_private_msg" {
			p.respond(a, "ok", 0, map[string]any{"message_id": 9})
		}
	}()
	part.Text, part.Stream.Final = "the whole reply", true
	res, err = h.a.Sender().Send(context.Background(), sendReqMsg(PrivateChat(1, 2), part))
	if err != nil || res.MessageID != "9" {
		t.Fatalf("a stream's final part = %+v, %v", res, err)
	}
	for _, m := range []platform.OutboundMessage{platform.ReactMessage("9", "👍"),
		{Invoice: &platform.Invoice{Title: "T", Description: "D", Payload: "p", Prices: []platform.Price{{Label: "x", Amount: 1}}}}} {
		if _, err := h.a.Sender().Send(context.Background(), sendReqMsg(PrivateChat(1, 2), m)); !errors.Is(err, platform.ErrUnsupported) {
			t.Fatalf("Send(%+v) = %v; want ErrUnsupported", m, err)
		}
	}
}

func sendReqMsg(chat platform.Chat, m platform.OutboundMessage) platform.SendRequest {
	return platform.SendRequest{Target: chat, Message: m}
}
