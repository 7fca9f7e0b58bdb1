// Package greet provides the /greet command: a two-step conversation,
// written as plain Go with Context.Prompt, that asks for the user's name
// and greets them by it.
package greet

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// Question is what /greet asks.
const Question = "What is your name?"

// Patience is how long /greet waits for the answer. The engine's handler
// timeout (WithHandlerTimeout, 1 minute by default) bounds the wait too, so
// Patience stays below it.
const Patience = 45 * time.Second

// Plugin registers /greet. Its zero value is ready to use; it holds no
// state, so one Plugin may serve any number of engines at once.
type Plugin struct{}

// New returns the greet plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "greet".
func (*Plugin) Name() string { return "greet" }

// Register adds the /greet command to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("greet", handle, engine.Description("ask your name, then greet you by it"))
	return nil
}

// handle asks, waits for the answer, and greets. A user who does not
// answer within Patience is told so; their later messages go to the other
// handlers again.
func handle(c *engine.Context) error {
	ctx, cancel := context.WithTimeout(c.Context(), Patience)
	defer cancel()
	answer, err := c.Prompt(ctx, platform.TextMessage(Question))
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		c.ReplyText("No answer; ask me again with /greet.")
		return nil
	case err != nil:
		return err
	}
	name := strings.TrimSpace(answer.Text)
	if name == "" || strings.HasPrefix(name, "/") {
		c.ReplyText("That does not look like a name; try /greet again.")
		return nil
	}
	c.ReplyText("Nice to meet you, " + name + "!")
	return nil
}
