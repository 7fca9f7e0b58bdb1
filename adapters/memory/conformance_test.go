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

func (p memPeer) Received(ctx context.Context, chat platform.Chat, n int) ([]platform.OutboundMessage, error) {
	sent, err := p.a.WaitSent(ctx, chat.ID, n)
	msgs := make([]platform.OutboundMessage, len(sent))
	for i, s := range sent {
		msgs[i] = s.Message
	}
	return msgs, err
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
