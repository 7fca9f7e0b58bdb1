package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// adapter returns the engine's adapter named name, or nil.
func (e *Engine) adapter(name string) platform.Adapter {
	for _, a := range e.adapters {
		if a.Name() == name {
			return a
		}
	}
	return nil
}

// interactHere makes in on this process's adapter name, and returns what a
// download fetched. An adapter that cannot do it refuses with a permanent
// error wrapping platform.ErrUnsupported.
func (e *Engine) interactHere(ctx context.Context, name string, in journal.Interaction) ([]byte, error) {
	a := e.adapter(name)
	if a == nil {
		return nil, platform.Permanent(fmt.Errorf("engine: %s on %q: %w", in.Op, name, ErrNoSender))
	}
	switch in.Op {
	case journal.OpAnswerCallback:
		if ca, ok := a.(platform.CallbackAnswerer); ok {
			return nil, ca.AnswerCallback(ctx, in.Event, in.Answer)
		}
	case journal.OpChatAction:
		if actor, ok := a.(platform.ChatActor); ok {
			return nil, actor.SendChatAction(ctx, in.Chat, in.Action)
		}
	case journal.OpAnswerInline:
		if ia, ok := a.(platform.InlineAnswerer); ok {
			return nil, ia.AnswerInline(ctx, in.Event, in.Inline)
		}
	case journal.OpAnswerPreCheckout:
		if pa, ok := a.(platform.PreCheckoutAnswerer); ok {
			return nil, pa.AnswerPreCheckout(ctx, in.Event, in.PreCheckout)
		}
	case journal.OpAnswerJoinRequest:
		if ja, ok := a.(platform.JoinRequestAnswerer); ok {
			return nil, ja.AnswerJoinRequest(ctx, in.Event, in.Approve)
		}
	case journal.OpDownload:
		if d, ok := a.(platform.Downloader); ok {
			return d.Download(ctx, in.Attachment, in.MaxBytes)
		}
	default:
		return nil, platform.Permanent(fmt.Errorf("engine: %w: unknown interaction %q", platform.ErrInvalidMessage, in.Op))
	}
	return nil, platform.Permanent(fmt.Errorf("engine: %s on %s: %w", in.Op, name, platform.ErrUnsupported))
}

// interact makes in on the adapter name through the journal: here, or
// through the account's gateway in another process.
func (e *Engine) interact(ctx context.Context, name string, in journal.Interaction) ([]byte, error) {
	return e.journal.Interact(ctx, name, in)
}

// download fetches att from the adapter name: here where the adapter can
// (Telegram's files and OneBot's links can be fetched from any process),
// else through the account's gateway, which holds what only it can reach
// (the browser chat keeps users' files where their tabs are).
func (e *Engine) download(ctx context.Context, name string, att platform.Attachment, maxBytes int64) ([]byte, error) {
	in := journal.Interaction{Op: journal.OpDownload, Attachment: att, MaxBytes: maxBytes}
	data, err := e.interactHere(ctx, name, in)
	if err == nil || !errors.Is(err, platform.ErrInvalidMessage) {
		return data, err
	}
	return e.interact(ctx, name, in)
}
