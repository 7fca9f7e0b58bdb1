// Package state is the contract of the key-value stores that keep a bot's
// state outside its handlers — sessions and the schedule of
// package engine — and [MemoryStore], the store in the process's memory.
// Package cluster implements [Store] on a NATS JetStream key-value bucket;
// package statetest is the suite every Store passes.
//
// The engine reads and writes stores through [Store]; bot authors use them
// only through engine.WithSessionStore and engine.WithScheduleStore.
package state

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Errors of a [Store], wrapped by its errors where its methods say so.
var (
	// ErrNotFound is wrapped by a Store's error for a key that has no
	// value: never set, deleted, or expired.
	ErrNotFound = errors.New("state: no such key")
	// ErrConflict is wrapped by a Store's error for a write whose expected
	// revision is no longer the key's (another write came in between).
	ErrConflict = errors.New("state: changed meanwhile")
)

// Store is a key-value store with revisions, so that writes can be made
// only if nothing changed since a read (compare and swap), and with a time
// to live per key. Keys are any non-empty strings; values are opaque
// bytes.
//
// Its methods are called concurrently, and must be safe for concurrent use.
// A read must see every write that returned before it began. Errors wrap
// ErrNotFound and ErrConflict where the methods say so, and the cause
// otherwise; a method called with an ended ctx returns ctx's error.
type Store interface {
	// Get returns key's value and its revision, or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, key string) (value []byte, rev uint64, err error)
	// Create sets key to value if key has no value, and returns the new
	// revision; it returns an error wrapping ErrConflict if key has one.
	// With ttl > 0, key expires ttl after this write (stores may round a
	// ttl up, to a second say); 0 means never.
	Create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error)
	// Update sets key to value if its revision is still rev, and returns
	// the new revision; it returns an error wrapping ErrConflict if key
	// changed, was deleted or expired since. ttl is Create's.
	Update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error)
	// Delete removes key's value if its revision is rev, or whatever it
	// is with rev 0. A key with no value is no error with rev 0, and
	// ErrConflict otherwise.
	Delete(ctx context.Context, key string, rev uint64) error
	// Keys returns the keys with a value that begin with prefix, in no
	// particular order.
	Keys(ctx context.Context, prefix string) ([]string, error)
}

// KeyPart escapes s to be one part of a "/"-separated key: "%" and "/"
// become "%25" and "%2F", so that keys made of parts never collide.
func KeyPart(s string) string {
	if !strings.ContainsAny(s, "%/") {
		return s
	}
	return strings.NewReplacer("%", "%25", "/", "%2F").Replace(s)
}
