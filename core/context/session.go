package context

import (
	stdctx "context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/internal/handling"
)

// ErrNoUser is returned by a per-user session's methods for an event
// without a user.
var ErrNoUser = handling.ErrNoUser

// Stores is what keeps a bot's sessions: an *engine.Engine, whose
// SessionStore is the store WithSessionStore gave it (a memory store of
// its own by default).
type Stores interface {
	SessionStore() state.Store
}

// SessionUpdateAttempts is how many times [SessionKey.Update] reads,
// changes and writes a session before it gives up on conflicting writes.
const SessionUpdateAttempts = 50

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
	var zero T
	s, err := k.of(c)
	if err != nil {
		return zero, err
	}
	return effectState(c, "get", s.key, func(string) (T, error) { return s.Get(c.Context()) })
}

// effectState makes a session access of c's handling an effect: a replay
// gets the value the access gave before; do makes it live, given the
// effect's id.
func effectState[T any](c *Context, op, key string, do func(id string) (T, error)) (T, error) {
	var zero, live T
	made := false
	data, err := c.x.State(op, key, func(id string) ([]byte, error) {
		v, err := do(id)
		if err != nil {
			return nil, err
		}
		live, made = v, true
		return json.Marshal(v) // it came from JSON, or goes there
	})
	switch {
	case made:
		return live, nil
	case err != nil:
		return zero, err
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return zero, fmt.Errorf("engine: session %s as recorded: %w", key, err)
	}
	return v, nil
}

// Update changes the event's chat's (or user's) value with f, which gets
// the value (T's zero value if there is none) and changes it in place, and
// returns the value written. If f returns an error, nothing is written and
// Update returns it. f may run more than once (see SessionKey); once
// SessionUpdateAttempts writes met a conflict, Update returns an error
// wrapping state.ErrConflict. Its other errors are Get's.
func (k *SessionKey[T]) Update(c *Context, f func(*T) error) (T, error) {
	var zero T
	s, err := k.of(c)
	if err != nil {
		return zero, err
	}
	return effectState(c, "update", s.key, func(id string) (T, error) {
		return s.update(c.Context(), f, id)
	})
}

// Delete removes the event's chat's (or user's) value; Get then returns
// T's zero value. Its errors are Get's.
func (k *SessionKey[T]) Delete(c *Context) error {
	s, err := k.of(c)
	if err != nil {
		return err
	}
	_, err = effectState(c, "delete", s.key, func(string) (struct{}, error) { return struct{}{}, s.Delete(c.Context()) })
	return err
}

func (k *SessionKey[T]) of(c *Context) (Session[T], error) {
	ev := c.x.Event()
	id, missing := ev.Chat.ID, ErrNoChat
	if k.user {
		id, missing = ev.From.ID, ErrNoUser
	}
	if id == "" {
		return Session[T]{}, missing
	}
	return k.session(c.x.Sessions(), ev.Platform, id), nil
}

// Of returns the state k names for one chat (a chat session) or user (a
// user session) of the adapter platformName in e's session store: for
// code outside handlers, such as scheduled jobs.
func (k *SessionKey[T]) Of(e Stores, platformName, id string) Session[T] {
	return k.session(e.SessionStore(), platformName, id)
}

// session returns the state k names for id in store.
func (k *SessionKey[T]) session(store state.Store, platformName, id string) Session[T] {
	return Session[T]{
		store: store,
		key:   k.scope() + state.KeyPart(platformName) + "/" + state.KeyPart(id) + "/" + state.KeyPart(k.name),
		ttl:   k.ttl,
	}
}

// IDs returns the IDs of the chats (of a chat session) or users (of a user
// session) of the adapter platformName that have a value under k in e's
// session store, in no particular order: the subscribers of a broadcast,
// say. It lists the whole store's keys: its cost grows with every
// session's.
func (k *SessionKey[T]) IDs(ctx stdctx.Context, e Stores, platformName string) ([]string, error) {
	prefix := k.scope() + state.KeyPart(platformName) + "/"
	suffix := "/" + state.KeyPart(k.name)
	keys, err := e.SessionStore().Keys(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("engine: session %s: %w", k.name, err)
	}
	var ids []string
	for _, key := range keys {
		id, ok := strings.CutSuffix(strings.TrimPrefix(key, prefix), suffix)
		if !ok || strings.Contains(id, "/") {
			continue // another session's, whose id part ends like this name
		}
		if v, err := url.PathUnescape(id); err == nil {
			ids = append(ids, v)
		}
	}
	return ids, nil
}

// scope returns the first part of k's store keys.
func (k *SessionKey[T]) scope() string {
	if k.user {
		return "user/"
	}
	return "chat/"
}

// Session is the state a [SessionKey] names for one chat or user, from
// [SessionKey.Of]. Its methods are those of SessionKey, with a context
// instead of a handler's Context. The zero value refuses every call.
type Session[T any] struct {
	store state.Store
	key   string
	ttl   time.Duration
}

// errNoSession is returned by a zero Session.
var errNoSession = errors.New("engine: a zero Session")

// Get returns the value, and T's zero value if there is none.
func (s Session[T]) Get(ctx stdctx.Context) (T, error) {
	v, _, _, err := s.get(ctx)
	return v, err
}

// get returns the value, its revision (0 if there is none) and the
// handlers' updates it holds (see sessionValue).
func (s Session[T]) get(ctx stdctx.Context) (T, uint64, []sessionUpdate, error) {
	var v T
	if s.store == nil {
		return v, 0, nil, errNoSession
	}
	data, rev, err := s.store.Get(ctx, s.key)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return v, 0, nil, nil
	case err != nil:
		return v, 0, nil, s.fail(ctx, err)
	}
	var sv sessionValue
	if json.Unmarshal(data, &sv) == nil && sv.Herald == 1 {
		data = sv.V
	} else {
		sv = sessionValue{} // a value written before updates had ids
	}
	if err := json.Unmarshal(data, &v); err != nil {
		var zero T
		return zero, 0, nil, s.fail(ctx, err)
	}
	return v, rev, sv.Updates, nil
}

// sessionValue is what the store keeps of a session's value: the value,
// and the last updates made by handlers (maxSessionUpdates at most), so
// that an update a handler run again makes (after a crash, by another
// process) is known as made, not made twice, and returns what it returned
// the first time.
type sessionValue struct {
	Herald  int             `json:"herald.session"`
	V       json.RawMessage `json:"v"`
	Updates []sessionUpdate `json:"updates,omitempty"`
}

// sessionUpdate is one update a session's value holds: its effect's id,
// and the value it wrote, kept for the last maxSessionResults updates
// while it is at most maxSessionResult bytes (a later update's run again
// gets the value as it is now instead).
type sessionUpdate struct {
	ID string          `json:"id"`
	V  json.RawMessage `json:"v,omitempty"`
}

// Bounds of what a session's value keeps of its updates.
const (
	maxSessionUpdates = 32  // ids
	maxSessionResults = 8   // values written, of the last ones
	maxSessionResult  = 512 // bytes of a value written kept
)

// Update changes the value with f (see SessionKey.Update).
func (s Session[T]) Update(ctx stdctx.Context, f func(*T) error) (T, error) {
	return s.update(ctx, f, "")
}

// update is Update; id, if not empty, names the update, which is not made
// again if the value holds it.
func (s Session[T]) update(ctx stdctx.Context, f func(*T) error, id string) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		v, rev, ids, err := s.get(ctx)
		if err != nil {
			return zero, err
		}
		if i := slices.IndexFunc(ids, func(u sessionUpdate) bool { return u.ID == id }); id != "" && i >= 0 {
			// Made before this run: the value holds it; return what it wrote.
			if w := ids[i].V; w != nil {
				var was T
				if json.Unmarshal(w, &was) == nil {
					return was, nil
				}
			}
			return v, nil
		}
		if err := f(&v); err != nil {
			return zero, err
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return zero, s.fail(ctx, err)
		}
		if id != "" {
			u := sessionUpdate{ID: id}
			if len(raw) <= maxSessionResult {
				u.V = raw
			}
			ids = append(ids, u)
			if len(ids) > maxSessionUpdates {
				ids = ids[len(ids)-maxSessionUpdates:]
			}
			if n := len(ids) - maxSessionResults; n > 0 {
				ids[n-1].V = nil // the older ones keep their ids only
			}
		}
		data, err := json.Marshal(sessionValue{Herald: 1, V: raw, Updates: ids})
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
		case !errors.Is(err, state.ErrConflict):
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
// conflict, longer each time (up to 64 ms, jittered), so that writers that
// collided do not collide again at once. It returns ctx's error if ctx ends
// first.
func pauseBeforeRetry(ctx stdctx.Context, attempt int) error {
	d := time.Millisecond << min(attempt-1, 6)
	if !backoff.Sleep(ctx, backoff.EqualJitter(d, rand.Float64())) {
		return ctx.Err()
	}
	return nil
}

// Delete removes the value.
func (s Session[T]) Delete(ctx stdctx.Context) error {
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
func (s Session[T]) fail(ctx stdctx.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return cerr
	}
	return fmt.Errorf("engine: session %s: %w", s.key, err)
}
