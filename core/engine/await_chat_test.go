package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// NextInChat waits for anyone in the chat: the first right answer of any
// member ends a quiz, the wrong ones go to the matchers; Next, beside it,
// still waits for its own user only.
func TestNextInChat(t *testing.T) {
	e, mem := newEngine(t)
	var seen []string
	e.OnCommand("quiz", func(c *engine.Context) error {
		c.ReplyText("2+2?")
		win, err := c.NextInChat(c.Context(), func(ev platform.Event) bool {
			return ev.Kind == platform.EventMessage && strings.TrimSpace(ev.Text) == "4"
		})
		if err != nil {
			return err
		}
		c.ReplyText(win.From.Name + " wins")
		return nil
	}, engine.Block())
	e.OnMessage(func(c *engine.Context) error {
		seen = append(seen, c.From().Name+": "+c.Text())
		return nil
	}, engine.Priority(10))
	runEngine(t, e)

	mem.Say(group, ann, "/quiz")
	waitTexts(t, mem, group.ID, "2+2?")
	mem.Say(group, ann, "5")
	mem.Say(group, bob, "4")
	waitTexts(t, mem, group.ID, "2+2?", "Bob wins")
	mem.Say(group, ann, "4")
	if err := e.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Ann: 5", "Ann: 4"}; !slices.Equal(seen, want) {
		t.Fatalf("the message matcher saw %q; want %q", seen, want)
	}
}
