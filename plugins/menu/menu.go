// Package menu provides the /menu command: a message with inline buttons
// that the bot edits in place when one is pressed, to show buttons,
// callbacks, answers to presses and message edits working together. A
// press is answered with a short notification (Answered) where the
// platform shows one (Telegram's answerCallbackQuery); on a platform that
// cannot edit messages the bot answers with a new message instead.
package menu

import (
	"errors"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// Prefix starts the callback data of the menu's buttons, so that the
// plugin handles only its own presses.
const Prefix = "menu:"

// Question is the menu's text.
const Question = "What would you like to drink?"

// Choices are the menu's buttons, in order.
var Choices = []string{"Tea", "Coffee", "Water"}

// Plugin registers /menu and the handler of its buttons. Its zero value is
// ready to use; it holds no state, so one Plugin may serve any number of
// engines at once.
type Plugin struct{}

// New returns the menu plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "menu".
func (*Plugin) Name() string { return "menu" }

// Register adds /menu and the handler of the menu's buttons to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.On(pressed, handlePress)
	e.OnCommand("menu", func(c *engine.Context) error {
		c.Reply(Menu())
		return nil
	}, engine.Description("show buttons; pressing one edits the message"))
	return nil
}

// Menu returns the menu message: the question and a button per choice.
func Menu() platform.OutboundMessage {
	row := make([]platform.Button, len(Choices))
	for i, c := range Choices {
		row[i] = platform.Button{Text: c, Data: Prefix + strings.ToLower(c)}
	}
	return platform.OutboundMessage{Text: Question, Buttons: [][]platform.Button{row}}
}

// Picked returns the message that replaces the menu once choice was
// picked: the choice, and a button that brings the menu back.
func Picked(choice string) platform.OutboundMessage {
	return platform.OutboundMessage{
		Text:    "You picked " + choice + ".",
		Buttons: [][]platform.Button{{{Text: "Change", Data: Prefix + "again"}}},
	}
}

// Answered returns the notification that answers a press of choice, or,
// for "" (the Change button), of Change.
func Answered(choice string) string {
	if choice == "" {
		return "Pick again"
	}
	return choice + " it is!"
}

// pressed accepts presses of the menu's buttons.
func pressed(c *engine.Context) bool {
	return c.Event().Kind == platform.EventCallback && strings.HasPrefix(c.Text(), Prefix)
}

// handlePress answers the press with its notification first (the user's
// button stops spinning at once), then edits the menu the pressed button
// is under: to the choice, or back to the menu for "Change". Where the
// platform cannot edit, or the press names no message, it replies with
// the new message instead. A platform without answers to presses is fine:
// the edit shows the choice.
func handlePress(c *engine.Context) error {
	msg, answer := Menu(), Answered("")
	if data := strings.TrimPrefix(c.Text(), Prefix); data != "again" {
		i := slices.IndexFunc(Choices, func(choice string) bool { return strings.ToLower(choice) == data })
		if i < 0 {
			return nil // not a button the menu shows: someone made it up
		}
		msg, answer = Picked(strings.ToLower(Choices[i])), Answered(Choices[i])
	}
	if err := c.Answer(answer, false); err != nil && !errors.Is(err, platform.ErrUnsupported) {
		c.Logger().Debug("menu: answering the press failed", zap.Error(err))
	}
	if id := c.Event().MessageID; id != "" {
		_, err := c.Edit(id, msg).Wait(c.Context())
		if !errors.Is(err, platform.ErrUnsupported) {
			return err
		}
	}
	c.Reply(msg)
	return nil
}
