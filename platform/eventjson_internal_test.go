package platform

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

// checkEventJSON fails t unless appendEventJSON writes e as encoding/json
// does, byte for byte, or leaves e (and b) to it.
func checkEventJSON(t *testing.T, e Event) {
	t.Helper()
	want, wantErr := json.Marshal(eventJSON(e))
	prefix := []byte("x")
	got, ok := appendEventJSON(prefix, &e)
	if !ok {
		if !bytes.Equal(got, prefix) {
			t.Fatalf("left to encoding/json, but appended %q", got[1:])
		}
		plain := len(e.Attachments) == 0 && e.Inline == (InlineQuery{}) && e.Reactions == nil && e.Member == nil &&
			e.Payment == nil && e.Business == nil && len(e.MessageIDs) == 0
		if plain && wantErr == nil {
			t.Fatalf("a plain event left to encoding/json: %+v", e)
		}
		return
	}
	if wantErr != nil || !bytes.Equal(got[1:], want) {
		t.Fatalf("appendEventJSON wrote\n%s\nencoding/json\n%s (%v)", got[1:], want, wantErr)
	}
}

// An event's JSON written by hand is encoding/json's, byte for byte:
// every field set and none, escapes of all kinds, times of every zone and
// precision; events with the fields it does not write, and times
// encoding/json refuses, are left to encoding/json.
func TestAppendEventJSON(t *testing.T) {
	at := time.Date(2026, 12, 7, 1, 2, 3, 456000000, time.FixedZone("", 5*3600+30*60))
	full := Event{ID: "1", Platform: "telegram", Kind: EventMessage,
		Chat: Chat{ID: "-100", Type: ChatGroup, Title: "T", Thread: "7", BusinessConnectionID: "b"},
		From: User{ID: "9", Name: "Ann", Username: "ann", IsBot: true, LanguageCode: "en"},
		Text: "hi", MessageID: "5", ReplyToID: "4", Time: at, QueryID: "q"}
	for _, e := range []Event{
		{},
		full,
		{ID: "a\"b\\c\n\r\t\b\f\x00\x1f<>&\u2028\u2029é中😀\xff\xc3", Time: at.UTC()},
		{Text: "plain ascii and 中文", Time: time.Unix(0, 1)},
		{Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},                   // refused: encoding/json's error
		{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))}, // refused too
		{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -90))},
		{Attachments: []Attachment{{Kind: AttachPhoto}}},
		{Inline: InlineQuery{Offset: "1"}},
		{Reactions: &ReactionUpdate{}},
		{Member: &MemberUpdate{}},
		{Payment: &Payment{}},
		{Business: &BusinessConnection{}},
		{MessageIDs: []string{"1"}},
	} {
		checkEventJSON(t, e)
	}
}

// FuzzAppendEventJSON holds the hand-written JSON to encoding/json's for
// any strings and times.
func FuzzAppendEventJSON(f *testing.F) {
	f.Add("1", "a\"<é\xff\u2028", "T", false, int64(0), 0)
	f.Add("", "", "", true, int64(1<<62), -3600)
	f.Fuzz(func(t *testing.T, id, text, title string, bot bool, nanos int64, offset int) {
		e := Event{ID: id, Platform: text, Kind: EventKind(title), Text: text, MessageID: id,
			Chat: Chat{ID: title, Title: text, Thread: id}, From: User{ID: id, Name: text, IsBot: bot, LanguageCode: title},
			Time: time.Unix(0, nanos).In(time.FixedZone("", offset%200000))}
		checkEventJSON(t, e)
	})
}

// appendEventJSON writes every field of an Event, Chat and User or checks
// it is empty: a field added to one of them fails here until it does.
func TestAppendEventJSONKnowsEveryField(t *testing.T) {
	known := map[reflect.Type][]string{
		reflect.TypeFor[Event](): {"ID", "Platform", "Kind", "Chat", "From", "Text", "MessageID", "ReplyToID", "Time", "Raw",
			"Attachments", "QueryID", "Inline", "Reactions", "Member", "Payment", "Business", "MessageIDs"},
		reflect.TypeFor[Chat](): {"ID", "Type", "Title", "Thread", "BusinessConnectionID"},
		reflect.TypeFor[User](): {"ID", "Name", "Username", "IsBot", "LanguageCode"},
	}
	for typ, want := range known {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has the fields %v; appendEventJSON knows %v", typ, got, want)
		}
	}
}
