package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldbot/herald/platform"
)

// InteractionOp names what an [Interaction] does.
type InteractionOp string

// The interactions.
const (
	OpAnswerCallback InteractionOp = "answer_callback" // platform.CallbackAnswerer
	OpChatAction     InteractionOp = "chat_action"     // platform.ChatActor
	OpAnswerInline   InteractionOp = "answer_inline"   // platform.InlineAnswerer
	OpDownload       InteractionOp = "download"        // platform.Downloader
)

// Interaction is a call on a platform account other than a send: an
// answer to a button press or an inline query, a chat action, a
// download. A member of a [Cluster] makes those of the accounts it does
// not lead through their gateways (Cluster.Interact), so that only the
// gateway talks to the platform (and reaches what only it holds, such as
// the browser chat's tabs and files). It is a plain value that marshals
// to JSON; only the fields of its Op are set.
type Interaction struct {
	Op InteractionOp `json:"op"`
	// Event is the press or the inline query answered.
	Event platform.Event `json:"event,omitzero"`
	// Answer answers a press; Inline an inline query.
	Answer platform.CallbackAnswer `json:"answer,omitzero"`
	Inline platform.InlineAnswer   `json:"inline,omitzero"`
	// Chat and Action are a chat action's.
	Chat   platform.Chat       `json:"chat,omitzero"`
	Action platform.ChatAction `json:"action,omitempty"`
	// Attachment and MaxBytes are a download's.
	Attachment platform.Attachment `json:"attachment,omitzero"`
	MaxBytes   int64               `json:"max_bytes,omitempty"`
}

// Interact implements ClusterMember: it makes in on this process's
// adapter name, and returns what a download fetched. An adapter that
// cannot do it refuses with a permanent error wrapping
// platform.ErrUnsupported.
func (m *member) Interact(ctx context.Context, name string, in Interaction) ([]byte, error) {
	return m.engine().interactHere(ctx, name, in)
}

// interactHere makes in on this process's adapter name.
func (e *Engine) interactHere(ctx context.Context, name string, in Interaction) ([]byte, error) {
	a := e.adapter(name)
	if a == nil {
		return nil, platform.Permanent(fmt.Errorf("engine: %s on %q: %w", in.Op, name, ErrNoSender))
	}
	unsupported := func() error {
		return platform.Permanent(fmt.Errorf("engine: %s on %s: %w", in.Op, name, platform.ErrUnsupported))
	}
	switch in.Op {
	case OpAnswerCallback:
		if ca, ok := a.(platform.CallbackAnswerer); ok {
			return nil, ca.AnswerCallback(ctx, in.Event, in.Answer)
		}
	case OpChatAction:
		if actor, ok := a.(platform.ChatActor); ok {
			return nil, actor.SendChatAction(ctx, in.Chat, in.Action)
		}
	case OpAnswerInline:
		if ia, ok := a.(platform.InlineAnswerer); ok {
			return nil, ia.AnswerInline(ctx, in.Event, in.Inline)
		}
	case OpDownload:
		if d, ok := a.(platform.Downloader); ok {
			return d.Download(ctx, in.Attachment, in.MaxBytes)
		}
	default:
		return nil, platform.Permanent(fmt.Errorf("engine: %w: unknown interaction %q", platform.ErrInvalidMessage, in.Op))
	}
	return nil, unsupported()
}

// interact makes in on the adapter name: here, or, in a cluster, through
// the account's gateway (which may be this process).
func (e *Engine) interact(ctx context.Context, name string, in Interaction) ([]byte, error) {
	if e.cluster == nil {
		return e.interactHere(ctx, name, in)
	}
	return e.cluster.c.Interact(ctx, name, in)
}

// download fetches att from the adapter name: here where the adapter can
// (Telegram's files and OneBot's links can be fetched from any process),
// else, in a cluster, through the account's gateway, which holds what
// only it can reach (the browser chat keeps users' files where their
// tabs are).
func (e *Engine) download(ctx context.Context, name string, att platform.Attachment, maxBytes int64) ([]byte, error) {
	data, err := e.interactHere(ctx, name, Interaction{Op: OpDownload, Attachment: att, MaxBytes: maxBytes})
	if err == nil || e.cluster == nil || !errors.Is(err, platform.ErrInvalidMessage) {
		return data, err
	}
	return e.cluster.c.Interact(ctx, name, Interaction{Op: OpDownload, Attachment: att, MaxBytes: maxBytes})
}
