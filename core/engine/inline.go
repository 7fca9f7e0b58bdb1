package engine

import (
	"fmt"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// AnswerInline answers the inline query the handler runs for (an
// [platform.EventInlineQuery]: the user typed "@bot query") with a, the
// results the user picks from, and returns once the platform took the
// answer (within 5 s). Picking a result sends its Message to the chat the
// user typed in, from the user "via @bot"; the bot then gets an
// [platform.EventInlineResult] naming the result, if the platform is set to
// send one (Telegram: /setinlinefeedback with @BotFather). Such events have
// no chat: Reply fails with ErrNoChat.
//
// A query is answered at most once; an unanswered one shows no results.
// Answer quickly: Telegram drops an answer that comes more than about 10 s
// after the query. An answer that fails for a reason that may pass may be
// tried again.
//
// It returns nil on success; a permanent error wrapping
// platform.ErrInvalidMessage for an event that is not an inline query, or
// results the platform cannot send; one wrapping platform.ErrUnsupported on
// a platform without inline queries (the adapter is no
// platform.InlineAnswerer); one wrapping platform.ErrAlreadyAnswered for a
// query answered before; and otherwise the adapter's error.
func (c *Context) AnswerInline(a platform.InlineAnswer) error {
	ev := c.ev.event
	if ev.Kind != platform.EventInlineQuery {
		return platform.Permanent(fmt.Errorf("engine: answering event %s: %w: it is a %s, not an inline query", ev.ID, platform.ErrInvalidMessage, ev.Kind))
	}
	if _, ok := c.ev.e.adapter(ev.Platform).(platform.InlineAnswerer); !ok {
		return platform.Permanent(fmt.Errorf("engine: answering an inline query on %s: %w", ev.Platform, platform.ErrUnsupported))
	}
	return c.answer(ev, journal.Interaction{Op: journal.OpAnswerInline, Event: ev, Inline: a}, "inline query")
}
