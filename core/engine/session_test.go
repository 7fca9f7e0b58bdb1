package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	hctx "github.com/heraldbot/herald/core/context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/platform"
)

var (
	chatCount = engine.NewChatSession[int]("count", 0)
	userSeen  = engine.NewUserSession[[]string]("seen", 0)
)

// A chat's state is its own; a user's is shared by the user's chats.
func TestSessionsPerChatAndUser(t *testing.T) {
	e, mem := newEngine(t)
	e.OnCommand("inc", func(c *engine.Context) error {
		n, err := chatCount.Update(c, func(n *int) error { *n++; return nil })
		if err != nil {
			return err
		}
		seen, err := userSeen.Update(c, func(s *[]string) error { *s = append(*s, c.Chat().ID); return nil })
		if err != nil {
			return err
		}
		c.ReplyText(fmt.Sprint(n, " ", seen[len(seen)-1]))
		return nil
	})
	runEngine(t, e)
	ctx := testCtx(t)
	for _, chat := range []platform.Chat{dm, group, dm, group, dm} {
		mem.Say(chat, ann, "/inc")
	}
	mem.Say(group, bob, "/inc")
	if _, err := mem.WaitSent(ctx, dm.ID, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.WaitSent(ctx, group.ID, 3); err != nil {
		t.Fatal(err)
	}
	if got, want := mem.Texts(dm.ID), []string{"1 u1", "2 u1", "3 u1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("private chat got %q; want %q", got, want)
	}
	if got, want := mem.Texts(group.ID), []string{"1 g1", "2 g1", "3 g1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("group got %q; want %q", got, want)
	}
	if n, err := chatCount.Of(e, mem.Name(), group.ID).Get(ctx); err != nil || n != 3 {
		t.Errorf("group's count from outside = %d, %v", n, err)
	}
	if err := chatCount.Of(e, mem.Name(), group.ID).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := chatCount.Of(e, mem.Name(), group.ID).Get(ctx); err != nil || n != 0 {
		t.Errorf("after Delete: %d, %v", n, err)
	}
	if s, _ := userSeen.Of(e, mem.Name(), ann.ID).Get(ctx); len(s) != 5 {
		t.Errorf("Ann was seen in %q; want 5 chats", s)
	}
	if s, _ := userSeen.Of(e, mem.Name(), bob.ID).Get(ctx); len(s) != 1 {
		t.Errorf("Bob was seen in %q; want 1 chat", s)
	}
}

// A read, change and write of a chat's state in a handler loses no
// update, however many events the chat has queued; a user's state,
// updated from many chats at once, retries on conflicts and loses none
// either. Run with -race.
func TestSessionConcurrentUpdates(t *testing.T) {
	store := &countingStore{MemoryStore: state.NewMemoryStore()}
	e, mem := newEngine(t, engine.WithSessionStore(store), engine.WithHandlerConcurrency(16))
	chatN := engine.NewChatSession[int]("n", 0)
	userN := engine.NewUserSession[int]("n", 0)
	e.OnCommand("inc", func(c *engine.Context) error {
		// Get, then write: safe for chat state, whose events run in order.
		n, err := chatN.Get(c)
		if err != nil {
			return err
		}
		if _, err := chatN.Update(c, func(v *int) error {
			if *v != n {
				return fmt.Errorf("chat state changed between Get and Update: %d, %d", n, *v)
			}
			*v = n + 1
			return nil
		}); err != nil {
			return err
		}
		_, err = userN.Update(c, func(v *int) error { *v++; return nil })
		return err
	})
	const chats, each = 32, 10
	for i := range each {
		for c := range chats {
			if err := e.HandleEvent(platform.Event{ID: fmt.Sprint(c, "-", i), Platform: mem.Name(), Kind: platform.EventMessage,
				Chat: memory.Private(fmt.Sprint("c", c)), From: ann, Text: "/inc"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	for c := range chats {
		if n, err := chatN.Of(e, mem.Name(), fmt.Sprint("c", c)).Get(ctx); err != nil || n != each {
			t.Errorf("chat c%d: %d, %v; want %d", c, n, err, each)
		}
	}
	if n, err := userN.Of(e, mem.Name(), ann.ID).Get(ctx); err != nil || n != chats*each {
		t.Errorf("user: %d, %v; want %d", n, err, chats*each)
	}
	if st := e.Stats(); st.HandlerErrors != 0 {
		t.Errorf("%d handler errors", st.HandlerErrors)
	}
	t.Logf("%d conflicts met and retried", store.conflicts.Load())
}

// countingStore counts the conflicts its writes meet, and makes the next
// conflictNext writes meet one, as if another process wrote in between.
type countingStore struct {
	*state.MemoryStore
	conflicts    atomic.Int64
	conflictNext atomic.Int64
}

func (s *countingStore) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	if s.conflictNext.Add(-1) >= 0 {
		s.interfere(ctx, key)
	}
	rev, err := s.MemoryStore.Create(ctx, key, value, ttl)
	s.count(err)
	return rev, err
}

func (s *countingStore) Update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	if s.conflictNext.Add(-1) >= 0 {
		s.interfere(ctx, key)
	}
	rev, err := s.MemoryStore.Update(ctx, key, value, rev, ttl)
	s.count(err)
	return rev, err
}

// interfere adds one to key's number, as another writer: a plain number,
// or a number in the engine's envelope (its value and the ids of the
// updates it holds), which it keeps.
func (s *countingStore) interfere(ctx context.Context, key string) {
	v, rev, err := s.MemoryStore.Get(ctx, key)
	if errors.Is(err, state.ErrNotFound) {
		_, _ = s.MemoryStore.Create(ctx, key, []byte("1"), 0)
		return
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(v, &env) == nil && env["v"] != nil {
		n, _ := strconv.Atoi(string(env["v"]))
		env["v"] = json.RawMessage(strconv.Itoa(n + 1))
		data, _ := json.Marshal(env)
		_, _ = s.MemoryStore.Update(ctx, key, data, rev, 0)
		return
	}
	n, _ := strconv.Atoi(string(v))
	_, _ = s.MemoryStore.Update(ctx, key, []byte(strconv.Itoa(n+1)), rev, 0)
}

func (s *countingStore) count(err error) {
	if errors.Is(err, state.ErrConflict) {
		s.conflicts.Add(1)
	}
}

// Update retries a write that met a conflict with the newer value, and
// gives up with ErrStateConflict after SessionUpdateAttempts.
func TestSessionUpdateRetriesConflicts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &countingStore{MemoryStore: state.NewMemoryStore()}
		e, _ := newEngine(t, engine.WithSessionStore(store))
		s := engine.NewUserSession[int]("n", 0).Of(e, "memory", "u")
		ctx := context.Background()

		store.conflictNext.Store(2)
		calls := 0
		n, err := s.Update(ctx, func(v *int) error { calls++; *v += 10; return nil })
		// Two other writers added 1 each before the third attempt won.
		if err != nil || n != 12 || calls != 3 {
			t.Fatalf("Update = %d, %v after %d calls; want 12 after 3", n, err, calls)
		}

		store.conflictNext.Store(hctx.SessionUpdateAttempts)
		calls = 0
		_, err = s.Update(ctx, func(v *int) error { calls++; *v += 10; return nil })
		if !errors.Is(err, state.ErrConflict) || calls != hctx.SessionUpdateAttempts {
			t.Fatalf("Update always in conflict: %v after %d calls; want ErrStateConflict after %d", err, calls, hctx.SessionUpdateAttempts)
		}
		if got, _ := s.Get(ctx); got != 12+hctx.SessionUpdateAttempts {
			t.Fatalf("value %d; want the other writers' %d", got, 12+hctx.SessionUpdateAttempts)
		}

		// f's error writes nothing.
		boom := errors.New("boom")
		if _, err := s.Update(ctx, func(v *int) error { *v = -1; return boom }); !errors.Is(err, boom) {
			t.Fatalf("Update with f failing: %v", err)
		}
		if got, _ := s.Get(ctx); got != 12+hctx.SessionUpdateAttempts {
			t.Fatalf("f's error wrote %d", got)
		}

		// A value that no longer decodes is an error, and Delete resets it.
		if err := s.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := engine.NewUserSession[string]("n", 0).Of(e, "memory", "u").Update(ctx, func(v *string) error { *v = "text"; return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx); err == nil {
			t.Fatal("a string read as an int: no error")
		}
		if err := s.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx); err != nil || got != 0 {
			t.Fatalf("after Delete: %d, %v", got, err)
		}

		// Ended contexts come back unwrapped; a zero Session refuses.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Get(cctx); err != context.Canceled {
			t.Fatalf("Get with an ended context: %v", err)
		}
		var zero engine.Session[int]
		if _, err := zero.Get(ctx); err == nil {
			t.Fatal("a zero Session's Get: no error")
		}
	})
}

// A session expires its TTL after its last update.
func TestSessionTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		draft := engine.NewChatSession[string]("draft", time.Hour)
		e.OnCommand("set", func(c *engine.Context) error {
			_, err := draft.Update(c, func(s *string) error { *s = c.RawArgs(); return nil })
			return err
		})
		e.OnCommand("get", func(c *engine.Context) error {
			s, err := draft.Get(c)
			c.ReplyText("[" + s + "]")
			return err
		})
		runEngine(t, e)
		mem.Say(dm, ann, "/set hello")
		time.Sleep(59 * time.Minute)
		mem.Say(dm, ann, "/get")
		mem.Say(dm, ann, "/set again") // renews it
		time.Sleep(59 * time.Minute)
		mem.Say(dm, ann, "/get")
		time.Sleep(2 * time.Minute)
		mem.Say(dm, ann, "/get")
		synctest.Wait()
		if got, want := fmt.Sprint(mem.Texts(dm.ID)), "[[hello] [again] []]"; got != want {
			t.Fatalf("got %s; want %s", got, want)
		}
	})
}

// An event without a chat or a user has no such session.
func TestSessionWithoutChatOrUser(t *testing.T) {
	e, mem := newEngine(t)
	errs := make(chan error, 2)
	e.OnEvent(platform.EventMemberJoined, func(c *engine.Context) error {
		_, err := chatCount.Get(c)
		errs <- err
		_, err = userSeen.Update(c, func(*[]string) error { return nil })
		errs <- err
		return nil
	})
	runEngine(t, e)
	mem.Emit(platform.Event{Kind: platform.EventMemberJoined})
	if err := <-errs; !errors.Is(err, engine.ErrNoChat) {
		t.Errorf("chat session without a chat: %v", err)
	}
	if err := <-errs; !errors.Is(err, engine.ErrNoUser) {
		t.Errorf("user session without a user: %v", err)
	}
}

// IDs lists the chats or users with a value under a session key: the
// subscribers of a broadcast.
func TestSessionIDs(t *testing.T) {
	e, _ := newEngine(t)
	ctx := context.Background()
	subs := engine.NewChatSession[bool]("subscribed", 0)
	other := engine.NewChatSession[bool]("other", 0)
	for _, id := range []string{"1", "a/b", "100%"} {
		if _, err := subs.Of(e, "memory", id).Update(ctx, func(v *bool) error { *v = true; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.Of(e, "memory", "9").Update(ctx, func(v *bool) error { *v = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := subs.Of(e, "telegram", "7").Update(ctx, func(v *bool) error { *v = true; return nil }); err != nil {
		t.Fatal(err)
	}
	ids, err := subs.IDs(ctx, e, "memory")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if want := []string{"1", "100%", "a/b"}; !slices.Equal(ids, want) {
		t.Fatalf("IDs = %q; want %q", ids, want)
	}
	if err := subs.Of(e, "memory", "1").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, _ := subs.IDs(ctx, e, "memory"); len(ids) != 2 {
		t.Fatalf("after a Delete: %q", ids)
	}
}
