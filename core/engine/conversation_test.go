package engine_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// greet asks a name and greets it: a conversation.
func greet(c *engine.Context) error {
	ev, err := c.Prompt(c.Context(), platform.TextMessage("Your name?"))
	if err != nil {
		return err
	}
	c.ReplyText("Hello, " + ev.Text)
	return nil
}

// Handlers waiting in Next hold no handler slot: with 2 slots, 100 users in
// a conversation at once do not stop other chats' events, and every one of
// them is greeted once it answers.
func TestWaitingConversationsHoldNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t, engine.WithHandlerConcurrency(2))
		e.OnCommand("greet", greet)
		e.OnCommand("ping", func(c *engine.Context) error {
			c.ReplyText("pong")
			return nil
		})
		runEngine(t, e)
		const users = 100
		for i := range users {
			mem.Say(memory.Private(fmt.Sprint("g", i)), memory.User(fmt.Sprint("g", i), "U"), "/greet")
		}
		synctest.Wait()
		for i := range users {
			if got := mem.Texts(fmt.Sprint("g", i)); len(got) != 1 || got[0] != "Your name?" {
				t.Fatalf("user %d got %q; want the question", i, got)
			}
		}
		mem.Say(dm, ann, "/ping")
		synctest.Wait()
		if got := mem.Texts(dm.ID); len(got) != 1 || got[0] != "pong" {
			t.Fatalf("another chat got %q while %d conversations wait; want pong", got, users)
		}
		for i := range users {
			mem.Say(memory.Private(fmt.Sprint("g", i)), memory.User(fmt.Sprint("g", i), "U"), fmt.Sprint("N", i))
		}
		synctest.Wait()
		for i := range users {
			if got := mem.Texts(fmt.Sprint("g", i)); len(got) != 2 || got[1] != fmt.Sprint("Hello, N", i) {
				t.Fatalf("user %d got %q; want the greeting", i, got)
			}
		}
	})
}

// The handler timeout counts running time only: a wait in Next does not
// count, and the time before and after it does.
func TestHandlerTimeoutPausesInNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t, engine.WithHandlerTimeout(time.Minute))
		results := make(chan error, 2)
		e.OnCommand("slow", func(c *engine.Context) error {
			time.Sleep(40 * time.Second) // work
			if _, err := c.Next(c.Context(), nil); err != nil {
				return err
			}
			results <- c.Context().Err() // 40 s of a minute used
			time.Sleep(30 * time.Second) // more work: past the minute
			results <- c.Context().Err()
			return nil
		})
		runEngine(t, e)
		mem.Say(dm, ann, "/slow")
		time.Sleep(10 * time.Minute) // the user answers late
		mem.Say(dm, ann, "done")
		if err := <-results; err != nil {
			t.Fatalf("after 40 s of work and a 10-minute wait: %v; want the context alive", err)
		}
		if err := <-results; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("after 70 s of work: %v; want DeadlineExceeded", err)
		}
	})
}

// A wait with a ctx without a deadline ends after WithConversationWait;
// a ctx with its own deadline bounds it instead, however long.
func TestConversationWaitBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t, engine.WithConversationWait(2*time.Hour))
		waited := make(chan time.Duration, 2)
		e.OnCommand("wait", func(c *engine.Context) error {
			ctx := c.Context()
			if c.RawArgs() == "long" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 5*time.Hour)
				defer cancel()
			}
			start := time.Now()
			_, err := c.Next(ctx, nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Next = %v; want DeadlineExceeded", err)
			}
			waited <- time.Since(start)
			return nil
		})
		runEngine(t, e)
		mem.Say(dm, ann, "/wait")
		if d := <-waited; d != 2*time.Hour {
			t.Fatalf("waited %v; want the conversation bound, 2h", d)
		}
		mem.Say(dm, ann, "/wait long")
		if d := <-waited; d != 5*time.Hour {
			t.Fatalf("waited %v; want the ctx's own 5h", d)
		}
	})
}

// BenchmarkWaitingConversations measures what users waiting in a
// conversation cost: b.N users each in /greet, waiting for their name. It
// reports the heap per waiting user and for 10,000.
//
// Run: go test -run='^$' -bench=WaitingConversations -benchtime=10000x ./core/engine
func BenchmarkWaitingConversations(b *testing.B) {
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem), engine.WithInboundQueueSize(4))
	if err != nil {
		b.Fatal(err)
	}
	e.OnCommand("greet", greet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	before := heap()
	b.ResetTimer()
	for i := range b.N {
		mem.Say(memory.Private(fmt.Sprint("g", i)), memory.User(fmt.Sprint("g", i), "U"), "/greet")
	}
	for e.Stats().Sends.Delivered < uint64(b.N) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	perUser := float64(heap()-before) / float64(b.N)
	b.ReportMetric(perUser, "heapB/user")
	b.ReportMetric(perUser*10000/(1<<20), "MiB/10k-users")
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// SendAt with a SendID schedules a send once: a handler run again after a
// crash does not schedule its reminder twice.
func TestSendAtWithIDOnce(t *testing.T) {
	e, mem := newEngine(t)
	ctx := context.Background()
	for range 2 {
		id, err := e.SendAfter(ctx, time.Hour, mem.Name(), dm, platform.TextMessage("tea"), engine.SendID("remind:42"))
		if err != nil || id != "remind:42" {
			t.Fatalf("SendAfter = %q, %v; want remind:42", id, err)
		}
	}
	waiting, err := e.Scheduled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(waiting) != 1 {
		t.Fatalf("scheduled %v; want one send", waiting)
	}
}
