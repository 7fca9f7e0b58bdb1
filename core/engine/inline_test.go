package engine_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// An inline query is answered once with results; the chosen result comes
// back as an event; neither has a chat to reply to.
func TestAnswerInline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, mem := newEngine(t)
		chosen := make(chan platform.Event, 1)
		e.OnEvent(platform.EventInlineQuery, func(c *engine.Context) error {
			must(t, c.AnswerInline(platform.InlineAnswer{Results: []platform.InlineResult{
				{ID: "1", Title: "Echo", Message: platform.TextMessage(c.Text())},
			}, Personal: true}))
			if err := c.AnswerInline(platform.InlineAnswer{}); !errors.Is(err, platform.ErrAlreadyAnswered) || !platform.IsPermanent(err) {
				t.Errorf("second AnswerInline = %v; want a permanent ErrAlreadyAnswered", err)
			}
			if _, err := c.ReplyText("x").Wait(c.Context()); !errors.Is(err, engine.ErrNoChat) {
				t.Errorf("Reply to an inline query = %v; want ErrNoChat", err)
			}
			return nil
		})
		e.OnEvent(platform.EventInlineResult, func(c *engine.Context) error {
			chosen <- c.Event()
			if err := c.AnswerInline(platform.InlineAnswer{}); !errors.Is(err, platform.ErrInvalidMessage) {
				t.Errorf("AnswerInline to a chosen result = %v; want ErrInvalidMessage", err)
			}
			return nil
		})
		handleAndWait(t, e, platform.Event{ID: "1", Platform: memory.DefaultName, Kind: platform.EventInlineQuery, From: ann, Text: "hello", QueryID: "iq"})
		got := mem.InlineAnswers()
		if len(got) != 1 || len(got[0].Answer.Results) != 1 || got[0].Answer.Results[0].Message.Text != "hello" || !got[0].Answer.Personal {
			t.Fatalf("inline answers = %+v", got)
		}
		handleAndWait(t, e, platform.Event{ID: "2", Platform: memory.DefaultName, Kind: platform.EventInlineResult, From: ann, Text: "hello",
			Inline: platform.InlineQuery{ResultID: "1"}})
		if ev := <-chosen; ev.Inline.ResultID != "1" {
			t.Fatalf("chosen result event %+v", ev)
		}

		bare, err := engine.New(engine.WithAdapter(bareAdapter{memory.New()}))
		must(t, err)
		defer bare.Shutdown(t.Context())
		bare.OnEvent(platform.EventInlineQuery, func(c *engine.Context) error {
			if err := c.AnswerInline(platform.InlineAnswer{}); !errors.Is(err, platform.ErrUnsupported) {
				t.Errorf("AnswerInline without an InlineAnswerer = %v; want ErrUnsupported", err)
			}
			return nil
		})
		handleAndWait(t, bare, platform.Event{ID: "1", Platform: memory.DefaultName, Kind: platform.EventInlineQuery, From: ann, QueryID: "iq"})
	})
}
