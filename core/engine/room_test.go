package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

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
		e, mem := newEngine(t,
			engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 4}),
			engine.WithRateLimit("memory", sender.RateLimitConfig{PerChat: 1, PerChatBurst: 1}))
		e.OnCommand("say", func(c *engine.Context) error {
			c.ReplyText(c.RawArgs())
			return nil
		})
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
