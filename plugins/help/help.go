// Package help provides the /help command: it lists the engine's commands
// with their descriptions.
package help

import (
	"strings"

	"github.com/heraldbot/herald/core/engine"
)

// Plugin registers /help. Its zero value is ready to use.
type Plugin struct{}

// New returns the help plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "help".
func (*Plugin) Name() string { return "help" }

// Register adds the /help command (alias /start) to e. The list is built
// when /help is used, so it includes commands registered later.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("help", func(c *engine.Context) error {
		c.ReplyText(Text(e.Matchers()))
		return nil
	}, engine.Aliases("start"), engine.Description("list the commands"))
	return nil
}

// Text renders the help for the given matchers: one line per command, in
// the order the engine tries them, with its aliases and description.
func Text(matchers []engine.MatcherInfo) string {
	var b strings.Builder
	b.WriteString("Commands:")
	n := 0
	for _, m := range matchers {
		if m.Kind != "command" || len(m.Words) == 0 {
			continue
		}
		n++
		b.WriteString("\n/")
		b.WriteString(m.Words[0])
		for _, alias := range m.Words[1:] {
			b.WriteString(", /")
			b.WriteString(alias)
		}
		if m.Description != "" {
			b.WriteString(" — ")
			b.WriteString(m.Description)
		}
	}
	if n == 0 {
		return "No commands are registered."
	}
	return b.String()
}
