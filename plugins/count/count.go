// Package count provides the /count N command: it sends N separate messages
// "1" … "N" without waiting for each, to show that replies to one chat
// arrive in the order they were made.
package count

import (
	"errors"
	"strconv"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Max is the largest N /count accepts.
const Max = 100

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
	e.OnCommand("count", handle, engine.Description("send N numbered messages, in order"))
	return nil
}

// handle queues the replies without waiting for them. A chat's queue holds
// a bounded number of replies (64 by default), so when a reply is refused
// with ErrQueueFull, handle waits until its oldest queued reply has been
// sent and tries again: a count larger than the queue is throttled to the
// platform's pace instead of cut short. If the handler's time runs out
// first, it stops and logs where; the user then has a gap-free 1…k, and
// no note, since the chat's queue is still full.
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
	var queued []*future.Future[platform.SendResult] // not yet known to be sent, oldest first
	for i := 1; i <= n; {
		f := c.ReplyText(strconv.Itoa(i))
		_, err := f.Result()
		switch {
		case errors.Is(err, engine.ErrQueueFull) && len(queued) > 0:
			oldest := queued[0]
			queued = queued[1:]
			if _, werr := oldest.Wait(c.Context()); c.Context().Err() != nil {
				stop(c, i, n, werr)
				return nil
			}
			continue // try number i again
		case errors.Is(err, future.ErrNotReady):
			queued = append(queued, f)
		case err != nil:
			// Refused for another reason (the engine is shutting down, or
			// the queue is full of other replies): going on cannot help.
			stop(c, i, n, err)
			return nil
		}
		i++
	}
	return nil
}

func stop(c *engine.Context, at, n int, err error) {
	c.Logger().Warn("count stopped early", zap.Int("at", at), zap.Int("of", n), zap.Error(err))
}
