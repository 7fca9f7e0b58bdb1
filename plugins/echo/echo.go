// Package echo provides the /echo command: it repeats the text after it.
package echo

import "github.com/heraldbot/herald/core/engine"

// Usage is the reply to /echo without text.
const Usage = "Usage: /echo <text>"

// Plugin registers /echo. Its zero value is ready to use.
type Plugin struct{}

// New returns the echo plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "echo".
func (*Plugin) Name() string { return "echo" }

// Register adds the /echo command to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("echo", func(c *engine.Context) error {
		if c.RawArgs() == "" {
			c.ReplyText(Usage)
			return nil
		}
		c.ReplyText(c.RawArgs())
		return nil
	}, engine.Description("repeat your text"))
	return nil
}
