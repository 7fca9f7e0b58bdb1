package telegram

import (
	"errors"
	"slices"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

func TestLedgerWindow(t *testing.T) {
	var n int
	rs := testRunState(func(platform.Event) error { n++; return nil })
	deliver := func(id int) {
		if err := rs.deliver(updateFor(id)); err != nil {
			t.Fatalf("deliver(%d) = %v", id, err)
		}
	}
	for id := 1; id <= seenWindow+10; id++ {
		deliver(id)
	}
	deliver(seenWindow + 10) // a duplicate within the window
	deliver(11)              // still remembered
	if n != seenWindow+10 {
		t.Fatalf("handled %d; want %d (duplicates dropped)", n, seenWindow+10)
	}
	deliver(10) // forgotten: the window is bounded
	if n != seenWindow+11 || len(rs.taken.taken) != seenWindow {
		t.Fatalf("handled %d, remembering %d; want %d, %d", n, len(rs.taken.taken), seenWindow+11, seenWindow)
	}
	rs.close()
	if err := rs.deliver(updateFor(99999)); !errors.Is(err, errRunEnded) {
		t.Fatalf("deliver after close = %v; want errRunEnded", err)
	}
}

// A refused update is not recorded as taken: delivered again, it is handed
// on again, and a button press waits for its answer only once it was
// taken.
func TestDeliverRefused(t *testing.T) {
	refuse := errors.New("queue full")
	var (
		refusing = true
		got      []string
	)
	rs := testRunState(func(ev platform.Event) error {
		if refusing {
			return refuse
		}
		got = append(got, ev.ID)
		return nil
	})
	cb := decoded(&tgbotapi.Update{UpdateID: 5, CallbackQuery: &tgbotapi.CallbackQuery{ID: "cb5", Data: "x"}})
	if err := rs.deliver(cb); !errors.Is(err, refuse) {
		t.Fatalf("deliver = %v; want the refusal", err)
	}
	if ids, next := rs.presses.due(time.Now().Add(time.Hour), autoAnswerAfter); len(ids) != 0 || !next.IsZero() {
		t.Fatalf("a refused press is waiting for an answer: %q, %v", ids, next)
	}
	refusing = false
	for range 2 { // taken, then a duplicate
		if err := rs.deliver(cb); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []string{"5"}) {
		t.Fatalf("events %q; want [5]", got)
	}
	if ids, _ := rs.presses.due(time.Now().Add(autoAnswerAfter), autoAnswerAfter); !slices.Equal(ids, []string{"cb5"}) {
		t.Fatalf("presses due for an answer: %q; want the one taken", ids)
	}
}

// An update of several events refused part way is resumed after the
// events taken, when delivered again: none is handed on twice.
func TestDeliverResumesAPartlyTakenUpdate(t *testing.T) {
	members := []tgbotapi.User{{ID: 1, FirstName: "A"}, {ID: 2, FirstName: "B"}, {ID: 3, FirstName: "C"}}
	u := decoded(&tgbotapi.Update{UpdateID: 40, Message: &tgbotapi.Message{
		MessageID: 1, Chat: &tgbotapi.Chat{ID: -5, Type: "group"}, NewChatMembers: members,
	}})
	var (
		calls int
		got   []string
	)
	// Takes one event, refuses one, and so on.
	rs := testRunState(func(ev platform.Event) error {
		calls++
		if calls%2 == 0 {
			return errors.New("queue full")
		}
		got = append(got, ev.ID)
		return nil
	})
	for tries := 0; ; tries++ {
		if tries > 10 {
			t.Fatal("update never taken")
		}
		if rs.deliver(u) == nil {
			break
		}
	}
	if want := []string{"40", "40.1", "40.2"}; !slices.Equal(got, want) {
		t.Fatalf("events %q; want %q, each once", got, want)
	}
	if err := rs.deliver(u); err != nil || len(got) != 3 {
		t.Fatalf("a duplicate: %v, %d events", err, len(got))
	}
}
