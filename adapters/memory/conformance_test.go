package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"testing"

	"github.com/heraldbot/herald/adapters/adaptertest"
	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/platform"
)

// TestConformance runs the shared adapter suite. The memory adapter is its
// own peer: Say injects events, Sent records what the bot sent, and
// FailNext and SlowNext inject every kind of fault. It claims every
// feature: it keeps messages whole, whatever they hold.
func TestConformance(t *testing.T) {
	adaptertest.TestAdapter(t, func(t *testing.T) adaptertest.Peer {
		return memPeer{memory.New(memory.WithName("mem"))}
	}, adaptertest.Features{})
}

// memPeer drives a memory adapter for the suite.
type memPeer struct{ a *memory.Adapter }

func (p memPeer) Adapter() platform.Adapter { return p.a }

// Ready returns at once: events said before Run starts wait for it.
func (p memPeer) Ready(context.Context) error { return nil }

func (p memPeer) User(n int) platform.User {
	return memory.User("u"+strconv.Itoa(n), "User "+strconv.Itoa(n))
}

func (p memPeer) Chat(_ context.Context, n int, typ platform.ChatType) (platform.Chat, error) {
	switch typ {
	case platform.ChatPrivate:
		return memory.Private("u" + strconv.Itoa(n)), nil
	case platform.ChatGroup:
		return memory.Group("g" + strconv.Itoa(n)), nil
	}
	return platform.Chat{}, fmt.Errorf("memory peer: no chats of type %q", typ)
}

func (p memPeer) Say(_ context.Context, chat platform.Chat, from platform.User, text string) error {
	p.a.Say(chat, from, text)
	return nil
}

// Received returns the messages sent to chat: edits and deletions, which
// Sent records too, are not messages.
func (p memPeer) Received(ctx context.Context, chat platform.Chat, n int) ([]platform.OutboundMessage, error) {
	for {
		var msgs []platform.OutboundMessage
		for _, s := range p.a.Sent(chat.ID) {
			if s.Message.EditID == "" && s.Message.DeleteID == "" {
				msgs = append(msgs, s.Message)
			}
		}
		if len(msgs) >= n {
			return msgs, nil
		}
		select {
		case <-ctx.Done():
			return msgs, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

var _ adaptertest.ShowingPeer = memPeer{}

func (p memPeer) Shown(_ context.Context, chat platform.Chat) ([]platform.OutboundMessage, error) {
	shown := p.a.Shown(chat.ID)
	msgs := make([]platform.OutboundMessage, len(shown))
	for i, s := range shown {
		msgs[i] = s.Message
	}
	return msgs, nil
}

func (p memPeer) Inject(chat platform.Chat, f adaptertest.Fault) error {
	switch f.Kind {
	case adaptertest.FaultPermanent:
		p.a.FailNext(chat.ID, platform.Permanent(errors.New("memory peer: bot blocked by the user")))
	case adaptertest.FaultRetryAfter:
		p.a.FailNext(chat.ID, platform.NewRetryAfter(f.RetryAfter, errors.New("memory peer: flood control")))
	case adaptertest.FaultTransient:
		p.a.FailNext(chat.ID, errors.New("memory peer: internal server error"))
	case adaptertest.FaultStall:
		p.a.SlowNext(chat.ID, time.Hour)
	default:
		return fmt.Errorf("memory peer: fault %v: %w", f.Kind, adaptertest.ErrUnsupported)
	}
	return nil
}

var (
	_ adaptertest.FilePeer   = memPeer{}
	_ adaptertest.PressPeer  = memPeer{}
	_ adaptertest.ActionPeer = memPeer{}
	_ adaptertest.InlinePeer = memPeer{}
)

func (p memPeer) SayFile(_ context.Context, chat platform.Chat, from platform.User, at platform.Attachment, data []byte) error {
	p.a.SayFile(chat, from, at, data)
	return nil
}

func (p memPeer) Press(_ context.Context, chat platform.Chat, from platform.User, messageID, data string) error {
	p.a.PressOn(chat, from, messageID, data)
	return nil
}

func (p memPeer) Answered(ctx context.Context, ev platform.Event) (platform.CallbackAnswer, error) {
	for n := 1; ; n++ {
		got, err := p.a.WaitAnswers(ctx, n)
		if err != nil {
			return platform.CallbackAnswer{}, err
		}
		if a := got[n-1]; a.Event.QueryID == ev.QueryID {
			return a.Callback, nil
		}
	}
}

func (p memPeer) Actions(ctx context.Context, chat platform.Chat, n int) ([]platform.ChatAction, error) {
	for {
		var out []platform.ChatAction
		for _, a := range p.a.Actions(chat.ID) {
			out = append(out, a.Action)
		}
		if len(out) >= n {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (p memPeer) Query(_ context.Context, from platform.User, text string) error {
	p.a.Query(from, text)
	return nil
}

func (p memPeer) InlineAnswered(ctx context.Context, ev platform.Event) (platform.InlineAnswer, error) {
	for {
		for _, a := range p.a.InlineAnswers() {
			if a.Event.QueryID == ev.QueryID {
				return a.Answer, nil
			}
		}
		select {
		case <-ctx.Done():
			return platform.InlineAnswer{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (p memPeer) Choose(_ context.Context, from platform.User, resultID, text string) error {
	p.a.Choose(from, resultID, text)
	return nil
}
