// Package note provides /note: notes a user keeps with the bot — /note add
// TEXT, /note list, /note clear. They are the user's, in every chat where
// they talk to the bot, and kept in a per-user session: with a session
// store that lasts (package cluster's, engine.WithSessionStore), they
// survive restarts.
package note

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heraldbot/herald/core/engine"
)

// Limits of what a user keeps.
const (
	// MaxNotes is how many notes a user may keep.
	MaxNotes = 50
	// MaxLen is the longest note, in characters.
	MaxLen = 500
)

// Usage is the reply to /note without a known subcommand.
const Usage = "Usage: /note add TEXT, /note list, /note clear"

// Replies of /note.
const (
	Empty   = "You have no notes."
	Cleared = "Your notes are cleared."
	TooLong = "A note holds at most 500 characters."
	Full    = "You keep 50 notes, the most I keep: /note clear first."
)

// Notes is the session the notes are kept in: each user's, in order.
var Notes = engine.NewUserSession[[]string]("note", 0)

// errFull refuses a note over MaxNotes.
var errFull = errors.New("note: full")

// Plugin registers /note. Its zero value is ready to use; it holds no
// state (the engine's session store does), so one Plugin may serve any
// number of engines at once.
type Plugin struct{}

// New returns the note plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "note".
func (*Plugin) Name() string { return "note" }

// Register adds the /note command to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("note", handle, engine.Description("keep notes: /note add TEXT, /note list, /note clear"))
	return nil
}

func handle(c *engine.Context) error {
	sub, text := cut(c.RawArgs())
	switch strings.ToLower(sub) {
	case "add":
		add(c, text)
	case "list":
		list(c)
	case "clear":
		if err := Notes.Delete(c); err != nil {
			return failed(c, err)
		}
		c.ReplyText(Cleared)
	default:
		c.ReplyText(Usage)
	}
	return nil
}

func add(c *engine.Context, text string) {
	switch {
	case text == "":
		c.ReplyText(Usage)
		return
	case utf8.RuneCountInString(text) > MaxLen:
		c.ReplyText(TooLong)
		return
	}
	notes, err := Notes.Update(c, func(notes *[]string) error {
		if len(*notes) >= MaxNotes {
			return errFull
		}
		*notes = append(*notes, text)
		return nil
	})
	switch {
	case errors.Is(err, errFull):
		c.ReplyText(Full)
	case err != nil:
		_ = failed(c, err)
	case len(notes) == 1:
		c.ReplyText("Noted: you have 1 note.")
	default:
		c.ReplyText(fmt.Sprintf("Noted: you have %d notes.", len(notes)))
	}
}

func list(c *engine.Context) {
	notes, err := Notes.Get(c)
	if err != nil {
		_ = failed(c, err)
		return
	}
	c.ReplyText(List(notes))
}

// List returns the text /note list answers with.
func List(notes []string) string {
	if len(notes) == 0 {
		return Empty
	}
	var b strings.Builder
	b.WriteString("Your notes:")
	for i, n := range notes {
		fmt.Fprintf(&b, "\n%d. %s", i+1, n)
	}
	return b.String()
}

// failed tells the user the notes could not be reached; the error goes to
// the log.
func failed(c *engine.Context, err error) error {
	c.ReplyError(engine.NewUserError("I cannot reach your notes right now; try again later.", err))
	return nil
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
