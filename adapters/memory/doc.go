// Package memory provides an in-memory platform adapter for testing bots.
//
// A test creates an Adapter, gives it to the engine with engine.WithAdapter,
// runs the engine, and then talks to the bot as a user would: Say injects a
// message, Press a button press, and WaitSent waits for the replies a chat
// received. Failures can be injected into the adapter's Sender (a
// retry-after, a permanent error, a panic, a slow send) to test how a bot
// behaves when the platform misbehaves.
//
//	mem := memory.New()
//	e, _ := engine.New(engine.WithAdapter(mem))
//	// register handlers, then:
//	go e.Run(ctx)
//	mem.Say(memory.Private("1"), memory.User("1", "Ann"), "/ping")
//	sent, err := mem.WaitSent(ctx, "1", 1)
package memory
