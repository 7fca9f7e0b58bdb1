package engine

import (
	"context"
	"runtime/debug"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/state"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/internal/handling"
	"github.com/heraldbot/herald/platform"
)

// env is the engine as the handlings it runs see it (handling.Env); a
// type of its own keeps these methods out of Engine's.
type env Engine

var _ handling.Env = (*env)(nil)

func (v *env) engine() *Engine { return (*Engine)(v) }

func (v *env) Logger() *zap.Logger   { return v.log }
func (v *env) Base() context.Context { return v.in.Base() }

func (v *env) Adapter(name string) platform.Adapter { return v.engine().adapter(name) }

func (v *env) QueueSend(key string, s journal.Send, done func(platform.SendResult, error)) (*future.Future[platform.SendResult], error) {
	return v.engine().queueSend(key, s, done)
}

// roomPoll bounds how long RoomFor sleeps between two looks at a full
// chat's queue: a chat's sends leave it at most a few a second (a
// platform's per-chat budget), so a wait is seconds long, and polling it
// costs the dispatcher nothing while no chat is full.
const roomPoll = 100 * time.Millisecond

// RoomFor waits while the chat of key has its dispatcher's QueueSize sends
// waiting, until there is room or ctx ends — unless the journal relays
// sends to a gateway (they are never refused there), the send of id is
// one taken up at the start (a handler run again repeats it: a duplicate,
// it queues nothing, while the sends taken up may hold the chat past its
// bound), the events of the handling's chat (from) fill half its inbound
// queue, or half the handlers already wait so. In the last two cases the
// send meets the full queue, and is refused: a flood past those bounds
// loses replies rather than filling the chat's inbound queue — a full one
// refuses the chat's next event, and an adapter offering a batch in order
// (Telegram's poll) would hold every chat's events behind it — or stopping
// the other chats' handlers.
func (v *env) RoomFor(ctx context.Context, key, id, from string) {
	e := v.engine()
	if e.relayed || !e.out.x.Full(key) || id != "" && e.js.replay(id) != nil {
		return
	}
	if 2*e.in.Waiting(from) >= e.in.QueueSize() {
		return
	}
	if e.roomWaiting.Add(1) > int64(e.opts.handlerConcurrency/2) { // none of one handler
		e.roomWaiting.Add(-1)
		return
	}
	defer e.roomWaiting.Add(-1)
	e.roomWaits.Add(1)
	e.limitedLog.Info("engine: a handler's send waits for room in its chat's full send queue: the chat asks for more than its platform takes",
		zap.String("chat", key))
	t := time.NewTimer(roomPoll / 10)
	defer t.Stop()
	for pause := roomPoll / 10; e.out.x.Full(key) && 2*e.in.Waiting(from) < e.in.QueueSize(); pause = min(2*pause, roomPoll) {
		t.Reset(pause)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (v *env) Interact(ctx context.Context, name string, in journal.Interaction) ([]byte, error) {
	return v.engine().interact(ctx, name, in)
}

func (v *env) Download(ctx context.Context, name string, att platform.Attachment, maxBytes int64) ([]byte, error) {
	return v.engine().download(ctx, name, att, maxBytes)
}

func (v *env) Effect(ctx context.Context, id string) ([]byte, bool, error) {
	data, ok, err := v.journal.Effect(ctx, id)
	if err != nil {
		return nil, false, v.js.failed("effect", err)
	}
	return data, ok, nil
}

func (v *env) RecordEffect(ctx context.Context, id string, data []byte) error {
	since := v.js.begin()
	if err := v.journal.RecordEffect(ctx, id, data); err != nil {
		return v.js.failed("effect", err)
	}
	v.js.ok(since)
	return nil
}

func (v *env) Sessions() state.Store                         { return v.state.sessions }
func (v *env) ConversationWait() time.Duration               { return v.opts.conversationWait }
func (v *env) Waits() *handling.Waits                        { return v.waits }
func (v *env) IsCancel(ev *platform.Event, user string) bool { return v.engine().isCancel(ev, user) }

// Accepts runs accept, recovering a panic: it is logged and counted like a
// handler's, and does not accept.
func (v *env) Accepts(accept func(platform.Event) bool, ev platform.Event) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			v.handlerPanics.Add(1)
			v.log.Error("Next's accept function panicked", zap.Any("panic", r),
				zap.ByteString("stack", debug.Stack()), zap.String("platform", ev.Platform), zap.String("chat", ev.Chat.ID))
		}
	}()
	return accept(ev)
}

func (v *env) Texts() handling.Texts { return handling.Texts(v.opts.replyTexts) }
