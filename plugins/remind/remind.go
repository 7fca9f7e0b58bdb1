// Package remind provides /remind DURATION TEXT: the bot answers at once
// that it will remind, and sends TEXT to the chat when DURATION has passed
// (a Go duration: 6s, 10m, 1h30m); /remind cancel takes back the chat's
// reminders not sent yet. A reminder is a delayed send (engine.SendAfter),
// kept in the engine's schedule store: with a store that lasts (package
// cluster's, engine.WithScheduleStore) it survives restarts, and of
// several processes one sends it.
//
// It is the pattern of per-chat jobs: each reminder's SendID names its
// chat ("remind:" + platform + ":" + chat + ":" + event), so the chat's
// are found among engine.Scheduled and taken back with CancelSend.
package remind

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// Bounds of a reminder.
const (
	// Min and Max bound the duration.
	Min = time.Second
	Max = 30 * 24 * time.Hour
	// MaxLen is the longest text, in characters.
	MaxLen = 500
)

// Usage is the reply to /remind without a valid duration and text.
const Usage = "Usage: /remind DURATION TEXT, such as /remind 10m tea — a duration from 1s to 720h, like 6s, 10m or 1h30m"

// TooLong is the reply to a text over MaxLen characters.
const TooLong = "A reminder holds at most 500 characters."

// Plugin registers /remind. Its zero value is ready to use; it holds no
// state (the engine's schedule store does), so one Plugin may serve any
// number of engines at once.
type Plugin struct{}

// New returns the remind plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "remind".
func (*Plugin) Name() string { return "remind" }

// Register adds the /remind command to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("remind", func(c *engine.Context) error { return handle(e, c) },
		engine.Description("remind you of something later: /remind 10m tea; /remind cancel"))
	return nil
}

// Cancelled is the answer to /remind cancel.
func Cancelled(n int) string {
	if n == 1 {
		return "Cancelled 1 reminder."
	}
	return fmt.Sprintf("Cancelled %d reminders.", n)
}

// prefix returns the first part of the ids of c's chat's reminders.
func prefix(c *engine.Context) string { return "remind:" + c.Platform() + ":" + c.Chat().ID + ":" }

func handle(e *engine.Engine, c *engine.Context) error {
	if strings.TrimSpace(c.RawArgs()) == "cancel" {
		return cancelAll(e, c)
	}
	word, text := cut(c.RawArgs())
	d, err := time.ParseDuration(word)
	switch {
	case err != nil || d < Min || d > Max || text == "":
		c.ReplyText(Usage)
		return nil
	case utf8.RuneCountInString(text) > MaxLen:
		c.ReplyText(TooLong)
		return nil
	}
	msg := platform.TextMessage(Text(c.From(), c.Chat(), text))
	var opts []engine.SendOption
	if id := c.Event().ID; id != "" {
		// Named after the chat, for /remind cancel, and the event: run
		// again after a crash, the handler schedules nothing more.
		opts = append(opts, engine.SendID(prefix(c)+id))
	}
	// A call outside the handling, in Once: a run again gets its outcome.
	_, err = engine.Once(c, "schedule", func(ctx context.Context) (string, error) {
		return e.SendAfter(ctx, d, c.Platform(), c.Chat(), msg, opts...)
	})
	if err != nil {
		c.ReplyError(engine.NewUserError("I could not keep that reminder; try again later.", err))
		return nil
	}
	c.ReplyText(Ack(word, text))
	return nil
}

// cancelAll takes back the chat's reminders not sent yet. The store's
// calls are one Once: a run again after a crash says what the first
// cancelled, not what is left.
func cancelAll(e *engine.Engine, c *engine.Context) error {
	n, err := engine.Once(c, "cancel", func(ctx context.Context) (int, error) {
		waiting, err := e.Scheduled(ctx)
		if err != nil {
			return 0, err
		}
		n := 0
		for id := range waiting {
			if strings.HasPrefix(id, prefix(c)) && e.CancelSend(ctx, id) == nil {
				n++
			}
		}
		return n, nil
	})
	if err != nil {
		c.ReplyError(engine.NewUserError("I could not list the reminders; try again later.", err))
		return nil
	}
	c.ReplyText(Cancelled(n))
	return nil
}

// Ack returns the answer to /remind: that it will remind, in the duration
// as the user wrote it.
func Ack(duration, text string) string { return "OK, I will remind you in " + duration + ": " + text }

// Text returns the reminder sent when due: "⏰ " and the text, after the
// user's name in a group.
func Text(from platform.User, chat platform.Chat, text string) string {
	if chat.IsGroup() && from.Name != "" {
		return "⏰ " + from.Name + ": " + text
	}
	return "⏰ " + text
}

// cut splits s at its first run of white space: the first word, and the
// rest trimmed.
func cut(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}
