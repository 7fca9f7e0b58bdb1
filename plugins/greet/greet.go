// Package greet provides the /greet command: a conversation, written as
// plain Go with Context.Prompt, that asks for the user's name, then their
// age — again until the answer is a number — and greets them by both.
//
// It is a conversation as the engine runs them: while it waits for an
// answer it holds no goroutine; when the answer comes, the handler runs
// again from the top and gets back what it did before (the questions
// sent, the answers taken) instead of doing it again, so it must do the
// same each time — which it does: it only asks and reads answers. With a
// journal, a conversation survives a restart where it waited.
package greet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// What /greet says.
const (
	Question   = "What is your name?"
	NotAName   = "That does not look like a name; try /greet again."
	NotANumber = "Please answer with a number."
	NoAnswer   = "No answer; ask me again with /greet."
)

// AgeQuestion is the second question.
func AgeQuestion(name string) string { return "How old are you, " + name + "?" }

// Greeting is the last answer.
func Greeting(name string, age int) string {
	return fmt.Sprintf("Nice to meet you, %s (%d)!", name, age)
}

// Patience is how long /greet waits for each answer: the wait's own bound
// (a waiting conversation holds nothing, so it may be long).
const Patience = 10 * time.Minute

// Plugin registers /greet. Its zero value is ready to use; it holds no
// state, so one Plugin may serve any number of engines at once.
type Plugin struct{}

// New returns the greet plugin.
func New() *Plugin { return &Plugin{} }

// Name returns "greet".
func (*Plugin) Name() string { return "greet" }

// Register adds the /greet command to e.
func (*Plugin) Register(e *engine.Engine) error {
	e.OnCommand("greet", handle, engine.Description("ask your name and age, then greet you"))
	return nil
}

// handle asks, waits for the answers, and greets. A user who does not
// answer within Patience is told so; their later messages go to the other
// handlers again.
func handle(c *engine.Context) error {
	// The deadline of each wait is the one it had when the handler first
	// waited there, however often it runs again.
	ctx, cancel := context.WithTimeout(c.Context(), Patience)
	defer cancel()
	answer, err := c.Prompt(ctx, platform.TextMessage(Question))
	if err != nil {
		return timedOut(c, err)
	}
	name := strings.TrimSpace(answer.Text)
	if name == "" || strings.HasPrefix(name, "/") {
		c.ReplyText(NotAName)
		return nil
	}
	for q := AgeQuestion(name); ; q = NotANumber + " " + AgeQuestion(name) {
		answer, err := c.Prompt(ctx, platform.TextMessage(q))
		if err != nil {
			return timedOut(c, err)
		}
		if age, err := strconv.Atoi(strings.TrimSpace(answer.Text)); err == nil && age > 0 && age < 150 {
			c.ReplyText(Greeting(name, age))
			return nil
		}
	}
}

// timedOut answers a wait that ended with err: the user never answered;
// any other error (ErrWaiting among them) is returned as it is.
func timedOut(c *engine.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		c.ReplyText(NoAnswer)
		return nil
	}
	return err
}
