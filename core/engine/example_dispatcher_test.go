package engine_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/heraldbot/herald/core/engine"
)

func ExampleOutboundDispatcher() {
	d := engine.NewOutboundDispatcher(context.Background(), engine.DispatcherConfig{
		MaxInflight: 4,               // at most 4 sends at once, across chats
		QueueSize:   16,              // at most 16 sends waiting per chat
		SendTimeout: 5 * time.Second, // deadline of each send's context
	})

	var mu sync.Mutex
	var sent []string
	for i := 1; i <= 3; i++ {
		err := d.Submit("telegram:42", func(ctx context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, fmt.Sprint("message ", i))
			return nil
		})
		if err != nil {
			fmt.Println("refused:", err)
		}
	}

	if err := d.Shutdown(context.Background()); err != nil {
		fmt.Println("shutdown:", err)
	}
	fmt.Println(sent)
	// Output: [message 1 message 2 message 3]
}

func ExampleOutboundDispatcher_Shutdown() {
	d := engine.NewOutboundDispatcher(context.Background(), engine.DispatcherConfig{})
	_ = d.Submit("webchat:tab-1", func(ctx context.Context) error {
		<-ctx.Done() // a send that only ends when its context does
		return ctx.Err()
	})

	// Give accepted work a grace period, then interrupt what is left.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		fmt.Println("drain:", err)
		d.ForceClose()
		_ = d.Shutdown(context.Background()) // returns once the task saw the cancellation
	}
	fmt.Println(d.Submit("webchat:tab-1", func(context.Context) error { return nil }))
	st := d.Stats()
	fmt.Println("completed:", st.Completed, "failed:", st.Failed)
	// Output:
	// drain: context deadline exceeded
	// engine: dispatcher closed
	// completed: 1 failed: 1
}
