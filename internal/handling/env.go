// Package handling holds what the engine does with one event: a handling
// runs the matching handlers and, for a handler that waits in Next or
// Prompt, runs them again from the top each time an event arrives that may
// be the one it waits for (a replay). The handling's effects — sends,
// waits, answers, state reads and writes, Once results — form one log,
// numbered by their place in it; every run takes its effects in the same
// order, and a replay gets each recorded one back instead of doing it
// again. So a waiting conversation is its log, not a goroutine: between
// two events it holds no goroutine and no handler slot.
//
// The effects' places name them across processes and restarts too
// (effect ids): a handler run again on its event after a crash makes its
// sends under the same ids, which the journal knows.
//
// Package engine runs handlings (it implements [Env]); package
// core/context's Context is a handler's view of one ([Ctx]). Nothing here
// is for bot authors.
package handling

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Env is what a handling needs of the engine that runs it. Its methods
// are safe for concurrent use.
type Env interface {
	// Logger returns the engine's logger.
	Logger() *zap.Logger
	// Base returns the context a forced shutdown of the engine ends: what
	// a handling does after its run ended (answering presses) is bounded
	// by it.
	Base() context.Context
	// Adapter returns the engine's adapter named name, or nil.
	Adapter(name string) platform.Adapter
	// QueueSend appends s to the journal, which hands it to the gateway of
	// its account, queued for its chat (key), and returns its Future: it
	// is resolved with the send's outcome, or at once with the reason it
	// was refused, which QueueSend returns too — one wrapping ErrDiverged
	// when the journal made another send under s's id before (a run after
	// a restart diverged). done, if not nil, hears the outcome too, once
	// the Future is resolved.
	QueueSend(key string, s journal.Send, done func(platform.SendResult, error)) (*future.Future[platform.SendResult], error)
	// RoomFor waits while the chat of key holds as many sends as its
	// queue takes — a send queued now would be refused — until there is
	// room or ctx ends; not for a send of id (when not "") that the engine
	// took up at its start, whose repeat queues nothing, nor while the
	// events of the handling's own chat (from, its inbound key) fill half
	// its inbound queue.
	RoomFor(ctx context.Context, key, id, from string)
	// Interact makes in on the adapter name, here or through its gateway,
	// and returns what a download fetched.
	Interact(ctx context.Context, name string, in journal.Interaction) ([]byte, error)
	// Download fetches att from the adapter name, at most maxBytes of it.
	Download(ctx context.Context, name string, att platform.Attachment, maxBytes int64) ([]byte, error)
	// Effect returns what the journal recorded under id, and whether it
	// had it; RecordEffect records data under id. Their errors wrap the
	// engine's journal error.
	Effect(ctx context.Context, id string) ([]byte, bool, error)
	RecordEffect(ctx context.Context, id string, data []byte) error
	// Sessions returns the store sessions are kept in.
	Sessions() state.Store
	// ConversationWait bounds a wait whose context has no deadline.
	ConversationWait() time.Duration
	// IsCancel reports whether ev is user's command to leave a
	// conversation.
	IsCancel(ev *platform.Event, user string) bool
	// Accepts runs accept on ev, recovering and reporting a panic (which
	// does not accept).
	Accepts(accept func(platform.Event) bool, ev platform.Event) bool
	// Waits returns the engine's waiting handlings.
	Waits() *Waits
	// Texts returns the words ReplySuccess and ReplyError add.
	Texts() Texts
}

// Texts are the words a handler's ReplySuccess and ReplyError add (see
// core/context's ReplyTexts).
type Texts struct {
	Success, Error, Apology string
}
