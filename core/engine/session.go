package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Errors of sessions and their stores.
var (
	// ErrStateNotFound is wrapped by a StateStore's error for a key that
	// has no value: never set, deleted, or expired.
	ErrStateNotFound = errors.New("engine: no such state")
	// ErrStateConflict is wrapped by a StateStore's error for a write
	// whose expected revision is no longer the key's (another write came
	// in between), and by SessionKey.Update's error when every attempt
	// met one.
	ErrStateConflict = errors.New("engine: state changed meanwhile")
	// ErrNoUser is returned by a per-user session's methods for an event
	// without a user.
	ErrNoUser = errors.New("engine: no user")
)

// StateStore keeps the engine's state outside its handlers: sessions (see
// [NewChatSession], [NewUserSession]) and the schedule (see [Engine.Every],
// [Engine.SendAt]). It is a key-value store with revisions, so that writes
// can be made only if nothing changed since a read (compare and swap), and
// with a time to live per key. Keys are any non-empty strings; values are
// opaque bytes. [NewMemoryStore] keeps them in the process; package
// cluster's StateStore keeps them in a NATS JetStream key-value bucket,
// across restarts and shared by several processes.
//
// Its methods are called concurrently, and must be safe for concurrent use.
// A read must see every write that returned before it began. Errors wrap
// ErrStateNotFound and ErrStateConflict where their docs say so, and the
// cause otherwise.
type StateStore interface {
	// Get returns key's value and its revision, or an error wrapping
	// ErrStateNotFound.
	Get(ctx context.Context, key string) (value []byte, rev uint64, err error)
	// Create sets key to value if key has no value, and returns the new
	// revision; it returns an error wrapping ErrStateConflict if key has
	// one. With ttl > 0, key expires ttl after this write (stores may
	// round a ttl up, to a second say); 0 means never.
	Create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error)
	// Update sets key to value if its revision is still rev, and returns
	// the new revision; it returns an error wrapping ErrStateConflict if
	// key changed, was deleted or expired since. ttl is Create's.
	Update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error)
	// Delete removes key's value if its revision is rev, or whatever it
	// is with rev 0. A key with no value is no error with rev 0, and
	// ErrStateConflict otherwise.
	Delete(ctx context.Context, key string, rev uint64) error
	// Keys returns the keys with a value that begin with prefix, in no
	// particular order.
	Keys(ctx context.Context, prefix string) ([]string, error)
}

// MemoryStore is a [StateStore] in the process's memory: the engine's
// default for sessions and the schedule, whose state then ends with the
// process. Expired keys are dropped as writes go on, so it holds no more
// than what lives. Its zero value is not usable: create it with
// [NewMemoryStore]. It is safe for concurrent use, and may be shared by
// several engines (in tests, to stand for processes sharing a store).
type MemoryStore struct {
	mu      sync.Mutex
	rev     uint64
	entries map[string]memoryEntry
	writes  int // since the last sweep of expired keys
}

type memoryEntry struct {
	value   []byte
	rev     uint64
	expires time.Time // zero: never
}

var _ StateStore = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{entries: make(map[string]memoryEntry)} }

// liveLocked returns key's entry unless it has none or it expired.
func (s *MemoryStore) liveLocked(key string, now time.Time) (memoryEntry, bool) {
	en, ok := s.entries[key]
	if !ok {
		return memoryEntry{}, false
	}
	if !en.expires.IsZero() && !now.Before(en.expires) {
		delete(s.entries, key)
		return memoryEntry{}, false
	}
	return en, true
}

// Get returns key's value and revision (see StateStore).
func (s *MemoryStore) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	en, ok := s.liveLocked(key, time.Now())
	if !ok {
		return nil, 0, fmt.Errorf("engine: %q: %w", key, ErrStateNotFound)
	}
	return append([]byte(nil), en.value...), en.rev, nil
}

// Create sets key if it has no value (see StateStore).
func (s *MemoryStore) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	return s.write(ctx, key, value, 0, ttl)
}

// Update sets key if its revision is still rev (see StateStore).
func (s *MemoryStore) Update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	if rev == 0 {
		return 0, fmt.Errorf("engine: %q: update of revision 0: %w", key, ErrStateConflict)
	}
	return s.write(ctx, key, value, rev, ttl)
}

func (s *MemoryStore) write(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if key == "" {
		return 0, errors.New("engine: empty state key")
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	en, ok := s.liveLocked(key, now)
	switch {
	case rev == 0 && ok:
		return 0, fmt.Errorf("engine: %q exists: %w", key, ErrStateConflict)
	case rev != 0 && (!ok || en.rev != rev):
		return 0, fmt.Errorf("engine: %q: revision %d is not the last: %w", key, rev, ErrStateConflict)
	}
	s.rev++
	en = memoryEntry{value: append([]byte(nil), value...), rev: s.rev}
	if ttl > 0 {
		en.expires = now.Add(ttl)
	}
	s.entries[key] = en
	s.sweepLocked(now)
	return en.rev, nil
}

// sweepLocked drops expired entries once there were as many writes as
// entries since the last sweep: amortized, a write costs O(1).
func (s *MemoryStore) sweepLocked(now time.Time) {
	s.writes++
	if s.writes < len(s.entries) {
		return
	}
	s.writes = 0
	for k, en := range s.entries {
		if !en.expires.IsZero() && !now.Before(en.expires) {
			delete(s.entries, k)
		}
	}
}

// Delete removes key's value (see StateStore).
func (s *MemoryStore) Delete(ctx context.Context, key string, rev uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	en, ok := s.liveLocked(key, time.Now())
	if rev != 0 && (!ok || en.rev != rev) {
		return fmt.Errorf("engine: %q: revision %d is not the last: %w", key, rev, ErrStateConflict)
	}
	delete(s.entries, key)
	return nil
}

// Keys returns the live keys that begin with prefix (see StateStore).
func (s *MemoryStore) Keys(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.entries {
		if strings.HasPrefix(k, prefix) {
			if _, ok := s.liveLocked(k, now); ok {
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}

// Len returns the number of keys with a value.
func (s *MemoryStore) Len() int {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.entries {
		if _, ok := s.liveLocked(k, now); ok {
			n++
		}
	}
	return n
}

// WithSessionStore keeps sessions in store instead of a [MemoryStore] of
// the engine's own (whose sessions end with the process); package
// cluster's StateStore keeps them across restarts, shared by the
// processes of one bot. Repeated use keeps the last; nil means the
// default.
func WithSessionStore(store StateStore) Option {
	return optionFunc(func(o *options) { o.state.sessions = store })
}

// SessionUpdateAttempts is how many times [SessionKey.Update] reads,
// changes and writes a session before it gives up on conflicting writes.
const SessionUpdateAttempts = 10

// SessionKey names a piece of state of type T kept for each chat (made by
// [NewChatSession]) or for each user (made by [NewUserSession]) across
// events: a handler reads it with Get and changes it with Update, with no
// casts. Values are kept as JSON: T's exported fields, or what its
// json.Marshaler makes, are what lasts.
//
// The name identifies the state in the store, with the chat or user: keep
// it stable across versions of the bot, and give each SessionKey its own.
// A value that no longer decodes into T (T changed) is an error; Delete
// resets it.
//
// A value expires TTL after its last write (Update); 0 means never. The
// KV store of package cluster rounds a TTL up to a whole second.
//
// Concurrent updates. Update is an atomic read, change and write: it
// writes only if the value is still the one it read (compare and swap on
// the store's revision) and otherwise runs f again on the newer value, up
// to SessionUpdateAttempts times, so f must only change its argument. For
// chat state there is nothing to retry in practice: a chat's events are
// handled one at a time, in order, so the handlers of a chat see and make
// its updates in the chat's order, and a Get followed by Update in a
// handler sees no other write in between — unless code outside the chat's
// handlers (a job, a goroutine a handler left) writes it too. User state
// is shared by the user's chats, handled concurrently: two chats' updates
// may conflict, and the retry makes both count. The same holds with a
// store shared by several processes (package cluster's StateStore), whose
// reads see the last write: each chat is handled by one process at a
// time, and should two overlap (a takeover), compare and swap still loses
// no update.
//
// A SessionKey is safe for concurrent use and may serve several engines.
// Make it with NewChatSession or NewUserSession; the zero value is a chat
// session named "" that never expires.
type SessionKey[T any] struct {
	name string
	ttl  time.Duration
	user bool
}

// NewChatSession returns the key of a state of type T kept per chat (per
// platform and chat ID), which expires ttl after its last update (0:
// never).
func NewChatSession[T any](name string, ttl time.Duration) *SessionKey[T] {
	return &SessionKey[T]{name: name, ttl: max(ttl, 0)}
}

// NewUserSession returns the key of a state of type T kept per user (per
// platform and user ID), shared by all the chats the user writes in,
// which expires ttl after its last update (0: never).
func NewUserSession[T any](name string, ttl time.Duration) *SessionKey[T] {
	return &SessionKey[T]{name: name, ttl: max(ttl, 0), user: true}
}

// Name returns the key's name.
func (k *SessionKey[T]) Name() string { return k.name }

// Get returns the event's chat's (or user's) value, and T's zero value if
// there is none. Its errors: ErrNoChat (or ErrNoUser) for an event
// without one; the store's or the JSON decoder's error, wrapped; the
// handler's context's error.
func (k *SessionKey[T]) Get(c *Context) (T, error) {
	s, err := k.of(c)
	if err != nil {
		var zero T
		return zero, err
	}
	return s.Get(c.Context())
}

// Update changes the event's chat's (or user's) value with f, which gets
// the value (T's zero value if there is none) and changes it in place, and
// returns the value written. If f returns an error, nothing is written and
// Update returns it. f may run more than once (see SessionKey); once
// SessionUpdateAttempts writes met a conflict, Update returns an error
// wrapping ErrStateConflict. Its other errors are Get's.
func (k *SessionKey[T]) Update(c *Context, f func(*T) error) (T, error) {
	s, err := k.of(c)
	if err != nil {
		var zero T
		return zero, err
	}
	return s.Update(c.Context(), f)
}

// Delete removes the event's chat's (or user's) value; Get then returns
// T's zero value. Its errors are Get's.
func (k *SessionKey[T]) Delete(c *Context) error {
	s, err := k.of(c)
	if err != nil {
		return err
	}
	return s.Delete(c.Context())
}

func (k *SessionKey[T]) of(c *Context) (Session[T], error) {
	ev := c.ev.event
	id, missing := ev.Chat.ID, ErrNoChat
	if k.user {
		id, missing = ev.From.ID, ErrNoUser
	}
	if id == "" {
		return Session[T]{}, missing
	}
	return k.Of(c.ev.e, ev.Platform, id), nil
}

// Of returns the state k names for one chat (a chat session) or user (a
// user session) of the adapter platformName in e's session store: for
// code outside handlers, such as scheduled jobs.
func (k *SessionKey[T]) Of(e *Engine, platformName, id string) Session[T] {
	scope := "chat/"
	if k.user {
		scope = "user/"
	}
	return Session[T]{
		store: e.state.sessions,
		key:   scope + escapeKey(platformName) + "/" + escapeKey(id) + "/" + escapeKey(k.name),
		ttl:   k.ttl,
	}
}

// escapeKey escapes s for a part of a "/"-separated store key.
func escapeKey(s string) string {
	if !strings.ContainsAny(s, "%/") {
		return s
	}
	return strings.NewReplacer("%", "%25", "/", "%2F").Replace(s)
}

// Session is the state a [SessionKey] names for one chat or user, from
// [SessionKey.Of]. Its methods are those of SessionKey, with a context
// instead of a handler's Context. The zero value refuses every call.
type Session[T any] struct {
	store StateStore
	key   string
	ttl   time.Duration
}

// errNoSession is returned by a zero Session.
var errNoSession = errors.New("engine: a zero Session")

// Get returns the value, and T's zero value if there is none.
func (s Session[T]) Get(ctx context.Context) (T, error) {
	v, _, err := s.get(ctx)
	return v, err
}

// get returns the value and its revision, 0 if there is none.
func (s Session[T]) get(ctx context.Context) (T, uint64, error) {
	var v T
	if s.store == nil {
		return v, 0, errNoSession
	}
	data, rev, err := s.store.Get(ctx, s.key)
	switch {
	case errors.Is(err, ErrStateNotFound):
		return v, 0, nil
	case err != nil:
		return v, 0, s.fail(ctx, err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		var zero T
		return zero, 0, s.fail(ctx, err)
	}
	return v, rev, nil
}

// Update changes the value with f (see SessionKey.Update).
func (s Session[T]) Update(ctx context.Context, f func(*T) error) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		v, rev, err := s.get(ctx)
		if err != nil {
			return zero, err
		}
		if err := f(&v); err != nil {
			return zero, err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return zero, s.fail(ctx, err)
		}
		if rev == 0 {
			_, err = s.store.Create(ctx, s.key, data, s.ttl)
		} else {
			_, err = s.store.Update(ctx, s.key, data, rev, s.ttl)
		}
		switch {
		case err == nil:
			return v, nil
		case !errors.Is(err, ErrStateConflict):
			return zero, s.fail(ctx, err)
		case attempt == SessionUpdateAttempts:
			return zero, fmt.Errorf("engine: session %s: %d attempts: %w", s.key, attempt, err)
		}
		if err := pauseBeforeRetry(ctx, attempt); err != nil {
			return zero, err
		}
	}
}

// pauseBeforeRetry waits a little before another attempt after a
// conflict, longer each time (up to 32 ms, jittered), so that writers that
// collided do not collide again at once. It returns ctx's error if ctx ends
// first.
func pauseBeforeRetry(ctx context.Context, attempt int) error {
	d := time.Millisecond << min(attempt-1, 5)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Delete removes the value.
func (s Session[T]) Delete(ctx context.Context) error {
	if s.store == nil {
		return errNoSession
	}
	if err := s.store.Delete(ctx, s.key, 0); err != nil {
		return s.fail(ctx, err)
	}
	return nil
}

// fail returns err, from the store or the JSON codec, wrapped with the
// session's key; or ctx's error, unwrapped, when ctx ended.
func (s Session[T]) fail(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return cerr
	}
	return fmt.Errorf("engine: session %s: %w", s.key, err)
}
