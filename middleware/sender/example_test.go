package sender_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

func ExampleDefault() {
	// A stand-in for an adapter's sender: it asks for a short pause once,
	// and the user "blocked" has blocked the bot.
	calls := 0
	telegram := platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
		calls++
		if calls == 1 {
			return platform.SendResult{}, platform.NewRetryAfter(10*time.Millisecond, errors.New("429 Too Many Requests"))
		}
		if req.Target.ID == "blocked" {
			return platform.SendResult{}, platform.Permanent(errors.New("403 Forbidden: bot was blocked by the user"))
		}
		return platform.SendResult{MessageID: "7", ChatID: req.Target.ID}, nil
	})

	metrics, err := sender.NewMetrics(prometheus.NewRegistry()) // a bot passes prometheus.DefaultRegisterer
	if err != nil {
		fmt.Println(err)
		return
	}
	counters := new(sender.Counters)
	deadLetters := sender.NewDeadLetterStore(0)
	chain := sender.Default(sender.DefaultConfig{
		Metrics:     metrics,
		Logger:      zap.NewNop(),
		Counters:    counters,
		DeadLetters: deadLetters,
		Retry:       sender.RetryConfig{MaxAttempts: 3},
		RateLimit:   sender.TelegramLimits(),
		Timeout:     5 * time.Second,
	})
	s := chain(telegram)

	ctx := context.Background()
	res, err := s.Send(ctx, platform.SendRequest{Platform: "telegram", Target: platform.Chat{ID: "42"}, Message: platform.TextMessage("hello")})
	fmt.Println(res.MessageID, err)
	_, err = s.Send(ctx, platform.SendRequest{Platform: "telegram", Target: platform.Chat{ID: "blocked"}, Message: platform.TextMessage("hello")})
	fmt.Println(err)
	fmt.Printf("%+v\n", counters.Snapshot())
	for _, dl := range deadLetters.List() {
		fmt.Println(dl.Request.Target.ID, dl.Attempts, sender.OutcomeOf(dl.Err))
	}
	// Output:
	// 7 <nil>
	// sender: giving up after 1 attempt: 403 Forbidden: bot was blocked by the user
	// {Delivered:1 Failed:1 DeadLettered:1 Attempts:3 Retries:1}
	// blocked 1 permanent
}

func ExampleChain() {
	tag := func(name string) sender.SenderDecorator {
		return func(next platform.Sender) platform.Sender {
			return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
				fmt.Println("enter", name)
				defer fmt.Println("leave", name)
				return next.Send(ctx, req)
			})
		}
	}
	base := platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
		fmt.Println("platform send")
		return platform.SendResult{}, nil
	})
	s := sender.Chain(tag("outer"), nil, tag("inner"))(base)
	_, _ = s.Send(context.Background(), platform.SendRequest{})
	// Output:
	// enter outer
	// enter inner
	// platform send
	// leave inner
	// leave outer
}

func ExampleDeadLetterStore_Drain() {
	store := sender.NewDeadLetterStore(100)
	for _, chat := range []string{"a", "b", "a"} {
		store.Add(sender.DeadLetter{
			Request: platform.SendRequest{Target: platform.Chat{ID: chat}, Message: platform.TextMessage("to " + chat)},
			Err:     errors.New("down"),
		})
	}
	// Replay oldest first, so each chat's letters keep their order. An engine
	// submits each one to its outbound dispatcher here.
	for _, dl := range store.Drain() {
		fmt.Println(dl.Request.Target.ID, dl.Request.Message.Text)
	}
	fmt.Println(store.Len())
	// Output:
	// a to a
	// b to b
	// a to a
	// 0
}

// A store bounded in bytes as well as in letters: the dead letters of
// sends of files as Data count the files' bytes, those of files sent by
// reference (FileID, URL) do not.
func ExampleNewDeadLetterStoreLimits() {
	store := sender.NewDeadLetterStoreLimits(100, 3<<20)
	file := func(data []byte) sender.DeadLetter {
		return sender.DeadLetter{Request: platform.SendRequest{Target: platform.Chat{ID: "a"}, Message: platform.OutboundMessage{
			Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: data}}}}}
	}
	for range 4 {
		store.Add(file(make([]byte, 1<<20)))
	}
	fmt.Println(store.Len(), store.Dropped(), store.Bytes() <= store.MaxBytes())
	store.Add(sender.DeadLetter{Request: platform.SendRequest{Target: platform.Chat{ID: "a"}, Message: platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: "upload-17"}}}}})
	fmt.Println(store.Len(), store.Dropped())
	// Output:
	// 2 2 true
	// 3 2
}

// A decorator of your own that records each send once, with its final
// outcome: Observe calls it when the send is over, however many attempts
// and waits it took — also under the engine, where a waiting send is run
// again later instead of holding a worker.
func ExampleObserve() {
	var sends, attempts atomic.Int64
	countSends := sender.Observe(func(_ context.Context, o sender.Outcome) {
		sends.Add(1)
		attempts.Add(int64(o.Attempts))
	})

	calls := 0
	flaky := platform.SenderFunc(func(context.Context, platform.SendRequest) (platform.SendResult, error) {
		calls++
		if calls < 3 {
			return platform.SendResult{}, errors.New("502 Bad Gateway")
		}
		return platform.SendResult{MessageID: "7"}, nil
	})
	s := sender.Chain(countSends, sender.Retry(sender.RetryConfig{BaseBackoff: time.Millisecond}))(flaky)
	res, err := s.Send(context.Background(), platform.SendRequest{Target: platform.Chat{ID: "42"}, Message: platform.TextMessage("hi")})
	fmt.Println(res.MessageID, err)
	fmt.Println(sends.Load(), "send,", attempts.Load(), "attempts")
	// Output:
	// 7 <nil>
	// 1 send, 3 attempts
}
