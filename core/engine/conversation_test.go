package engine_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
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
		e.OnCommand("wait", func(c *engine.Context) error {
			ctx := c.Context()
			if c.RawArgs() == "long" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 5*time.Hour)
				defer cancel()
			}
			_, err := c.Next(ctx, nil)
			if errors.Is(err, engine.ErrWaiting) {
				return err
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Next = %v; want DeadlineExceeded", err)
			}
			c.ReplyText("timed out")
			return nil
		})
		runEngine(t, e)
		for i, tc := range []struct {
			cmd  string
			want time.Duration
		}{{"/wait", 2 * time.Hour}, {"/wait long", 5 * time.Hour}} {
			start := time.Now()
			mem.Say(dm, ann, tc.cmd)
			if _, err := mem.WaitSent(context.Background(), dm.ID, i+1); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != tc.want {
				t.Fatalf("%s waited %v; want %v", tc.cmd, d, tc.want)
			}
		}
	})
}

// discard is an adapter whose sender delivers every send and keeps
// nothing, so that benchmarks measure the engine, not what a test adapter
// records.
type discard struct{ n atomic.Int64 }

func (*discard) Name() string { return "discard" }
func (*discard) Run(ctx context.Context, _ platform.Inbound) error {
	<-ctx.Done()
	return nil
}
func (d *discard) Sender() platform.Sender {
	return platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
		return platform.SendResult{MessageID: strconv.FormatInt(d.n.Add(1), 10)}, nil
	})
}

// benchEngine returns a running engine on a discard adapter, without rate
// limits, with room for every chat's events and sends at once.
func benchEngine(b *testing.B) (*engine.Engine, *discard) {
	d := &discard{}
	e, err := engine.New(engine.WithAdapter(d), engine.WithRateLimit(d.Name(), sender.RateLimitConfig{Off: true}),
		engine.WithInboundQueueSize(1<<20), engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1 << 20}))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	return e, d
}

// say hands the engine a message from user u in a private chat of u's.
func say(b *testing.B, e *engine.Engine, u int, id, text string) {
	chat := platform.Chat{ID: strconv.Itoa(u), Type: platform.ChatPrivate}
	err := e.HandleEvent(platform.Event{ID: id, Platform: "discard", Kind: platform.EventMessage, Chat: chat,
		From: platform.User{ID: chat.ID, Name: "U"}, Text: text})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWaitingConversations measures what users waiting in a
// conversation cost: b.N users each in /greet, waiting for their name
// after its one Prompt. It reports the heap and stacks per waiting user,
// for a million, and the goroutines left while they wait (none per
// conversation: a waiting conversation is its log).
//
// Run: go test -run='^$' -bench=WaitingConversations -benchtime=1000000x ./core/engine
func BenchmarkWaitingConversations(b *testing.B) {
	e, _ := benchEngine(b)
	e.OnCommand("greet", greet)
	before, goroutines := heap(), runtime.NumGoroutine()
	b.ResetTimer()
	for i := range b.N {
		say(b, e, i, "s"+strconv.Itoa(i), "/greet")
	}
	for e.Stats().Sends.Delivered < uint64(b.N) {
		time.Sleep(time.Millisecond) // a benchmark's wait for the last questions
	}
	b.StopTimer()
	perUser := float64(heap()-before) / float64(b.N)
	b.ReportMetric(perUser, "B/user")
	b.ReportMetric(perUser*1e6/(1<<30), "GiB/1M-users")
	// The executors' idle workers end a second after their last task.
	for deadline := time.Now().Add(3 * time.Second); runtime.NumGoroutine() > goroutines && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines), "goroutines")
}

// BenchmarkConversationResume measures a conversation going on: users in a
// three-step conversation (three Prompts, then a reply) answer its steps,
// and each op is one answer that resumes a waiting conversation — a replay
// of its log up to its wait, and the next question sent. It reports the
// CPU time per resume (all goroutines, the sends included).
//
// Run: go test -run='^$' -bench=ConversationResume -benchtime=30000x ./core/engine
func BenchmarkConversationResume(b *testing.B) {
	e, _ := benchEngine(b)
	e.OnCommand("three", func(c *engine.Context) error {
		var answers []string
		for _, q := range []string{"One?", "Two?", "Three?"} {
			ev, err := c.Prompt(c.Context(), platform.TextMessage(q))
			if err != nil {
				return err
			}
			answers = append(answers, ev.Text)
		}
		c.ReplyText(strings.Join(answers, ","))
		return nil
	})
	users := max((b.N+2)/3, 1) // at most three answers each: the conversation's steps
	for u := range users {
		say(b, e, u, "s"+strconv.Itoa(u), "/three")
	}
	for e.Stats().Sends.Delivered < uint64(users) {
		time.Sleep(time.Millisecond) // the setup's wait for the first questions
	}
	start := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		u, step := i%users, i/users
		say(b, e, u, "a"+strconv.Itoa(step)+"-"+strconv.Itoa(u), "answer")
	}
	for e.Stats().Sends.Delivered < uint64(users+b.N) {
		time.Sleep(100 * time.Microsecond) // a benchmark's wait for the last sends
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/resume")
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

// A handler that waits holds the rest of its event's handlers until its
// conversation ends; a handler before it (a lower Priority) runs at once.
// The chat's events meanwhile reach the matchers: here, Bob's in the group.
func TestLaterHandlersWaitForTheConversation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		e.OnCommand("ask", func(c *engine.Context) error {
			a, err := c.Prompt(c.Context(), platform.TextMessage("?"))
			if err != nil {
				return err
			}
			c.ReplyText("answer " + a.Text)
			return nil
		})
		e.OnMessage(func(c *engine.Context) error { c.ReplyText("first " + c.Text()); return nil }, engine.Priority(-1))
		e.OnMessage(func(c *engine.Context) error { c.ReplyText("later " + c.Text()); return nil }, engine.Priority(1))
		runEngine(t, e)
		mem.Say(group, ann, "/ask")
		synctest.Wait()
		mem.Say(group, bob, "hello")
		synctest.Wait()
		mem.Say(group, ann, "42")
		synctest.Wait()
		want := []string{"first /ask", "?", "first hello", "later hello", "answer 42", "later /ask"}
		if got := mem.Texts(group.ID); !slices.Equal(got, want) {
			t.Fatalf("the group got %q; want %q", got, want)
		}
	})
}
