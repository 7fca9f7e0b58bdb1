// Package ping provides the /ping command: it answers "pong" with the time
// the event took to reach the handler, to check that a bot is alive.
package ping

import (
	"fmt"
	"time"

	"github.com/heraldbot/herald/core/engine"
)

// Plugin registers /ping. Its zero value is ready to use.
type Plugin struct{}

// New returns the ping plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "ping".
func (*Plugin) Name() string { return "ping" }

// Register adds the /ping command to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("ping", handle, engine.Description("check that the bot is alive"))
	return nil
}

func handle(c *engine.Context) error {
	c.ReplyText(Pong(c.Event().Time, time.Now()))
	return nil
}

// Pong returns the reply to /ping for an event sent at sent and handled at
// now: "pong" and the latency, or just "pong" when the platform gave no
// time or the clocks disagree.
func Pong(sent, now time.Time) string {
	if sent.IsZero() {
		return "pong"
	}
	d := now.Sub(sent)
	if d < 0 {
		return "pong"
	}
	return fmt.Sprintf("pong (latency %v)", d.Round(time.Millisecond))
}
