package memory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/internal/leakcheck"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/platform"
)

// TestMain fails the run if the tests leave goroutines behind.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

func send(a *memory.Adapter, chat, text string) (platform.SendResult, error) {
	return a.Sender().Send(context.Background(), platform.SendRequest{Platform: a.Name(), Target: memory.Private(chat), Message: platform.TextMessage(text)})
}

func TestEventsBeforeAndDuringRun(t *testing.T) {
	a := memory.New(memory.WithName("mem"))
	first := a.Say(memory.Private("1"), memory.User("u", "Ann"), "early")
	if first.Platform != "mem" || first.ID == "" || first.MessageID == "" || first.Time.IsZero() || first.Kind != platform.EventMessage {
		t.Fatalf("event = %+v", first)
	}
	var mu sync.Mutex
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	started := make(chan struct{})
	go func() {
		done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
			mu.Lock()
			got = append(got, ev.Text)
			if len(got) == 1 {
				close(started)
			}
			mu.Unlock()
			return nil
		}})
	}()
	<-started
	a.Say(memory.Private("1"), memory.User("u", "Ann"), "late")
	a.Press(memory.Private("1"), memory.User("u", "Ann"), "btn")
	if err := a.Run(ctx, platform.Inbound{Handle: func(platform.Event) error { return nil }}); !errors.Is(err, memory.ErrAlreadyRunning) {
		t.Fatalf("second Run = %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if len(got) != 3 || got[0] != "early" || got[1] != "late" || got[2] != "btn" {
		t.Fatalf("delivered %v", got)
	}
}

func TestSenderRecordsAndWaits(t *testing.T) {
	a := memory.New()
	go func() {
		for _, s := range []string{"a", "b", "c"} {
			if _, err := send(a, "9", s); err != nil {
				t.Error(err)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent, err := a.WaitSent(ctx, "9", 3)
	if err != nil || len(sent) != 3 || sent[2].Message.Text != "c" || sent[0].MessageID == "" {
		t.Fatalf("WaitSent = %+v, %v", sent, err)
	}
	if got := a.Texts("9"); len(got) != 3 || got[1] != "b" {
		t.Fatalf("Texts = %v", got)
	}
	short, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if got, err := a.WaitSent(short, "9", 5); !errors.Is(err, context.Canceled) || len(got) != 3 {
		t.Fatalf("WaitSent past the end = %d, %v", len(got), err)
	}
}

func TestInjectedFailures(t *testing.T) {
	a := memory.New()
	perm := platform.Permanent(errors.New("blocked"))
	a.FailNext("1", platform.NewRetryAfter(time.Second, nil), perm)
	if _, err := send(a, "2", "other chat unaffected"); err != nil {
		t.Fatal(err)
	}
	if _, err := send(a, "1", "x"); err == nil {
		t.Fatal("first send did not fail")
	} else if d, ok := platform.RetryAfterOf(err); !ok || d != time.Second {
		t.Fatalf("first failure = %v", err)
	}
	if _, err := send(a, "1", "x"); !platform.IsPermanent(err) {
		t.Fatalf("second failure = %v", err)
	}
	if _, err := send(a, "1", "x"); err != nil {
		t.Fatalf("third send = %v", err)
	}
	if a.Calls("1") != 3 || len(a.Sent("1")) != 1 {
		t.Fatalf("calls %d, sent %d", a.Calls("1"), len(a.Sent("1")))
	}

	a.PanicNext("", "boom")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		send(a, "3", "x")
	}()

	a.FailWhen(func(req platform.SendRequest) error {
		if req.Message.Text == "bad" {
			return errors.New("rule")
		}
		return nil
	})
	if _, err := send(a, "4", "bad"); err == nil {
		t.Fatal("rule did not fail the send")
	}
	if _, err := a.Sender().Send(context.Background(), platform.SendRequest{Target: memory.Private("5")}); !platform.IsPermanent(err) {
		t.Fatalf("empty message = %v; want a permanent error", err)
	}
}

func TestSlowNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := memory.New()
		a.SlowNext("1", 5*time.Second)
		start := time.Now()
		if _, err := send(a, "1", "x"); err != nil || time.Since(start) != 5*time.Second {
			t.Fatalf("slow send = %v after %v", err, time.Since(start))
		}
		a.SlowNext("1", time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := a.Sender().Send(ctx, platform.SendRequest{Target: memory.Private("1"), Message: platform.TextMessage("x")})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slow send past its deadline = %v", err)
		}
	})
}
