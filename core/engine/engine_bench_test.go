package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// BenchmarkEngineEvent: one op is one event end to end — HandleEvent, the
// matching of a command among 50 matchers, the handler, its one reply
// through the OutboundDispatcher and the default sender chain (Counters,
// DeadLetters, Retry, a 10 s per-attempt Timeout; logging to a no-op
// logger) to the memory adapter. Events go to 1,000 chats round-robin.
//
// Run: go test -run='^$' -bench=EngineEvent -benchmem ./core/engine
func BenchmarkEngineEvent(b *testing.B) {
	const chats = 1000
	mem := memory.New()
	e, err := engine.New(
		engine.WithAdapter(mem),
		engine.WithInboundQueueSize(1<<20),
		engine.WithDispatcherConfig(engine.DispatcherConfig{QueueSize: 1 << 20}),
	)
	if err != nil {
		b.Fatal(err)
	}
	noop := func(*engine.Context) error { return nil }
	for i := range 49 {
		e.OnCommand(fmt.Sprint("cmd", i), noop)
	}
	e.OnCommand("ping", func(c *engine.Context) error {
		c.ReplyText("pong")
		return nil
	})
	events := make([]platform.Event, chats)
	for i := range events {
		chat := memory.Private(fmt.Sprint(1000 + i))
		events[i] = platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat,
			From: memory.User(chat.ID, "user"), Text: "/ping", Time: time.Now()}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := e.HandleEvent(events[i%chats]); err != nil {
			b.Fatal(err)
		}
	}
	// The op ends when the reply is delivered: wait for the last ones.
	for e.Stats().Sends.Delivered < uint64(b.N) {
		time.Sleep(20 * time.Microsecond)
	}
	b.StopTimer()
	if err := e.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}
