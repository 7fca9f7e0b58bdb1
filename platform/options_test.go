package platform_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

func TestValidateOperations(t *testing.T) {
	call, err := platform.CallMethod("pinChatMessage", map[string]any{"chat_id": 1, "message_id": 2})
	if err != nil {
		t.Fatal(err)
	}
	stars := &platform.Invoice{Title: "T", Description: "D", Payload: "p", Prices: []platform.Price{{Label: "x", Amount: 5}}}
	part := &platform.StreamPart{ID: "s"}
	tests := []struct {
		name string
		msg  platform.OutboundMessage
		ok   bool
	}{
		{"react", platform.ReactMessage("7", "👍"), true},
		{"react none", platform.ReactMessage("7"), true},
		{"react custom", platform.OutboundMessage{ReactID: "7", Reactions: []platform.Reaction{{CustomEmojiID: "5"}}, BigReaction: true}, true},
		{"react paid", platform.OutboundMessage{ReactID: "7", Reactions: []platform.Reaction{{Paid: true}}}, false},
		{"react both", platform.OutboundMessage{ReactID: "7", Reactions: []platform.Reaction{{Emoji: "x", CustomEmojiID: "5"}}}, false},
		{"react with text", platform.OutboundMessage{ReactID: "7", Text: "x"}, false},
		{"reactions without ReactID", platform.OutboundMessage{Text: "x", Reactions: []platform.Reaction{{Emoji: "x"}}}, false},
		{"react and delete", platform.OutboundMessage{ReactID: "7", DeleteID: "7"}, false},
		{"delete silent", platform.OutboundMessage{DeleteID: "7", Silent: true}, false},
		{"call", call, true},
		{"call no params", platform.OutboundMessage{Call: &platform.MethodCall{Method: "getMe"}}, true},
		{"call bad name", platform.OutboundMessage{Call: &platform.MethodCall{Method: "get me"}}, false},
		{"call array params", platform.OutboundMessage{Call: &platform.MethodCall{Method: "x", Params: json.RawMessage(`[1]`)}}, false},
		{"call bad JSON", platform.OutboundMessage{Call: &platform.MethodCall{Method: "x", Params: json.RawMessage(`{"a":`)}}, false},
		{"call with text", platform.OutboundMessage{Text: "x", Call: &platform.MethodCall{Method: "x"}}, false},
		{"invoice", platform.OutboundMessage{Invoice: stars, Silent: true}, true},
		{"invoice with pay button", platform.OutboundMessage{Invoice: stars, Buttons: [][]platform.Button{{{Text: "Pay", URL: "u"}}}}, true},
		{"invoice with text", platform.OutboundMessage{Invoice: stars, Text: "x"}, false},
		{"invoice two star prices", platform.OutboundMessage{Invoice: &platform.Invoice{Title: "T", Description: "D", Payload: "p",
			Prices: []platform.Price{{Label: "a", Amount: 1}, {Label: "b", Amount: 1}}}}, false},
		{"invoice in euros, two prices", platform.OutboundMessage{Invoice: &platform.Invoice{Title: "T", Description: "D", Payload: "p", Currency: "EUR",
			Prices: []platform.Price{{Label: "a", Amount: 1}, {Label: "b", Amount: 1}}}}, true},
		{"invoice zero amount", platform.OutboundMessage{Invoice: &platform.Invoice{Title: "T", Description: "D", Payload: "p", Prices: []platform.Price{{Label: "a"}}}}, false},
		{"invoice long title", platform.OutboundMessage{Invoice: &platform.Invoice{Title: strings.Repeat("t", 33), Description: "D", Payload: "p", Prices: []platform.Price{{Label: "a", Amount: 1}}}}, false},
		{"stream part", platform.OutboundMessage{Text: "x", Stream: part, Buttons: [][]platform.Button{{{Text: "a", Data: "b"}}}}, true},
		{"stream part no ID", platform.OutboundMessage{Text: "x", Stream: &platform.StreamPart{}}, false},
		{"stream part no text", platform.OutboundMessage{Stream: part}, false},
		{"stream part photo", platform.OutboundMessage{Text: "x", Stream: part, Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, URL: "u"}}}, false},
		{"stream and edit", platform.OutboundMessage{Text: "x", Stream: part, EditID: "1"}, false},
		{"options", platform.OutboundMessage{Text: "x", Reply: &platform.Reply{MessageID: "3", ChatID: "-5", Quote: "q"},
			LinkPreview: &platform.LinkPreview{Disabled: true}, Silent: true, Protected: true, EffectID: "e", PaidBroadcast: true}, true},
		{"reply and same ReplyToID", platform.OutboundMessage{Text: "x", ReplyToID: "3", Reply: &platform.Reply{MessageID: "3"}}, true},
		{"reply and other ReplyToID", platform.OutboundMessage{Text: "x", ReplyToID: "4", Reply: &platform.Reply{MessageID: "3"}}, false},
		{"reply without ID", platform.OutboundMessage{Text: "x", Reply: &platform.Reply{Quote: "q"}}, false},
		{"edit with Reply", platform.OutboundMessage{Text: "x", EditID: "1", Reply: &platform.Reply{MessageID: "3"}}, false},
		{"entities", platform.OutboundMessage{Text: "hello", Entities: []platform.Entity{{Type: "bold", Offset: 0, Length: 5}}}, true},
		{"entities and parse mode", platform.OutboundMessage{Text: "hello", ParseMode: platform.ParseHTML, Entities: []platform.Entity{{Type: "bold", Length: 5}}}, false},
		{"entity without length", platform.OutboundMessage{Text: "hello", Entities: []platform.Entity{{Type: "bold"}}}, false},
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

// An event's Raw survives JSON when it is the platform's JSON, as the
// journal keeps events; the new fields round-trip too.
func TestEventJSONRawRoundTrip(t *testing.T) {
	raw := json.RawMessage(`{"update_id": 9, "message_reaction": {"chat": {"id": -100, "type": "supergroup"}, "message_id": 5, "new_reaction": [{"type": "emoji", "emoji": "<👍>"}]}}`)
	ev := platform.Event{
		ID: "9", Platform: "telegram", Kind: platform.EventReaction,
		Chat:      platform.Chat{ID: "-100", Type: platform.ChatGroup, Thread: "7", BusinessConnectionID: "bc"},
		From:      platform.User{ID: "1", Name: "Ann", LanguageCode: "pt-br"},
		MessageID: "5", Time: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC),
		Raw:        raw,
		Reactions:  &platform.ReactionUpdate{New: []platform.Reaction{{Emoji: "👍"}}, Counts: []platform.ReactionCount{{Reaction: platform.Reaction{Paid: true}, Count: 2}}},
		Member:     &platform.MemberUpdate{User: platform.User{ID: "2"}, Old: platform.MemberLeft, New: platform.MemberRegular, InviteLink: "l"},
		Payment:    &platform.Payment{Currency: "XTR", Amount: 5, Payload: "p", ChargeID: "c", SubscriptionExpires: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		Business:   &platform.BusinessConnection{ID: "bc", Enabled: true, CanReply: true},
		MessageIDs: []string{"1", "2"},
	}
	// The journal calls MarshalJSON itself, without json.Marshal's check
	// of what it wrote: it must be JSON as it is.
	direct, err := ev.MarshalJSON()
	if err != nil || !json.Valid(direct) {
		t.Fatalf("MarshalJSON = %s, %v; want valid JSON", direct, err)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var back, backDirect platform.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(direct, &backDirect); err != nil || !reflect.DeepEqual(backDirect.Reactions, back.Reactions) ||
		!json.Valid(backDirect.RawJSON()) {
		t.Fatalf("MarshalJSON's JSON reads back as %+v, %v; want %+v", backDirect, err, back)
	}
	gotRaw, ok := back.Raw.(json.RawMessage)
	if !ok {
		t.Fatalf("Raw after the round trip is %T; want json.RawMessage", back.Raw)
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(gotRaw, &got); err != nil {
		t.Fatalf("Raw after the round trip is not JSON: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Raw after the round trip = %s; want %s", gotRaw, raw)
	}
	if !reflect.DeepEqual(back.RawJSON(), gotRaw) {
		t.Fatal("RawJSON differs from Raw")
	}
	back.Raw, ev.Raw = nil, nil
	if !reflect.DeepEqual(back, ev) {
		t.Fatalf("round trip = %+v; want %+v", back, ev)
	}

	// Raw that is not JSON is left out, as any other Raw.
	ev.Raw = json.RawMessage(`{not json`)
	b, err = json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"raw"`) {
		t.Fatalf("invalid Raw was marshalled: %s", b)
	}
}

func TestCallbackArgs(t *testing.T) {
	data, err := platform.CallbackData("vote", "yes", "3")
	if err != nil || data != "vote:yes:3" {
		t.Fatalf("CallbackData = %q, %v", data, err)
	}
	ev := platform.Event{Kind: platform.EventCallback, Text: data}
	if rest, ok := ev.CallbackArgs("vote:"); !ok || rest != "yes:3" {
		t.Fatalf("CallbackArgs = %q, %v", rest, ok)
	}
	if _, ok := ev.CallbackArgs("poll:"); ok {
		t.Fatal("CallbackArgs matched another prefix")
	}
	if _, ok := (platform.Event{Kind: platform.EventMessage, Text: data}).CallbackArgs("vote:"); ok {
		t.Fatal("CallbackArgs matched a message")
	}
	if _, err := platform.CallbackData("x", strings.Repeat("y", 63)); !errors.Is(err, platform.ErrInvalidMessage) {
		t.Fatalf("CallbackData of 65 bytes = %v; want ErrInvalidMessage", err)
	}
}

func TestKeyboard(t *testing.T) {
	rows, err := new(platform.Keyboard).
		Row(platform.DataButton("Yes", "vote:yes"), platform.DataButton("No", "vote:no")).
		Row().
		Row(platform.URLButton("Rules", "https://example.com")).
		Buttons()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]platform.Button{{{Text: "Yes", Data: "vote:yes"}, {Text: "No", Data: "vote:no"}}, {{Text: "Rules", URL: "https://example.com"}}}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("Buttons = %v; want %v", rows, want)
	}
	if err := (platform.OutboundMessage{Text: "x", Buttons: rows}).Validate(); err != nil {
		t.Fatalf("a built keyboard does not validate: %v", err)
	}

	for name, kb := range map[string]*platform.Keyboard{
		"data too long": new(platform.Keyboard).Row(platform.DataButton("a", strings.Repeat("x", 65))),
		"no text":       new(platform.Keyboard).Row(platform.DataButton("", "x")),
		"data and URL":  new(platform.Keyboard).Row(platform.Button{Text: "a", Data: "x", URL: "u"}),
		"neither":       new(platform.Keyboard).Row(platform.Button{Text: "a"}),
		"own limit":     (&platform.Keyboard{MaxData: 4}).Row(platform.DataButton("a", "12345")),
		"later rows":    new(platform.Keyboard).Row(platform.DataButton("a", strings.Repeat("x", 65))).Row(platform.DataButton("b", "ok")),
	} {
		if rows, err := kb.Buttons(); !errors.Is(err, platform.ErrInvalidMessage) || rows != nil {
			t.Errorf("%s: Buttons = %v, %v; want ErrInvalidMessage", name, rows, err)
		}
	}
	if rows, err := new(platform.Keyboard).Row(platform.DataButton("a", strings.Repeat("x", 64))).Buttons(); err != nil || len(rows) != 1 {
		t.Errorf("64 bytes of data: %v, %v; want accepted", rows, err)
	}
}

func TestSendResultRawJSON(t *testing.T) {
	res := platform.SendResult{MessageID: "1", ChatID: "2", Raw: platform.RawJSON(`{"message_id":1,"ok":[true]}`)}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"raw":{"message_id":1,"ok":[true]}`) {
		t.Fatalf("marshalled %s; want the raw result inline", b)
	}
	var back platform.SendResult
	if err := json.Unmarshal(b, &back); err != nil || back != res {
		t.Fatalf("round trip = %+v, %v; want %+v", back, err, res)
	}
	b, _ = json.Marshal(platform.SendResult{ChatID: "2"})
	if strings.Contains(string(b), "raw") {
		t.Fatalf("empty Raw marshalled: %s", b)
	}
}

// FuzzEventJSON reads arbitrary JSON as an Event: never a panic, and what
// it reads marshals and reads back the same.
func FuzzEventJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","platform":"telegram","kind":"reaction","chat":{"id":"-1","thread":"7","business_connection_id":"b"},"raw":{"update_id":1}}`,
		`{"raw":null}`, `{"raw":[1,2]}`, `{"raw":"s"}`, `{}`, `{"member":{"user":{"id":"1"},"old":"left"}}`, `{"payment":{"amount":5}}`,
		`{"message_ids":["1"],"reactions":{"counts":[{"reaction":{"paid":true},"count":2}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev platform.Event
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		if ev.Raw != nil {
			if raw, ok := ev.Raw.(json.RawMessage); !ok || !json.Valid(raw) {
				t.Fatalf("Raw %T %s", ev.Raw, ev.Raw)
			}
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return // a time out of range, as in any JSON of a time.Time
		}
		if direct, err := ev.MarshalJSON(); err != nil || !json.Valid(direct) {
			t.Fatalf("MarshalJSON = %s, %v; want valid JSON", direct, err)
		}
		// Empty lists read from the input are left out when marshalled:
		// from the first round trip on, nothing changes.
		var back, again platform.Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("reading back %s: %v", b, err)
		}
		b2, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b2, &again); err != nil {
			t.Fatalf("reading back %s: %v", b2, err)
		}
		b3, err := json.Marshal(again)
		if err != nil || string(b3) != string(b2) {
			t.Fatalf("round trip changed %s to %s (%v)", b2, b3, err)
		}
	})
}
