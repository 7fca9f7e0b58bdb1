package engine_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// /cancel ends the user's waiting conversation: Prompt returns
// ErrCancelled, the handler returns it, the engine replies and counts no
// error; without a conversation, /cancel goes to the matchers. Another
// user's /cancel does not end Ann's conversation.
func TestCancelCommand(t *testing.T) {
	var hook atomic.Int32
	var gotErr error
	e, mem := newEngine(t, engine.WithCancelCommand("cancel", "Cancelled."),
		engine.WithOnError(func(c *engine.Context, err error) { hook.Add(1) }))
	e.OnCommand("register", func(c *engine.Context) error {
		name, err := c.Prompt(c.Context(), platform.TextMessage("Your name?"))
		if err != nil {
			gotErr = err
			return err
		}
		c.ReplyText("Hello, " + name.Text)
		return nil
	}, engine.Block())
	e.OnCommand("cancel", func(c *engine.Context) error {
		c.ReplyText("Nothing to cancel.")
		return nil
	})
	runEngine(t, e)

	mem.Say(group, ann, "/register")
	waitTexts(t, mem, group.ID, "Your name?")
	mem.Say(group, bob, "/cancel") // Bob has no conversation
	waitTexts(t, mem, group.ID, "Your name?", "Nothing to cancel.")
	mem.Say(group, ann, "/cancel")
	waitTexts(t, mem, group.ID, "Your name?", "Nothing to cancel.", "Cancelled.")
	mem.Say(group, ann, "/cancel")
	waitTexts(t, mem, group.ID, "Your name?", "Nothing to cancel.", "Cancelled.", "Nothing to cancel.")
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(gotErr, engine.ErrCancelled) {
		t.Fatalf("Prompt returned %v; want ErrCancelled", gotErr)
	}
	if n := hook.Load(); n != 0 {
		t.Fatalf("the error hook ran %d times; want 0", n)
	}
	if st := e.Stats(); st.HandlerErrors != 0 {
		t.Fatalf("%d handler errors; want 0", st.HandlerErrors)
	}
}
