// Package tally provides /add: counts kept in sessions, one for the chat
// and one for each user, each added to once per /add — exactly once,
// also when the handler runs again after a crash (a session's Update in a
// handler is an effect of its handling, known by its id).
package tally

import (
	"fmt"

	"github.com/heraldbot/herald/core/engine"
)

// The counts /add keeps.
var (
	chatCount = engine.NewChatSession[int]("tally", 0)
	userCount = engine.NewUserSession[int]("tally", 0)
)

// Plugin registers /add. Its zero value is ready to use; the counts are
// in the engine's session store.
type Plugin struct{}

// New returns the tally plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "tally".
func (*Plugin) Name() string { return "tally" }

// Register adds the /add command to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("add", handle, engine.Description("add one to the chat's and your own count"))
	return nil
}

// Reply is /add's answer.
func Reply(chat, user int) string { return fmt.Sprintf("chat %d, you %d", chat, user) }

func handle(c *engine.Context) error {
	inc := func(n *int) error { *n++; return nil }
	chat, err := chatCount.Update(c, inc)
	if err != nil {
		return err
	}
	user, err := userCount.Update(c, inc)
	if err != nil {
		return err
	}
	c.ReplyText(Reply(chat, user))
	return nil
}
