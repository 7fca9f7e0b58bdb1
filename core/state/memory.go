package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// MemoryStore is a [Store] in the process's memory: the engine's
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

var _ Store = (*MemoryStore)(nil)

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

// Get returns key's value and revision (see Store).
func (s *MemoryStore) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	en, ok := s.liveLocked(key, time.Now())
	if !ok {
		return nil, 0, fmt.Errorf("state: %q: %w", key, ErrNotFound)
	}
	return append([]byte(nil), en.value...), en.rev, nil
}

// Create sets key if it has no value (see Store).
func (s *MemoryStore) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	return s.write(ctx, key, value, 0, ttl)
}

// Update sets key if its revision is still rev (see Store).
func (s *MemoryStore) Update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	if rev == 0 {
		return 0, fmt.Errorf("state: %q: update of revision 0: %w", key, ErrConflict)
	}
	return s.write(ctx, key, value, rev, ttl)
}

func (s *MemoryStore) write(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if key == "" {
		return 0, errors.New("state: empty state key")
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	en, ok := s.liveLocked(key, now)
	switch {
	case rev == 0 && ok:
		return 0, fmt.Errorf("state: %q exists: %w", key, ErrConflict)
	case rev != 0 && (!ok || en.rev != rev):
		return 0, fmt.Errorf("state: %q: revision %d is not the last: %w", key, rev, ErrConflict)
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

// Delete removes key's value (see Store).
func (s *MemoryStore) Delete(ctx context.Context, key string, rev uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	en, ok := s.liveLocked(key, time.Now())
	if rev != 0 && (!ok || en.rev != rev) {
		return fmt.Errorf("state: %q: revision %d is not the last: %w", key, rev, ErrConflict)
	}
	delete(s.entries, key)
	return nil
}

// Keys returns the live keys that begin with prefix (see Store).
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
