package handling

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Streamed is a streamed reply (platform.Stream) as one effect of a
// handling: its outcome is its final part's. The parts before the final
// one show it growing and are no effects: a run again after a crash may
// show some again, and a replay shows none.
type Streamed struct {
	// Replayed is the recorded outcome of the stream's final part, on a
	// replay; nil on a live run, which streams.
	Replayed *future.Future[platform.SendResult]
	// ID names the stream (platform.StreamConfig ID); Interval paces its
	// parts for the event's chat (platform.StreamConfig Interval).
	ID       string
	Interval time.Duration
	// Send sends one part (platform.StreamConfig Send), in order with the
	// chat's other sends, and waits for its outcome.
	Send func(ctx context.Context, msg platform.OutboundMessage) (platform.SendResult, error)
}

// Stream takes the place of a streamed reply to the event's chat in c's
// handling. It fails with ErrNoChat for an event without a chat, and with
// the errors of the handling's other effects.
func (c *Ctx) Stream() (Streamed, error) {
	r := c.run
	if r.chatKey == "" {
		return Streamed{}, ErrNoChat
	}
	const what = "a streamed reply"
	s := sum("stream")
	fx, pos, err := c.take(fxSend, s, what)
	switch {
	case err != nil:
		return Streamed{}, err
	case fx != nil:
		return Streamed{Replayed: fx.send()}, nil
	}
	h, env := r.h, r.env
	final := future.New[platform.SendResult]()
	r.record(pos, effect{kind: fxSend, sum: s, what: what, v: final})
	r.sends.Add(1)
	id := c.effectID(pos)
	st := Streamed{ID: id, Interval: -1}
	if id == "" {
		st.ID = fmt.Sprintf("%p.%d", h, pos) // an event without an ID: unique while the handling lasts
	}
	if sa, ok := env.Adapter(r.event.Platform).(platform.StreamingAdapter); ok {
		st.Interval = sa.StreamInterval(r.event.Chat)
	}
	st.Send = func(ctx context.Context, msg platform.OutboundMessage) (platform.SendResult, error) {
		js := journal.Send{Request: platform.SendRequest{Platform: r.event.Platform, Target: r.event.Chat, Message: msg}}
		last := msg.Stream != nil && msg.Stream.Final
		if last {
			js.ID, js.Repeat, js.Settled, js.Sum, js.What = id, r.recovered, h.settled, s, brief(msg.Text)
			env.RoomFor(ctx, r.chatKey, id, h.Key()) // as send's
		}
		f, _ := env.QueueSend(r.chatKey, js, nil)
		res, err := f.Wait(ctx)
		if last {
			final.Resolve(res, err)
		}
		return res, err
	}
	return st, nil
}
