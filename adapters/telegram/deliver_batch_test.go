package telegram

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/platform"
)

// batchRunState returns a runState whose handleAll takes at most budget()
// events a call and refuses the next with refuse; got collects what it
// took, in order.
func batchRunState(budget func() int, refuse error, got *[]string) *runState {
	rs := testRunState(func(platform.Event) error { return errors.New("handle called: the batch goes to handleAll") })
	rs.handleAll = func(evs []platform.Event) (int, error) {
		n := min(budget(), len(evs))
		for _, ev := range evs[:n] {
			*got = append(*got, ev.ID)
		}
		if n < len(evs) {
			return n, refuse
		}
		return n, nil
	}
	return rs
}

// A batch refused part way: the updates before the refused event are
// taken, the refused one's events taken before it are recorded, the rest
// is not taken, and no press after the refusal waits for an answer.
// Delivered again, each event is handed on once, in order.
func TestDeliverAllRefusedPartWay(t *testing.T) {
	members := []tgbotapi.User{{ID: 1, FirstName: "A"}, {ID: 2, FirstName: "B"}, {ID: 3, FirstName: "C"}}
	us := []*update{
		updateFor(1),
		decoded(&tgbotapi.Update{UpdateID: 2, Message: &tgbotapi.Message{ // three events: 2, 2.1, 2.2
			MessageID: 2, Chat: &tgbotapi.Chat{ID: -5, Type: "group"}, NewChatMembers: members}}),
		decoded(&tgbotapi.Update{UpdateID: 3, CallbackQuery: &tgbotapi.CallbackQuery{ID: "cb3", Data: "x"}}),
		updateFor(4),
	}
	refuse := errors.New("queue full")
	var got []string
	budget := 2
	rs := batchRunState(func() int { return budget }, refuse, &got)
	n, err := rs.deliverAll(us)
	if n != 1 || !errors.Is(err, refuse) {
		t.Fatalf("deliverAll = %d, %v; want 1 and the refusal", n, err)
	}
	if ids, next := rs.presses.due(time.Now().Add(time.Hour), autoAnswerAfter); len(ids) != 0 || !next.IsZero() {
		t.Fatalf("a press not taken waits for an answer: %q, %v", ids, next)
	}
	if done, whole := rs.taken.progress(2); done != 1 || whole {
		t.Fatalf("update 2: %d events taken (whole %v); want 1", done, whole)
	}
	budget = 100
	if n, err := rs.deliverAll(us); n != len(us) || err != nil {
		t.Fatalf("delivered again: %d, %v; want %d, nil", n, err, len(us))
	}
	if want := []string{"1", "2", "2.1", "2.2", "3", "4"}; !slices.Equal(got, want) {
		t.Fatalf("events %q; want %q, each once", got, want)
	}
	if ids, _ := rs.presses.due(time.Now().Add(autoAnswerAfter), autoAnswerAfter); !slices.Equal(ids, []string{"cb3"}) {
		t.Fatalf("presses due for an answer: %q; want the one taken", ids)
	}
	if s := rs.stats; s.taken.Load() != 4 || s.duplicates.Load() != 1 || s.refused.Load() != 1 {
		t.Fatalf("taken %d, duplicates %d, refused %d; want 4, 1, 1", s.taken.Load(), s.duplicates.Load(), s.refused.Load())
	}
}

// An event the engine can never take (a permanent refusal) is dropped,
// and the batch goes on after it.
func TestDeliverAllDropsWhatCanNeverBeTaken(t *testing.T) {
	var got []string
	rs := testRunState(nil)
	rs.handleAll = func(evs []platform.Event) (int, error) {
		for i, ev := range evs {
			if ev.ID == "2" {
				return i, platform.Permanent(fmt.Errorf("too large: %w", platform.ErrInvalidMessage))
			}
			got = append(got, ev.ID)
		}
		return len(evs), nil
	}
	us := []*update{updateFor(1), updateFor(2), updateFor(3)}
	if n, err := rs.deliverAll(us); n != 3 || err != nil {
		t.Fatalf("deliverAll = %d, %v; want 3, nil", n, err)
	}
	if !slices.Equal(got, []string{"1", "3"}) {
		t.Fatalf("events %q; want [1 3]", got)
	}
	for _, id := range []int{1, 2, 3} {
		if _, whole := rs.taken.progress(id); !whole {
			t.Fatalf("update %d not recorded as taken", id)
		}
	}
}

// A Run ending takes nothing of a batch.
func TestDeliverAllAfterClose(t *testing.T) {
	var got []string
	rs := batchRunState(func() int { return 100 }, nil, &got)
	rs.close()
	if n, err := rs.deliverAll([]*update{updateFor(1), updateFor(2)}); n != 0 || !errors.Is(err, errRunEnded) {
		t.Fatalf("deliverAll after close = %d, %v; want 0, errRunEnded", n, err)
	}
	if len(got) != 0 {
		t.Fatalf("events %q handed on after close", got)
	}
}

// An update whose ID the ledger remembers as partly taken, with more
// events than it has now (Telegram reuses IDs after a week without
// updates), hands on none and is taken, as deliver takes it.
func TestDeliverAllLedgerAheadOfTheUpdate(t *testing.T) {
	var got []string
	rs := batchRunState(func() int { return 100 }, nil, &got)
	rs.taken.record(7, 3)
	if n, err := rs.deliverAll([]*update{updateFor(6), updateFor(7), updateFor(8)}); n != 3 || err != nil {
		t.Fatalf("deliverAll = %d, %v; want 3, nil", n, err)
	}
	if !slices.Equal(got, []string{"6", "8"}) {
		t.Fatalf("events %q; want [6 8]", got)
	}
}
