package engine_test

import (
	"errors"
	"testing"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// A message that cannot be sent is refused at once, by Engine.Send as by
// SendAt and by a handler's Reply and Prompt: a permanent error wrapping
// platform.ErrInvalidMessage, never a dead letter.
func TestInvalidMessageRefusedAtOnce(t *testing.T) {
	e, mem := newEngine(t)
	var promptErr error
	e.OnCommand("empty", func(c *engine.Context) error {
		if _, err := c.Reply(platform.OutboundMessage{}).Result(); !errors.Is(err, platform.ErrInvalidMessage) || !platform.IsPermanent(err) {
			t.Errorf("Reply of an empty message: %v; want a permanent ErrInvalidMessage at once", err)
		}
		_, promptErr = c.Prompt(c.Context(), platform.OutboundMessage{})
		c.ReplyText("done")
		return nil
	})
	runEngine(t, e)

	f := e.Send(mem.Name(), dm, platform.OutboundMessage{})
	if _, err := f.Result(); !errors.Is(err, platform.ErrInvalidMessage) || !platform.IsPermanent(err) {
		t.Fatalf("Send of an empty message: %v; want a permanent ErrInvalidMessage at once", err)
	}
	mem.Say(dm, ann, "/empty")
	waitTexts(t, mem, dm.ID, "done")
	if !errors.Is(promptErr, engine.ErrPromptNotSent) || !errors.Is(promptErr, platform.ErrInvalidMessage) {
		t.Fatalf("Prompt of an empty message: %v; want ErrPromptNotSent and ErrInvalidMessage", promptErr)
	}
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := len(e.DeadLetters()); n != 0 {
		t.Fatalf("%d dead letters; want none", n)
	}
}
