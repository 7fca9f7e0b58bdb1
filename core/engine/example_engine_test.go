package engine_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// A handler answers with ctx.Reply, which returns at once; Future.Wait
// gives the send's result when the handler needs it.
func ExampleEngine() {
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem))
	if err != nil {
		panic(err)
	}

	e.OnCommand("echo", func(c *engine.Context) error {
		// Reply queues the send and returns a Future at once.
		f := c.ReplyText(strings.Join(c.Args(), " "))

		// Wait only when the result matters, here to learn the message ID.
		res, err := f.Wait(c.Context())
		if err != nil {
			return err
		}
		c.Logger().Info("echoed", zap.String("message_id", res.MessageID))
		return nil
	}, engine.Description("repeat what you say"))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()

	mem.Say(memory.Private("42"), memory.User("42", "Ann"), `/echo hello "wide world"`)
	wait, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	sent, _ := mem.WaitSent(wait, "42", 1)
	fmt.Println(sent[0].Message.Text)

	cancel()
	fmt.Println(<-done)
	// Output:
	// hello wide world
	// <nil>
}

// Replies to one chat are sent in the order they were made, without
// waiting for each other.
func ExampleContext_Reply() {
	mem := memory.New()
	e, _ := engine.New(engine.WithAdapter(mem))
	e.OnCommand("count", func(c *engine.Context) error {
		for i := 1; i <= 3; i++ {
			c.ReplyText(fmt.Sprint(i)) // no Wait: the dispatcher keeps the order
		}
		return nil
	})
	_ = e.HandleEvent(platform.Event{
		Platform: mem.Name(), Kind: platform.EventMessage,
		Chat: memory.Private("7"), From: memory.User("7", "Bob"), Text: "/count",
	})
	_ = e.Shutdown(context.Background()) // sends every pending reply
	fmt.Println(mem.Texts("7"))
	// Output: [1 2 3]
}

// A menu updated in place: the button press names the message it is under,
// and Edit replaces that message's text and buttons.
func ExampleContext_Edit() {
	mem := memory.New()
	e, _ := engine.New(engine.WithAdapter(mem))
	e.OnCommand("drink", func(c *engine.Context) error {
		c.Reply(platform.OutboundMessage{Text: "Tea or coffee?", Buttons: [][]platform.Button{{
			{Text: "Tea", Data: "tea"}, {Text: "Coffee", Data: "coffee"},
		}}})
		return nil
	})
	e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
		c.Edit(c.Event().MessageID, platform.TextMessage("One "+c.Text()+", coming up."))
		return nil
	})
	chat, ann := memory.Private("7"), memory.User("7", "Ann")
	_ = e.HandleEvent(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: ann, Text: "/drink"})
	wait, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	menu, _ := mem.WaitSent(wait, "7", 1)
	_ = e.HandleEvent(platform.Event{
		Platform: mem.Name(), Kind: platform.EventCallback, Chat: chat, From: ann,
		MessageID: menu[0].MessageID, Text: "tea",
	})
	_ = e.Shutdown(context.Background())
	for _, m := range mem.Shown("7") {
		fmt.Printf("%s (%d button rows)\n", m.Message.Text, len(m.Message.Buttons))
	}
	// Output: One tea, coming up. (0 button rows)
}

// A conversation written as plain Go: Prompt asks, and returns the user's
// answer, which goes to this handler rather than to the matchers.
func ExampleContext_Prompt() {
	mem := memory.New()
	e, _ := engine.New(engine.WithAdapter(mem))
	e.OnCommand("greet", func(c *engine.Context) error {
		ctx, cancel := context.WithTimeout(c.Context(), time.Minute) // users may never answer
		defer cancel()
		answer, err := c.Prompt(ctx, platform.TextMessage("What is your name?"))
		if err != nil {
			return err
		}
		c.ReplyText("Nice to meet you, " + answer.Text + ".")
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()

	chat, ann := memory.Private("7"), memory.User("7", "Ann")
	wait, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	mem.Say(chat, ann, "/greet")
	_, _ = mem.WaitSent(wait, "7", 1)
	mem.Say(chat, ann, "Ann")
	sent, _ := mem.WaitSent(wait, "7", 2)
	for _, s := range sent {
		fmt.Println(s.Message.Text)
	}
	cancel()
	<-done
	// Output:
	// What is your name?
	// Nice to meet you, Ann.
}

// Middleware wraps handlers as net/http middleware wraps a Handler: here
// every handler is timed, and one command is kept to its owner.
func ExampleMiddleware() {
	timed := func(next engine.Handler) engine.Handler {
		return func(c *engine.Context) error {
			start := time.Now()
			err := next(c)
			c.Logger().Debug("handled", zap.Duration("took", time.Since(start)))
			return err
		}
	}
	ownerOnly := func(next engine.Handler) engine.Handler {
		return func(c *engine.Context) error {
			if c.From().ID != "1" {
				c.ReplyText("Sorry, only the owner may do that.")
				return nil // the handler does not run
			}
			return next(c)
		}
	}
	mem := memory.New()
	e, _ := engine.New(engine.WithAdapter(mem), engine.WithMiddleware(timed))
	e.OnCommand("restart", func(c *engine.Context) error {
		c.ReplyText("Restarting…")
		return nil
	}, engine.Wrap(ownerOnly))

	chat := memory.Group("g")
	for _, from := range []platform.User{memory.User("2", "Bob"), memory.User("1", "Ann")} {
		_ = e.HandleEvent(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: from, Text: "/restart"})
	}
	_ = e.Shutdown(context.Background())
	fmt.Println(mem.Texts("g"))
	// Output: [Sorry, only the owner may do that. Restarting…]
}
