package sender

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/platform"
)

// DefaultDeadLetterCapacity is a [DeadLetterStore]'s capacity when none is
// given.
const DefaultDeadLetterCapacity = 1000

// DefaultDeadLetterBytes is a [DeadLetterStore]'s byte bound when none is
// given: 64 MiB (see [DeadLetter.Size]).
const DefaultDeadLetterBytes = 64 << 20

// deadLetterOverhead is what a letter counts beyond the bytes of its
// message: its request's other fields, its error and its place in the
// store, roughly.
const deadLetterOverhead = 256

// DeadLetter is a send that failed for good, kept for inspection and replay.
type DeadLetter struct {
	// Request is the request as the send received it. Its slices
	// (attachments and their Data, buttons) are shared with the sender's
	// caller, not copied: a letter of a send whose attachments name their
	// files by FileID or URL holds no file bytes at all, and one whose
	// attachments carry Data holds those bytes, which count against the
	// store's byte bound.
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

// Size returns the bytes dl counts against a [DeadLetterStore]'s byte
// bound: those of its message's text, reply and edit IDs, buttons and
// reply keyboard, and of its attachments' data, URLs, file IDs, names and
// captions, plus 256 for the rest of the letter. An attachment sent by
// FileID or URL counts the length of that reference, not of the file.
func (dl DeadLetter) Size() int64 {
	m := &dl.Request.Message
	n := int64(deadLetterOverhead + len(dl.Request.Platform) + len(dl.Request.Target.ID) +
		len(m.Text) + len(m.ReplyToID) + len(m.EditID) + len(m.DeleteID))
	for _, at := range m.Attachments {
		n += int64(len(at.Data) + len(at.URL) + len(at.FileID) + len(at.FileName) + len(at.Caption) + len(at.MIMEType))
	}
	for _, row := range m.Buttons {
		for _, b := range row {
			n += int64(len(b.Text) + len(b.Data) + len(b.URL))
		}
	}
	if k := m.Keyboard; k != nil {
		n += int64(len(k.Placeholder))
		for _, row := range k.Rows {
			for _, b := range row {
				n += int64(len(b))
			}
		}
	}
	return n
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

// DeadLetterStore keeps the most recent dead letters, up to a capacity in
// letters and a bound in bytes (the sum of their [DeadLetter.Size]s, file
// data included). When adding a letter takes it past either, the oldest
// letters are dropped until both hold again, [DeadLetterStore.Dropped]
// counts the drops, and the store logs what it dropped (see
// [DeadLetterStore.SetLogger]), rate-limited. A letter larger on its own
// than the byte bound is dropped at once, the others kept. Adding costs
// O(1) amortised: the store is a ring buffer, which grows up to its
// capacity as letters arrive.
//
// The zero value is an empty store of DefaultDeadLetterCapacity letters
// and DefaultDeadLetterBytes bytes. A store is safe for concurrent use.
//
// To replay dead letters, take them with [DeadLetterStore.Drain], which
// returns them oldest first, and send each again through the outbound
// dispatcher in that order: letters of one chat then keep their relative
// order (though they join the back of the chat's queue, after messages sent
// since). A replayed send that fails again comes back as a new dead letter.
type DeadLetterStore struct {
	mu       sync.Mutex
	capacity int          // 0: DefaultDeadLetterCapacity
	maxBytes int64        // 0: DefaultDeadLetterBytes
	buf      []keptLetter // a ring of n letters from start, oldest first; grows up to the capacity
	start, n int
	bytes    int64 // the sum of the kept letters' sizes
	dropped  uint64

	backend DeadLetterBackend // nil: memory only
	onErr   func(error)
	log     *ratelog.Logger // nil: no log
	seq     uint64          // numbers the letters no backend named
}

// NewDeadLetterStore returns an empty store keeping at most capacity dead
// letters and DefaultDeadLetterBytes bytes. A capacity of zero or less
// means DefaultDeadLetterCapacity (1000).
func NewDeadLetterStore(capacity int) *DeadLetterStore {
	return NewDeadLetterStoreLimits(capacity, 0)
}

// NewDeadLetterStoreLimits returns an empty store keeping at most capacity
// dead letters of at most maxBytes bytes together (see [DeadLetter.Size]).
// A capacity of zero or less means DefaultDeadLetterCapacity (1000), a
// maxBytes of zero or less DefaultDeadLetterBytes (64 MiB).
func NewDeadLetterStoreLimits(capacity int, maxBytes int64) *DeadLetterStore {
	if capacity <= 0 {
		capacity = DefaultDeadLetterCapacity
	}
	if maxBytes <= 0 {
		maxBytes = DefaultDeadLetterBytes
	}
	return &DeadLetterStore{capacity: capacity, maxBytes: maxBytes}
}

// Cap returns the most dead letters s keeps.
func (s *DeadLetterStore) Cap() int {
	if s.capacity <= 0 {
		return DefaultDeadLetterCapacity
	}
	return s.capacity
}

// MaxBytes returns the most bytes the letters s keeps may hold together.
func (s *DeadLetterStore) MaxBytes() int64 {
	if s.maxBytes <= 0 {
		return DefaultDeadLetterBytes
	}
	return s.maxBytes
}

// Bytes returns the bytes the letters in s hold (the sum of their
// [DeadLetter.Size]s), at most [DeadLetterStore.MaxBytes].
func (s *DeadLetterStore) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
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

// SetLogger makes s log, at warn level, the letters it drops to stay
// within its bounds: the first drop at once, then at most one line per
// 10 s, which says how many lines it left out. Nil, like a store's zero
// value, logs nothing. Later calls replace the logger.
func (s *DeadLetterStore) SetLogger(l *zap.Logger) {
	var rl *ratelog.Logger
	if l != nil {
		rl = ratelog.New(l, 0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = rl
}

// Add stores dl as the newest dead letter, dropping the oldest while s
// holds more than its capacity or byte bound.
func (s *DeadLetterStore) Add(dl DeadLetter) {
	if b := s.backendOf(); b != nil {
		id, err := b.Keep(dl)
		s.report(err)
		dl.ID = id
	}
	s.add(dl)
}

// Restore adds letters its backend already keeps (those a restarted
// process finds there), in order, as Add would but without keeping them
// again. Letters dropped to stay within the bounds are forgotten in the
// backend too.
func (s *DeadLetterStore) Restore(letters []DeadLetter) {
	for _, dl := range letters {
		s.add(dl)
	}
}

// add keeps dl, dropping the oldest letters (or dl itself, when it is
// larger than the byte bound on its own) to stay within the bounds; the
// dropped letters are forgotten in the backend and logged.
func (s *DeadLetterStore) add(dl DeadLetter) {
	size := dl.Size()
	s.mu.Lock()
	if dl.ID == "" {
		s.seq++
		dl.ID = "mem-" + strconv.FormatUint(s.seq, 10)
	}
	var out []keptLetter
	if size > s.MaxBytes() {
		out = append(out, keptLetter{dl, size})
		s.dropped++
	} else {
		for s.n > 0 && (s.n >= s.Cap() || s.bytes+size > s.MaxBytes()) {
			out = append(out, s.popLocked())
			s.dropped++
		}
		s.pushLocked(dl, size)
	}
	b, log := s.backend, s.log
	held, count := s.bytes, s.n
	s.mu.Unlock()
	if len(out) == 0 {
		return
	}
	var ids []string
	var freed int64
	for _, old := range out {
		freed += old.size
		if old.dl.ID != "" {
			ids = append(ids, old.dl.ID)
		}
	}
	if b != nil && len(ids) > 0 {
		s.report(b.Forget(ids...))
	}
	oldest := out[0].dl
	log.Warn("sender: dead letters full; dropped the oldest to stay within the store's bounds",
		zap.Int("dropped", len(out)), zap.Int64("dropped_bytes", freed),
		zap.String("platform", oldest.Request.Platform), zap.String("chat", oldest.Request.Target.ID),
		zap.Time("failed_at", oldest.At), zap.NamedError("send_error", oldest.Err),
		zap.Int("kept", count), zap.Int64("kept_bytes", held),
		zap.Int("capacity", s.Cap()), zap.Int64("max_bytes", s.MaxBytes()))
}

// keptLetter is a letter in a store with the size it counts: measured
// when it was added, since its request's slices belong to the caller.
type keptLetter struct {
	dl   DeadLetter
	size int64
}

// pushLocked adds dl, of the given size, as the newest letter; the ring
// must have room for it (n < Cap).
func (s *DeadLetterStore) pushLocked(dl DeadLetter, size int64) {
	if s.n == len(s.buf) {
		c := min(max(8, 2*len(s.buf)), s.Cap())
		buf := make([]keptLetter, c)
		s.copyToLocked(buf)
		s.buf, s.start = buf, 0
	}
	s.buf[(s.start+s.n)%len(s.buf)] = keptLetter{dl, size}
	s.n++
	s.bytes += size
}

// popLocked removes and returns the oldest letter; s must not be empty.
func (s *DeadLetterStore) popLocked() keptLetter {
	k := s.buf[s.start]
	s.buf[s.start] = keptLetter{} // let its request go
	s.start = (s.start + 1) % len(s.buf)
	s.n--
	s.bytes -= k.size
	if s.n == 0 {
		s.start = 0
	}
	return k
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
	all := make([]keptLetter, s.n)
	s.copyToLocked(all)
	kept := all[:0]
	var bytes int64
	for _, k := range all {
		if !drop[k.dl.ID] {
			kept = append(kept, k)
			bytes += k.size
		}
	}
	n := len(all) - len(kept)
	if n > 0 {
		clear(all[len(kept):])
		s.buf, s.start, s.n, s.bytes = kept, 0, len(kept), bytes
		if len(kept) == 0 {
			s.buf = nil
		}
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
	return s.n
}

// Dropped returns how many dead letters s has dropped, over its lifetime,
// to stay within its capacity and byte bound.
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
	s.buf, s.start, s.n, s.bytes = nil, 0, 0, 0
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

// copyLocked returns the letters in order, oldest first, or nil when there
// are none. s.mu must be held.
func (s *DeadLetterStore) copyLocked() []DeadLetter {
	if s.n == 0 {
		return nil
	}
	out := make([]DeadLetter, s.n)
	for i := range out {
		out[i] = s.buf[(s.start+i)%len(s.buf)].dl
	}
	return out
}

// copyToLocked copies the kept letters, oldest first, to the start of
// dst, which has room for them.
func (s *DeadLetterStore) copyToLocked(dst []keptLetter) {
	if s.n == 0 {
		return
	}
	end := s.start + s.n
	if end <= len(s.buf) {
		copy(dst, s.buf[s.start:end])
		return
	}
	k := copy(dst, s.buf[s.start:])
	copy(dst[k:], s.buf[:end-len(s.buf)])
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
		if p != nil && peekState(p).journaled && KeptForNextStart(ctx, o.Err) {
			return // a journal keeps the send, to make it at the next start
		}
		store.Add(DeadLetter{Request: o.Request, Attempts: o.Attempts, Err: o.Err, At: time.Now()})
		if p != nil {
			stateOf(p).deadLettered = true // for the observers outside
		}
	}
}
