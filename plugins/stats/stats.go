// Package stats provides the /stats command: it shows the engine's event,
// handler, dispatcher and send statistics.
package stats

import (
	"fmt"

	"github.com/heraldbot/herald/core/engine"
)

// Plugin registers /stats. Its zero value is ready to use.
type Plugin struct{}

// New returns the stats plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "stats".
func (*Plugin) Name() string { return "stats" }

// Register adds the /stats command to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("stats", func(c *engine.Context) error {
		c.ReplyText(Text(e.Stats()))
		return nil
	}, engine.Description("show the bot's statistics"))
	return nil
}

// Text renders engine statistics for a chat message.
func Text(s engine.Stats) string {
	return fmt.Sprintf(`Events: %d received, %d matched, %d unmatched, %d dropped
Handlers: %d errors, %d panics; %d running, %d queued
Sends: %d delivered, %d failed (%d dead-lettered, %d kept), %d attempts (%d retries)
Dispatcher: %d queued, %d running, %d waiting, %d chats; %d submitted, %d rejected`,
		s.Received, s.Matched, s.Unmatched, s.Dropped,
		s.HandlerErrors, s.HandlerPanics, s.Handlers.Running, s.Handlers.Queued,
		s.Sends.Delivered, s.Sends.Failed, s.Sends.DeadLettered, s.DeadLetters, s.Sends.Attempts, s.Sends.Retries,
		s.Outbound.Queued, s.Outbound.Running, s.Outbound.Waiting, s.Outbound.Chats, s.Outbound.Submitted, s.Outbound.Rejected)
}
