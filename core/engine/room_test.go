package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
)

// A user who writes faster than the chat takes replies (one a second)
// fills the chat's send queue; the handlers' replies then wait for room,
// slowing the chat's own handling, instead of being refused: every reply
// arrives, in order — those of one handling (/many) and those of the
// events queued behind it alike.
func TestHandlerRepliesWaitForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newSayEngine(t,
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 4}),
			engine.WithRateLimit("memory", sender.RateLimitConfig{PerChat: 1, PerChatBurst: 1}))
		e.OnCommand("many", func(c *engine.Context) error {
			for i := range 10 {
				c.ReplyText(fmt.Sprint("many ", i))
			}
			return nil
		})
		var want []string
		must(t, e.HandleEvent(msg(dm, ann, "/many")))
		for i := range 10 {
			want = append(want, fmt.Sprint("many ", i))
		}
		for i := range 20 {
			must(t, e.HandleEvent(msg(dm, ann, fmt.Sprint("/say ", i))))
			want = append(want, fmt.Sprint(i))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // 30 replies, one a second
		defer cancel()
		if _, err := mem.WaitSent(ctx, dm.ID, len(want)); err != nil {
			t.Fatalf("%v: %q", err, mem.Texts(dm.ID))
		}
		if got := mem.Texts(dm.ID); !slices.Equal(got, want) {
			t.Fatalf("the chat got %q; want %q", got, want)
		}
		st := e.Stats()
		if st.Outbound.Rejected != 0 || st.RoomWaits == 0 {
			t.Fatalf("%d sends refused, %d waits for room; want none refused, the replies waiting", st.Outbound.Rejected, st.RoomWaits)
		}
	})
}

// The wait for room ends with the handler's context: a handler that
// would wait past its time gets ErrQueueFull, as before.
func TestHandlerRoomWaitEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t,
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 2}),
			engine.WithHandlerTimeout(5*time.Second))
		mem.SlowNext(dm.ID, time.Hour) // the chat takes nothing meanwhile
		refused := make(chan error, 1)
		e.OnCommand("many", func(c *engine.Context) error {
			for range 3 { // the first hangs, two wait: the queue is full
				c.ReplyText("x")
			}
			start := time.Now()
			_, err := c.ReplyText("one too many").Wait(context.Background())
			if time.Since(start) < 5*time.Second {
				err = fmt.Errorf("refused after %v, before the handler's time was up: %w", time.Since(start), err)
			}
			refused <- err
			return nil
		})
		must(t, e.HandleEvent(msg(dm, ann, "/many")))
		if err := <-refused; !errors.Is(err, engine.ErrQueueFull) {
			t.Fatalf("the send past the room = %v; want ErrQueueFull once the handler's time was up", err)
		}
		e.Dispatcher().ForceClose()
	})
}

// A handler run again after a crash repeats sends the journal holds
// (duplicates: nothing is queued) while the sends taken up at the start
// fill its chat's queue past its bound: the run does not wait for room
// for them, and its context is whole when it returns.
func TestRunAgainDoesNotWaitForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		mem.SlowNext(dm.ID, time.Hour) // the first reply hangs
		second := false
		type outcome struct {
			waited time.Duration
			err    error
		}
		got := make(chan outcome, 1)
		setup := func(e *engine.Engine) {
			e.OnCommand("many", func(c *engine.Context) error {
				start := time.Now()
				for i := range 10 {
					c.ReplyText(fmt.Sprint("many ", i))
				}
				if !second {
					<-c.Context().Done() // still running when the process dies
					return nil
				}
				got <- outcome{time.Since(start), c.Context().Err()}
				return nil
			})
		}
		e, _ := journaledWith(t, mem, j, setup, engine.WithHandlerConcurrency(1))
		sayID(mem, "1", "/many")
		synctest.Wait()
		crash(e)
		if ev, sends := j.pending(); ev != 1 || sends != 10 {
			t.Fatalf("the journal holds %d events and %d sends; want the event and its ten replies", ev, sends)
		}
		second = true
		mem2 := memory.New()
		e2, done := journaledWith(t, mem2, j, setup,
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 4}),
			engine.WithRateLimit("memory", sender.RateLimitConfig{PerChat: 1, PerChatBurst: 1}),
			engine.WithHandlerTimeout(5*time.Second))
		if o := <-got; o.waited > time.Second || o.err != nil {
			t.Errorf("the run again waited %v for room for sends that are duplicates; its context: %v", o.waited, o.err)
		}
		if _, err := mem2.WaitSent(testCtx(t), dm.ID, 10); err != nil {
			t.Fatal(err)
		}
		if got := mem2.Texts(dm.ID); len(got) != 10 {
			t.Errorf("after the restart the chat got %q; want the ten replies once", got)
		}
		must(t, e2.Shutdown(context.Background()))
		<-done
	})
}

// Handlers waiting for room hold handler slots: at most half of them
// wait, so that two flooded chats do not stop a third chat's handling
// (here, with two slots, the second flooded chat's send is refused at
// once rather than waiting).
func TestRoomWaitsLeaveOtherChatsGoing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newSayEngine(t,
			engine.WithHandlerConcurrency(2),
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 4}))
		a, b, c := memory.Private("a"), memory.Private("b"), memory.Private("c")
		mem.SlowNext(a.ID, time.Hour) // the platform holds a's and b's first sends (a long 429 pause, say)
		mem.SlowNext(b.ID, time.Hour)
		for i := range 10 {
			must(t, e.HandleEvent(msg(a, ann, fmt.Sprint("/say ", i))))
			must(t, e.HandleEvent(msg(b, ann, fmt.Sprint("/say ", i))))
		}
		time.Sleep(time.Second)
		start := time.Now()
		must(t, e.HandleEvent(msg(c, ann, "/say hi")))
		if _, err := mem.WaitSent(testCtx(t), c.ID, 1); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("an idle chat's reply waited %v behind other chats' waits for room", d)
		}
		if st := e.Stats(); st.RoomWaits == 0 || st.Outbound.Rejected == 0 {
			t.Errorf("%d waits for room, %d sends refused; want one chat waiting, the other's sends refused", st.RoomWaits, st.Outbound.Rejected)
		}
		e.Dispatcher().ForceClose()
	})
}

// A chat's backlog left in the journal by a crash is handled again after
// the restart — runs again, whose replies are new sends, not duplicates —
// and their replies wait for room as the first run's would have: none is
// refused.
func TestBacklogAfterCrashWaitsForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		first := true
		setup := func(e *engine.Engine) {
			e.OnCommand("say", func(c *engine.Context) error {
				if first {
					<-c.Context().Done() // the process dies with its chat's backlog
					return nil
				}
				c.ReplyText(c.RawArgs())
				return nil
			})
		}
		e, _ := journaledWith(t, mem, j, setup, engine.WithHandlerConcurrency(1))
		var want []string
		for i := range 20 {
			sayID(mem, fmt.Sprint(i), fmt.Sprint("/say ", i))
			want = append(want, fmt.Sprint(i))
		}
		synctest.Wait()
		crash(e)
		if ev, _ := j.pending(); ev != 20 {
			t.Fatalf("the journal holds %d events; want the 20", ev)
		}
		first = false
		mem2 := memory.New()
		e2, done := journaledWith(t, mem2, j, setup,
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 4}),
			engine.WithRateLimit("memory", sender.RateLimitConfig{PerChat: 1, PerChatBurst: 1}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := mem2.WaitSent(ctx, dm.ID, 20); err != nil {
			t.Fatalf("%v: %q (%d refused)", err, mem2.Texts(dm.ID), e2.Stats().Outbound.Rejected)
		}
		if got := mem2.Texts(dm.ID); !slices.Equal(got, want) {
			t.Fatalf("after the restart the chat got %q; want %q", got, want)
		}
		must(t, e2.Shutdown(context.Background()))
		<-done
	})
}

// A flood past half a chat's inbound queue stops its handlers' waits for
// room: their replies meet the full queue and are refused, rather than the
// chat's events filling its inbound queue — a full one refuses the chat's
// next event, and an adapter that offers a batch in order (Telegram's
// poll) would hold every chat's events behind it.
func TestRoomWaitsStopBeforeTheInboundQueueFills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := newSayEngine(t,
			engine.WithInboundQueueSize(8),
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 4}),
			engine.WithRateLimit("memory", sender.RateLimitConfig{PerChat: 1, PerChatBurst: 1}))
		for i := range 60 { // ten a second, against one reply a second
			if err := e.HandleEvent(msg(dm, ann, fmt.Sprint("/say ", i))); err != nil {
				t.Fatalf("event %d refused: %v", i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if st := e.Stats(); st.Dropped != 0 || st.RoomWaits == 0 || st.Outbound.Rejected == 0 {
			t.Fatalf("%d events dropped, %d waits for room, %d replies refused; want none dropped, the waits given up past half the inbound queue", st.Dropped, st.RoomWaits, st.Outbound.Rejected)
		}
		e.Dispatcher().ForceClose()
	})
}

// newSayEngine returns newEngine's engine with /say, which replies its
// arguments.
func newSayEngine(t *testing.T, opts ...engine.Option) (*engine.Engine, *memory.Adapter) {
	t.Helper()
	e, mem := newEngine(t, opts...)
	e.OnCommand("say", func(c *engine.Context) error {
		c.ReplyText(c.RawArgs())
		return nil
	})
	return e, mem
}
