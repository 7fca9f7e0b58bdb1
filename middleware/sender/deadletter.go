package sender

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/heraldbot/herald/platform"
)

// DefaultDeadLetterCapacity is a [DeadLetterStore]'s capacity when none is
// given.
const DefaultDeadLetterCapacity = 1000

// DeadLetter is a send that failed for good, kept for inspection and replay.
type DeadLetter struct {
	// Request is the request as the send received it. Its slices
	// (attachments, buttons) are shared with the sender's caller, not copied.
	Request platform.SendRequest
	// Attempts is how many attempts the send made (see [AttemptsOf]); 0 when
	// its context had ended before the first.
	Attempts int
	// Err is the send's final error.
	Err error
	// At is when the send was given up.
	At time.Time
	// ID names the letter in its store: the ID its backend gave it (see
	// [DeadLetterBackend]), or one of the store's own. It is empty until
	// the letter is in a store.
	ID string
}

// DeadLetterBackend keeps a [DeadLetterStore]'s letters outside the
// process, so that they survive a restart: the engine's journal does. A
// store calls it, with no lock of its own held, for every letter it adds
// and every letter it removes.
type DeadLetterBackend interface {
	// Keep stores dl and returns the ID it has in the backend.
	Keep(dl DeadLetter) (id string, err error)
	// Forget removes the letters with the given IDs; an ID it does not
	// have is not an error.
	Forget(ids ...string) error
}

// DeadLetterStore keeps the most recent dead letters, up to a capacity. When
// it is full, adding one drops the oldest, and [DeadLetterStore.Dropped]
// counts the drops. Adding costs O(1): the store is a ring buffer, which
// grows up to its capacity as letters arrive.
//
// The zero value is an empty store of DefaultDeadLetterCapacity. A store is
// safe for concurrent use.
//
// To replay dead letters, take them with [DeadLetterStore.Drain], which
// returns them oldest first, and send each again through the outbound
// dispatcher in that order: letters of one chat then keep their relative
// order (though they join the back of the chat's queue, after messages sent
// since). A replayed send that fails again comes back as a new dead letter.
type DeadLetterStore struct {
	mu       sync.Mutex
	capacity int          // 0: DefaultDeadLetterCapacity
	buf      []DeadLetter // oldest at head; grows by append until full, then wraps
	head     int
	dropped  uint64

	backend DeadLetterBackend // nil: memory only
	onErr   func(error)
	seq     uint64 // numbers the letters no backend named
}

// NewDeadLetterStore returns an empty store keeping at most capacity dead
// letters. A capacity of zero or less means DefaultDeadLetterCapacity (1000).
func NewDeadLetterStore(capacity int) *DeadLetterStore {
	if capacity <= 0 {
		capacity = DefaultDeadLetterCapacity
	}
	return &DeadLetterStore{capacity: capacity}
}

// Cap returns the most dead letters s keeps.
func (s *DeadLetterStore) Cap() int {
	if s.capacity <= 0 {
		return DefaultDeadLetterCapacity
	}
	return s.capacity
}

// SetBackend makes s keep its letters in b too: from now on Add keeps each
// letter there (recording its ID in the letter) and every removal forgets
// it there. A failing backend call is reported to onErr (nil: ignored);
// the store itself goes on. Call it before s is used.
func (s *DeadLetterStore) SetBackend(b DeadLetterBackend, onErr func(error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backend, s.onErr = b, onErr
}

// Add stores dl as the newest dead letter, dropping the oldest if s is full.
func (s *DeadLetterStore) Add(dl DeadLetter) {
	if b := s.backendOf(); b != nil {
		id, err := b.Keep(dl)
		s.report(err)
		dl.ID = id
	}
	s.add(dl, true)
}

// Restore adds letters its backend already keeps (those a restarted
// process finds there), in order, as Add would but without keeping them
// again.
func (s *DeadLetterStore) Restore(letters []DeadLetter) {
	for _, dl := range letters {
		s.add(dl, true)
	}
}

func (s *DeadLetterStore) add(dl DeadLetter, forgetDropped bool) {
	s.mu.Lock()
	if dl.ID == "" {
		s.seq++
		dl.ID = "mem-" + strconv.FormatUint(s.seq, 10)
	}
	if len(s.buf) < s.Cap() {
		// Not full yet: head is still 0, as it only moves when an Add
		// overwrites the oldest letter of a full buffer.
		s.buf = append(s.buf, dl)
		s.mu.Unlock()
		return
	}
	old := s.buf[s.head]
	s.buf[s.head] = dl
	s.head++
	if s.head == len(s.buf) {
		s.head = 0
	}
	s.dropped++
	b := s.backend
	s.mu.Unlock()
	if b != nil && forgetDropped && old.ID != "" {
		s.report(b.Forget(old.ID))
	}
}

// Remove takes the letters with the given IDs (see [DeadLetter]) out of
// s and its backend, and returns how many it found in s.
func (s *DeadLetterStore) Remove(ids ...string) int {
	drop := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id != "" {
			drop[id] = true
		}
	}
	s.mu.Lock()
	all := s.copyLocked()
	kept := all[:0]
	for _, dl := range all {
		if !drop[dl.ID] {
			kept = append(kept, dl)
		}
	}
	n := len(all) - len(kept)
	if n > 0 {
		s.buf, s.head = kept, 0
	}
	b := s.backend
	s.mu.Unlock()
	if b != nil && len(drop) > 0 {
		s.report(b.Forget(ids...))
	}
	return n
}

func (s *DeadLetterStore) backendOf() DeadLetterBackend {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backend
}

func (s *DeadLetterStore) report(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	f := s.onErr
	s.mu.Unlock()
	if f != nil {
		f(err)
	}
}

// Len returns the number of dead letters in s.
func (s *DeadLetterStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf)
}

// Dropped returns how many dead letters s has dropped, over its lifetime,
// to make room for newer ones.
func (s *DeadLetterStore) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// List returns a copy of the dead letters in s, oldest first, and leaves
// them in s. Changing the returned slice does not change s.
func (s *DeadLetterStore) List() []DeadLetter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copyLocked()
}

// Drain removes every dead letter from s (and its backend) and returns
// them, oldest first. The store is empty afterwards, and its buffer is
// released; Dropped is kept.
func (s *DeadLetterStore) Drain() []DeadLetter {
	s.mu.Lock()
	out := s.copyLocked()
	s.buf, s.head = nil, 0
	b := s.backend
	s.mu.Unlock()
	if b != nil {
		var ids []string
		for _, dl := range out {
			if dl.ID != "" {
				ids = append(ids, dl.ID)
			}
		}
		if len(ids) > 0 {
			s.report(b.Forget(ids...))
		}
	}
	return out
}

// copyLocked returns the letters in order, oldest first. s.mu must be held.
func (s *DeadLetterStore) copyLocked() []DeadLetter {
	if len(s.buf) == 0 {
		return nil
	}
	out := make([]DeadLetter, len(s.buf))
	n := copy(out, s.buf[s.head:])
	copy(out[n:], s.buf[:s.head])
	return out
}

// DeadLetters returns a decorator that adds every failed send to store, with
// its request, attempts, final error and time. Placed outside [Retry], as
// [Default] places it, it sees final outcomes only, so every send that
// failed for good is stored: its retries ran out, its error was permanent,
// a retry-after was too long, or its context ended (a forced shutdown
// cancels sends, and they must not vanish). Successful sends are not
// stored. A nil store returns the sender unchanged.
func DeadLetters(store *DeadLetterStore) SenderDecorator { return Observe(keepDeadLetters(store)) }

// keepDeadLetters returns DeadLetters' observer function, nil for a nil
// store.
func keepDeadLetters(store *DeadLetterStore) func(context.Context, Outcome) {
	if store == nil {
		return nil
	}
	return func(ctx context.Context, o Outcome) {
		if o.Err == nil {
			return
		}
		p := platform.ProgressOf(ctx)
		if p != nil && p.Journaled && errors.Is(o.Err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
			return // a journal keeps the send, to make it at the next start
		}
		store.Add(DeadLetter{Request: o.Request, Attempts: o.Attempts, Err: o.Err, At: time.Now()})
		if p != nil {
			p.DeadLettered = true // for the observers outside
		}
	}
}
