// Package remind provides /remind DURATION TEXT: the bot answers at once
// that it will remind, and sends TEXT to the chat when DURATION has passed
// (a Go duration: 6s, 10m, 1h30m). The reminder is a delayed send
// (engine.SendAfter), kept in the engine's schedule store: with a store
// that lasts (package cluster's, engine.WithScheduleStore) it survives
// restarts, and of several processes one sends it.
package remind

import (
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
		engine.Description("remind you of something later: /remind 10m tea"))
	return nil
}

func handle(e *engine.Engine, c *engine.Context) error {
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
		// Named after the event: run again after a crash, the handler
		// schedules nothing more.
		opts = append(opts, engine.SendID("remind:"+c.Platform()+":"+id))
	}
	if _, err := e.SendAfter(c.Context(), d, c.Platform(), c.Chat(), msg, opts...); err != nil {
		c.ReplyError(engine.NewUserError("I could not keep that reminder; try again later.", err))
		return nil
	}
	c.ReplyText(Ack(word, text))
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
