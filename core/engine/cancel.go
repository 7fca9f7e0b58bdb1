package engine

import (
	"strings"

	"github.com/heraldbot/herald/internal/command"
	"github.com/heraldbot/herald/internal/handling"
	"github.com/heraldbot/herald/platform"
)

// WithCancelCommand makes the command name ("cancel", without a prefix)
// the way out of every conversation: while a conversation of a user waits
// in a chat, the user's /name there ends the wait with ErrCancelled, and
// once the handler returned, reply is sent to the chat (none if ""). A
// handler that returns ErrCancelled has ended cleanly: the engine logs it
// at info level, does not count it as a handler error, and does not call
// the WithOnError function. When none of the user's conversations waits,
// /name goes to the matchers as any command does, so a handler of its own
// may answer "Nothing to cancel". Repeated use keeps the last; an empty
// name turns it off, the default.
func WithCancelCommand(name, reply string) Option {
	return optionFunc(func(o *options) { o.cancelCommand, o.cancelReply = name, reply })
}

// isCancel reports whether ev is user's cancel command.
func (e *Engine) isCancel(ev *platform.Event, user string) bool {
	name := e.opts.cancelCommand
	if name == "" || ev.Kind != platform.EventMessage || ev.From.ID != user {
		return false
	}
	cmd, ok := command.Parse(ev.Text, e.opts.prefixes)
	if !ok || !strings.EqualFold(cmd.Name, name) {
		return false
	}
	return cmd.Bot == "" || e.opts.botUsername == "" || strings.EqualFold(cmd.Bot, e.opts.botUsername)
}

// cancelled tells the user of x's handling that its conversation ended,
// with the reply WithCancelCommand gave. Its send is numbered apart from
// the handlers' effects, as the error hook's are.
func (e *Engine) cancelled(x *handling.Ctx) {
	if e.opts.cancelReply == "" {
		return
	}
	h := x.HookCtx()
	h.Reply(platform.TextMessage(e.opts.cancelReply))
}
