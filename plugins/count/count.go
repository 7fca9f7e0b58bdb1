// Package count provides the /count N command: it sends N separate messages
// "1" … "N" without waiting for each, to show that replies to one chat
// arrive in the order they were made.
package count

import (
	"strconv"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Max is the largest N /count accepts.
const Max = 100

// Window is how many of its replies /count lets wait in the dispatcher at
// once. Up to Window messages are queued without waiting; after that,
// message i waits until message i-Window was sent, so /count never fills a
// chat's queue (64 by default) and has its replies refused.
const Window = 32

// Usage is the reply to /count without a valid N.
const Usage = "Usage: /count N, with N from 1 to 100"

// Plugin registers /count. Its zero value is ready to use.
type Plugin struct{}

// New returns the count plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "count".
func (*Plugin) Name() string { return "count" }

// Register adds the /count command to e.
func (*Plugin) Register(e *engine.Engine) error {
	return e.OnCommand("count", handle, engine.Description("send N numbered messages, in order"))
}

func handle(c *engine.Context) error {
	args := c.Args()
	n := 0
	if len(args) == 1 {
		n, _ = strconv.Atoi(args[0])
	}
	if n < 1 || n > Max {
		c.ReplyText(Usage)
		return nil
	}
	pending := make([]*future.Future[platform.SendResult], 0, n)
	for i := 1; i <= n; i++ {
		if i > Window {
			if _, err := pending[i-1-Window].Wait(c.Context()); err != nil {
				c.Logger().Warn("count stopped", zap.Int("at", i), zap.Error(err))
				return nil
			}
		}
		// No Wait here: the dispatcher sends them one after another, in order.
		pending = append(pending, c.ReplyText(strconv.Itoa(i)))
	}
	return nil
}
