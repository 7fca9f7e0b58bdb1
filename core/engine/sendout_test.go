package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Engine.Send joins the chat's queue with the handlers' replies, in the
// order the calls returned: from a handler, and from outside while the
// chat's first send is still being made.
func TestEngineSendInOrderWithReplies(t *testing.T) {
	e, mem := newEngine(t)
	replied, proceed := make(chan struct{}), make(chan struct{})
	e.OnCommand("go", func(c *engine.Context) error {
		c.ReplyText("r1")
		e.Send(c.Platform(), c.Chat(), platform.TextMessage("s1"))
		c.ReplyText("r2")
		close(replied)
		<-proceed
		c.ReplyText("r3")
		return nil
	})
	runEngine(t, e)
	mem.SlowNext(dm.ID, 50*time.Millisecond) // everything queues behind r1
	mem.Say(dm, ann, "/go")
	<-replied
	f := e.Send(mem.Name(), dm, platform.TextMessage("s2"))
	close(proceed)
	res, err := f.Wait(testCtx(t))
	if err != nil || res.MessageID == "" {
		t.Fatalf("s2: %+v, %v", res, err)
	}
	if _, err := mem.WaitSent(testCtx(t), dm.ID, 5); err != nil {
		t.Fatal(err)
	}
	if got, want := mem.Texts(dm.ID), []string{"r1", "s1", "r2", "s2", "r3"}; !slices.Equal(got, want) {
		t.Fatalf("chat got %q; want %q", got, want)
	}
}

// Sends from several goroutines and replies of handlers, to one chat,
// arrive in the order they were made. Run with -race.
func TestEngineSendInterleaved(t *testing.T) {
	e, mem := newEngine(t, engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1024}))
	var mu sync.Mutex // makes "made" the order the calls returned
	seq := 0
	made := func(send func(string) *future.Future[platform.SendResult]) {
		mu.Lock()
		defer mu.Unlock()
		seq++
		if _, err := send(strconv.Itoa(seq)).Result(); err != nil && !errors.Is(err, future.ErrNotReady) {
			t.Error(err)
		}
	}
	e.OnCommand("r", func(c *engine.Context) error {
		for range 20 {
			made(c.ReplyText)
		}
		return nil
	})
	runEngine(t, e)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				made(func(text string) *future.Future[platform.SendResult] {
					return e.Send(mem.Name(), dm, platform.TextMessage(text))
				})
			}
		})
	}
	for range 4 {
		mem.Say(dm, ann, "/r")
	}
	wg.Wait()
	sent, err := mem.WaitSent(testCtx(t), dm.ID, 160)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sent {
		if s.Message.Text != strconv.Itoa(i+1) {
			t.Fatalf("send %d is %q: out of order", i+1, s.Message.Text)
		}
	}
}

// Engine.Send goes through the whole chain: rate limits, retries, dead
// letters; and refuses what it cannot send with an error at once.
func TestEngineSendThroughTheChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t, engine.WithRateLimit("memory", sender.RateLimitConfig{PerChat: 1}))
		runEngine(t, e)
		ctx := context.Background()

		var fs []*future.Future[platform.SendResult]
		for i := range 3 {
			fs = append(fs, e.Send(mem.Name(), dm, platform.TextMessage(fmt.Sprint(i))))
		}
		for _, f := range fs {
			if _, err := f.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		sent := mem.Sent(dm.ID)
		for i := 1; i < len(sent); i++ {
			if gap := sent[i].At.Sub(sent[i-1].At); gap < time.Second {
				t.Errorf("sends %d and %d %v apart; want the chat's limit of 1/s", i-1, i, gap)
			}
		}

		mem.FailNext(group.ID, errors.New("flaky"))
		if _, err := e.Send(mem.Name(), group, platform.TextMessage("retried")).Wait(ctx); err != nil {
			t.Fatalf("a send failing once: %v", err)
		}
		mem.FailNext(group.ID, platform.Permanent(errors.New("blocked")))
		if _, err := e.Send(mem.Name(), group, platform.TextMessage("dead")).Wait(ctx); err == nil {
			t.Fatal("a permanent failure: no error")
		}
		if dls := e.DeadLetters(); len(dls) != 1 || dls[0].Request.Message.Text != "dead" {
			t.Fatalf("dead letters %+v", dls)
		}

		res, err := e.Send(mem.Name(), dm, platform.TextMessage("draft")).Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Edit(mem.Name(), dm, res.MessageID, platform.TextMessage("final")).Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if shown := mem.Shown(dm.ID); shown[len(shown)-1].Message.Text != "final" {
			t.Fatalf("after Edit the chat shows %q", shown[len(shown)-1].Message.Text)
		}

		for _, tc := range []struct {
			name string
			f    *future.Future[platform.SendResult]
			want error
		}{
			{"unknown adapter", e.Send("nope", dm, platform.TextMessage("x")), engine.ErrNoSender},
			{"no chat", e.Send(mem.Name(), platform.Chat{}, platform.TextMessage("x")), engine.ErrNoChat},
			{"edit without id", e.Edit(mem.Name(), dm, "", platform.TextMessage("x")), platform.ErrInvalidMessage},
		} {
			if _, err := tc.f.Result(); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v; want %v at once", tc.name, err, tc.want)
			}
		}
		if err := e.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Send(mem.Name(), dm, platform.TextMessage("late")).Result(); !errors.Is(err, engine.ErrDispatcherClosed) {
			t.Errorf("after Shutdown: %v; want ErrDispatcherClosed", err)
		}
	})
}

// idJournal is a journal.Log that keeps sends only, recognizing repeated ids
// as JetStream's duplicate window does.
type idJournal struct {
	mu    sync.Mutex
	ids   map[string]bool
	sends []journal.Send
}

func newIDJournal() *idJournal { return &idJournal{ids: map[string]bool{}} }

type nopRecord struct{}

func (nopRecord) Done(context.Context, *platform.SendResult) error { return nil }
func (nopRecord) Save(context.Context, *platform.Progress) error   { return nil }

func (j *idJournal) RecordEvent(context.Context, platform.Event) (journal.Record, bool, error) {
	return nopRecord{}, false, nil
}

func (j *idJournal) RecordSend(_ context.Context, s journal.Send) (journal.Record, journal.Appended, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if s.ID != "" && j.ids[s.ID] {
		return nil, journal.Appended{Duplicate: true}, nil
	}
	j.ids[s.ID] = true
	j.sends = append(j.sends, s)
	return nopRecord{}, journal.Appended{}, nil
}

func (j *idJournal) Pending(context.Context) (journal.Pending, error) {
	return journal.Pending{}, nil
}
func (j *idJournal) Keep(sender.DeadLetter) (string, error) { return "", nil }
func (j *idJournal) Forget(...string) error                 { return nil }

func (j *idJournal) journaled() []journal.Send {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.sends)
}

// With a journal, Engine.Send records the send before it returns; a send
// repeated under its SendID is not made again, and its result says so.
func TestEngineSendJournaled(t *testing.T) {
	j := newIDJournal()
	e, mem := newEngine(t, engine.WithJournal(journal.NewLocal(j)))
	runEngine(t, e)
	ctx := testCtx(t)
	for i := range 2 {
		res, err := e.Send(mem.Name(), dm, platform.TextMessage("once"), engine.SendID("n-1")).Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Duplicate != (i == 1) {
			t.Fatalf("send %d under the same SendID: Duplicate %v", i+1, res.Duplicate)
		}
		res, err = e.Send(mem.Name(), dm, platform.TextMessage("twice")).Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Duplicate {
			t.Fatal("a send without an id is never a duplicate")
		}
	}
	if got, want := mem.Texts(dm.ID), []string{"once", "twice", "twice"}; !slices.Equal(got, want) {
		t.Fatalf("chat got %q; want %q", got, want)
	}
	js := j.journaled()
	if len(js) != 3 || js[0].Request.Message.Text != "once" || js[0].ID == "" || js[1].ID != "" {
		t.Fatalf("journaled %+v", js)
	}
}
