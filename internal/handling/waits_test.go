package handling

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// waitOf returns a wait of a handling of user's event in chat, with
// deadline d from now.
func waitOf(chat, user string, d time.Duration, anyone bool) *Wait {
	ev := platform.Event{Platform: "p", ID: chat + user, Chat: platform.Chat{ID: chat}, From: platform.User{ID: user}}
	return &Wait{h: New(ev, nil, false), deadline: time.Now().Add(d), question: -1, index: -1, anyone: anyone}
}

// resumed records what Waits asked to run again, in the order it asked.
type resumed struct {
	mu   sync.Mutex
	keys []string
	why  []error
}

func (r *resumed) waits() *Waits {
	return NewWaits(func(key string, task func()) error {
		task() // the engine's executor runs it later, on the chat's key
		return nil
	}, func(h *Handling, why error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.keys = append(r.keys, h.start.ID)
		r.why = append(r.why, why)
	})
}

// The waits of a chat are found by the user's events, oldest first, then
// those that take anyone's; an unparked one is no longer found.
func TestWaitsFor(t *testing.T) {
	ws := (&resumed{}).waits()
	defer ws.Close()
	ann1, ann2 := waitOf("c", "ann", time.Hour, false), waitOf("c", "ann", time.Hour, false)
	all, bob := waitOf("c", "", time.Hour, true), waitOf("c", "bob", time.Hour, false)
	other := waitOf("d", "ann", time.Hour, false)
	for _, w := range []*Wait{ann1, all, ann2, bob, other} {
		ws.Park(w)
	}
	ev := platform.Event{Platform: "p", Chat: platform.Chat{ID: "c"}, From: platform.User{ID: "ann"}, Kind: platform.EventMessage}
	if got, want := ws.For(&ev), []*Wait{ann1, ann2, all}; !slices.Equal(got, want) {
		t.Fatalf("For(ann in c) = %v; want ann's two, then the chat's", got)
	}
	if !ws.Unpark(ann1) || ws.Unpark(ann1) {
		t.Fatal("Unpark: want true once, then false")
	}
	if got := ws.For(&ev); !slices.Equal(got, []*Wait{ann2, all}) {
		t.Fatalf("For after Unpark = %v", got)
	}
	ann2.messages = true // takes messages only
	ev.Kind = platform.EventCallback
	if got := ws.For(&ev); !slices.Equal(got, []*Wait{all}) {
		t.Fatalf("For(a press) = %v; want the chat's wait only", got)
	}
}

// Each wait is resumed at its deadline, in deadline order (ties in the
// order they parked), with context.DeadlineExceeded, once; an unparked
// one is not; after Close none is.
func TestWaitsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &resumed{}
		ws := r.waits()
		a, b, c := waitOf("c1", "a", 3*time.Second, false), waitOf("c2", "b", time.Second, false), waitOf("c3", "c", time.Second, false)
		gone, late := waitOf("c4", "d", 2*time.Second, false), waitOf("c5", "e", time.Hour, false)
		for _, w := range []*Wait{a, b, c, gone, late} {
			ws.Park(w)
		}
		ws.Unpark(gone)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		r.mu.Lock()
		keys, why := slices.Clone(r.keys), slices.Clone(r.why)
		r.mu.Unlock()
		if want := []string{"c2b", "c3c", "c1a"}; !slices.Equal(keys, want) {
			t.Fatalf("resumed %v; want %v", keys, want)
		}
		for _, err := range why {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("resumed with %v", err)
			}
		}
		ws.Close()
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if r.mu.Lock(); len(r.keys) != 3 {
			t.Fatalf("a wait resumed after Close: %v", r.keys)
		}
		r.mu.Unlock()
	})
}

// A question that fails while its handling waits for the answer resumes
// it at once with ErrPromptNotSent; one that fails before the handling
// waits is seen by the wait.
func TestWaitsQuestionFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &resumed{}
		ws := r.waits()
		defer ws.Close()
		w := waitOf("c", "u", time.Hour, false)
		w.question = 0
		w.h.wait = w
		ws.Park(w)
		boom := errors.New("boom")
		ws.questionFailed(w.h, 0, boom)
		synctest.Wait()
		if r.mu.Lock(); len(r.why) != 1 || !errors.Is(r.why[0], ErrPromptNotSent) || !errors.Is(r.why[0], boom) {
			t.Fatalf("resumed with %v; want ErrPromptNotSent and the cause", r.why)
		}
		r.mu.Unlock()

		h := New(platform.Event{Chat: platform.Chat{ID: "c"}}, nil, false)
		ws.questionFailed(h, 2, boom)
		if err := h.questionError(2); !errors.Is(err, boom) {
			t.Fatalf("questionError = %v; want the failure kept for the wait", err)
		}
	})
}

// parkerRecord is a journal.Record that hears whether its handling waits.
type parkerRecord struct {
	journal.Record
	heard []bool
}

func (r *parkerRecord) Parked(waiting bool) { r.heard = append(r.heard, waiting) }
func (r *parkerRecord) HandedOver() bool    { return false }

// The records of a waiting handling's events — its own and those its
// waits took — hear when it parks and when it runs again, once each, in
// that order; a Park after Close (the engine stops) tells them nothing.
func TestWaitsTellRecordsParked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ws := (&resumed{}).waits()
		own, took := &parkerRecord{}, &parkerRecord{}
		ev := platform.Event{Platform: "p", ID: "1", Chat: platform.Chat{ID: "c"}, From: platform.User{ID: "ann"}}
		h := New(ev, own, false)
		h.extraLocked().taken = append(h.extraLocked().taken, took)
		w := &Wait{h: h, deadline: time.Now().Add(time.Second), question: -1, index: -1}
		ws.Park(w)
		ws.Park(w) // parked already: nothing new
		if !ws.Unpark(w) || ws.Unpark(w) {
			t.Fatal("Unpark: want true once, then false")
		}
		ws.Park(w)
		time.Sleep(2 * time.Second) // its deadline: resumed
		synctest.Wait()
		ws.Close()
		ws.Park(w)
		for name, r := range map[string]*parkerRecord{"own": own, "taken": took} {
			if want := []bool{true, false, true, false}; !slices.Equal(r.heard, want) {
				t.Errorf("the %s record heard %v; want %v", name, r.heard, want)
			}
		}
	})
}
