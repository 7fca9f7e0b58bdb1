package sender_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// letters returns n dead letters numbered from first by their Attempts.
func letters(first, n int) []sender.DeadLetter {
	out := make([]sender.DeadLetter, n)
	for i := range out {
		out[i] = sender.DeadLetter{Request: req("c"), Attempts: first + i}
	}
	return out
}

func attemptsList(dls []sender.DeadLetter) []int {
	out := make([]int, len(dls))
	for i, dl := range dls {
		out[i] = dl.Attempts
	}
	return out
}

func TestDeadLetterStoreCapacity(t *testing.T) {
	tests := []struct {
		capacity, adds int
		want           []int
		dropped        uint64
	}{
		{3, 0, []int{}, 0},
		{3, 2, []int{1, 2}, 0},
		{3, 3, []int{1, 2, 3}, 0},
		{3, 4, []int{2, 3, 4}, 1},
		{3, 7, []int{5, 6, 7}, 4},
		{3, 9, []int{7, 8, 9}, 6}, // wrapped around exactly twice
		{1, 5, []int{5}, 4},
	}
	for _, tt := range tests {
		s := sender.NewDeadLetterStore(tt.capacity)
		for _, dl := range letters(1, tt.adds) {
			s.Add(dl)
		}
		if got := attemptsList(s.List()); !slices.Equal(got, tt.want) {
			t.Errorf("cap %d, %d adds: List = %v; want %v", tt.capacity, tt.adds, got, tt.want)
		}
		if s.Len() != len(tt.want) || s.Dropped() != tt.dropped {
			t.Errorf("cap %d, %d adds: Len %d, Dropped %d; want %d, %d", tt.capacity, tt.adds, s.Len(), s.Dropped(), len(tt.want), tt.dropped)
		}
	}
}

func TestDeadLetterStoreDefaults(t *testing.T) {
	for _, s := range []*sender.DeadLetterStore{sender.NewDeadLetterStore(0), sender.NewDeadLetterStore(-5), new(sender.DeadLetterStore)} {
		if s.Cap() != sender.DefaultDeadLetterCapacity {
			t.Fatalf("Cap = %d; want %d", s.Cap(), sender.DefaultDeadLetterCapacity)
		}
		for _, dl := range letters(1, 1001) {
			s.Add(dl)
		}
		if s.Len() != 1000 || s.Dropped() != 1 || s.List()[0].Attempts != 2 {
			t.Fatalf("Len %d, Dropped %d; want 1000, 1, oldest 2", s.Len(), s.Dropped())
		}
	}
}

func TestDeadLetterStoreListIsACopy(t *testing.T) {
	s := sender.NewDeadLetterStore(3)
	for _, dl := range letters(1, 4) {
		s.Add(dl) // wrapped: the copy must be put together from both ends
	}
	got := s.List()
	got[0].Attempts = 99
	got[1].Request.Target.ID = "changed"
	_ = append(got[:1], sender.DeadLetter{Attempts: 100})
	if again := s.List(); !slices.Equal(attemptsList(again), []int{2, 3, 4}) || again[1].Request.Target.ID != "c" {
		t.Fatalf("List after changing a copy = %+v", again)
	}
}

func TestDeadLetterStoreDrainOldestFirst(t *testing.T) {
	s := sender.NewDeadLetterStore(4)
	// Letters of two chats, interleaved, wrapped around the ring.
	chats := []string{"a", "b", "a", "a", "b", "b"}
	for i, c := range chats {
		s.Add(sender.DeadLetter{Request: req(c), Attempts: i + 1})
	}
	got := s.Drain()
	if !slices.Equal(attemptsList(got), []int{3, 4, 5, 6}) {
		t.Fatalf("Drain = %v; want oldest first 3 4 5 6", attemptsList(got))
	}
	// Replayed in that order, each chat's letters keep their order.
	perChat := map[string][]int{}
	for _, dl := range got {
		perChat[dl.Request.Target.ID] = append(perChat[dl.Request.Target.ID], dl.Attempts)
	}
	if !slices.Equal(perChat["a"], []int{3, 4}) || !slices.Equal(perChat["b"], []int{5, 6}) {
		t.Fatalf("per-chat order %v", perChat)
	}
	if s.Len() != 0 || s.List() != nil || s.Drain() != nil {
		t.Fatal("store not empty after Drain")
	}
	if s.Dropped() != 2 {
		t.Fatalf("Dropped = %d after Drain; want 2 kept", s.Dropped())
	}
	for _, dl := range letters(10, 6) {
		s.Add(dl)
	}
	if got := attemptsList(s.Drain()); !slices.Equal(got, []int{12, 13, 14, 15}) {
		t.Fatalf("Drain after refilling = %v", got)
	}
}

func TestDeadLetterStoreConcurrent(t *testing.T) {
	const producers, each, capacity = 8, 500, 100
	s := sender.NewDeadLetterStore(capacity)
	var wg sync.WaitGroup
	var drained sync.Map
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				s.Add(sender.DeadLetter{Request: req(string(rune('a' + p))), Attempts: i})
				if i%100 == 0 {
					for _, dl := range s.Drain() {
						drained.Store(fmt.Sprintf("%s:%d", dl.Request.Target.ID, dl.Attempts), true)
					}
					_ = s.List()
				}
			}
		})
	}
	wg.Wait()
	left := s.List()
	n := len(left)
	drained.Range(func(any, any) bool { n++; return true })
	if uint64(n)+s.Dropped() != producers*each {
		t.Fatalf("kept %d + dropped %d != added %d: letters vanished", n, s.Dropped(), producers*each)
	}
	last := map[string]int{}
	for _, dl := range left {
		id := dl.Request.Target.ID
		if prev, ok := last[id]; ok && dl.Attempts <= prev {
			t.Fatalf("producer %s: letter %d listed after %d", id, dl.Attempts, prev)
		}
		last[id] = dl.Attempts
	}
}

func TestDeadLettersDecorator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := sender.NewDeadLetterStore(10)
		blocked := platform.Permanent(errors.New("blocked"))
		r := &recorder{reply: func(_ context.Context, _ int, rq platform.SendRequest) error {
			switch rq.Target.ID {
			case "flaky":
				return errFlaky
			case "blocked":
				return blocked
			}
			return nil
		}}
		s := sender.Chain(sender.DeadLetters(store), sender.Retry(noJitter(3, 10*time.Millisecond, time.Second)))(r)
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		sends := []struct {
			ctx  context.Context
			chat string
		}{
			{context.Background(), "ok"},
			{context.Background(), "flaky"},
			{context.Background(), "blocked"},
			{cancelled, "ok"}, // a forced shutdown: must not vanish
		}
		var at []time.Time
		for _, snd := range sends {
			_, _ = s.Send(snd.ctx, req(snd.chat))
			at = append(at, time.Now())
		}
		got := store.List()
		if len(got) != 3 {
			t.Fatalf("%d dead letters; want 3 (success not stored)", len(got))
		}
		want := []struct {
			chat     string
			attempts int
			err      error
			at       time.Time
		}{
			{"flaky", 3, sender.ErrAttemptsExhausted, at[1]},
			{"blocked", 1, blocked, at[2]},
			{"ok", 0, context.Canceled, at[3]},
		}
		for i, w := range want {
			dl := got[i]
			if dl.Request.Target.ID != w.chat || dl.Attempts != w.attempts || !errors.Is(dl.Err, w.err) || !dl.At.Equal(w.at) {
				t.Errorf("letter %d = {%s, %d, %v, %v}; want {%s, %d, %v, %v}", i,
					dl.Request.Target.ID, dl.Attempts, dl.Err, dl.At, w.chat, w.attempts, w.err, w.at)
			}
			if dl.Request.Message.Text != "hello "+w.chat {
				t.Errorf("letter %d lost its message: %+v", i, dl.Request.Message)
			}
		}
	})
}

func TestDeadLettersNilStore(t *testing.T) {
	r := &recorder{}
	if got := sender.DeadLetters(nil)(r); got != platform.Sender(r) {
		t.Fatalf("DeadLetters(nil) = %T; want the sender unchanged", got)
	}
}

// A journaled send cut off by a forced shutdown stays in its journal,
// unless its adapter said it must not be made again (a permanent error).
func TestKeptForNextStart(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cut := fmt.Errorf("telegram: sendMessage: %w", context.Canceled)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"cut off", cancelled, cut, true},
		{"cut off, may have arrived, avoiding duplicates", cancelled, platform.Permanent(platform.MaybeDelivered(cut)), false},
		{"cut off, may have arrived", cancelled, platform.MaybeDelivered(cut), true},
		{"failed", cancelled, errors.New("500"), false},
		{"cancelled below, context live", context.Background(), cut, false},
	} {
		if got := sender.KeptForNextStart(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: KeptForNextStart = %v; want %v", tc.name, got, tc.want)
		}
	}
}
