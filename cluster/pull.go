package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// handBackWithin bounds how long a stopped puller hands back what its
// pulls brought: with the server reachable that takes one round trip;
// in an outage it would take the connection's DrainTimeout, and the
// server offers those messages again after AckWait anyway.
const handBackWithin = 2 * time.Second

// puller reads a consumer's messages with nats.go's iterator, and when it
// stops, it hands back at once (Nak) every message its pulls brought and
// nobody read. The iterator's own Stop drops those (up to a pull's 500
// messages), and the server offers them again only after AckWait — two
// minutes by default, so a partition or a gateway that moved would leave
// its chats waiting that long.
type puller struct {
	it      jetstream.MessagesContext
	next    jetstream.NextOpt // reads until handing back ends
	cancel  context.CancelFunc
	stopped atomic.Bool
	once    sync.Once
}

func newPuller(it jetstream.MessagesContext) *puller {
	ctx, cancel := context.WithCancel(context.Background())
	return &puller{it: it, next: jetstream.NextContext(ctx), cancel: cancel}
}

// Next returns the next message, or ErrMsgIteratorClosed once the puller
// stopped and handed back what it held (or the bound passed). Other
// errors are the iterator's. A message it returns may be read just as
// Stop is called: the caller hands back what it no longer takes.
func (p *puller) Next() (jetstream.Msg, error) {
	for {
		msg, err := p.it.Next(p.next)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				p.cancel() // the bound's timer has nothing left to end
				return nil, jetstream.ErrMsgIteratorClosed
			}
			return nil, err
		}
		if !p.stopped.Load() {
			return msg, nil
		}
		_ = msg.Nak() // stopped: the next reader gets it at once
	}
}

// Stop stops pulling: Next hands back what is buffered, then ends.
func (p *puller) Stop() {
	p.once.Do(func() {
		p.stopped.Store(true)
		p.it.Drain()
		time.AfterFunc(handBackWithin, p.cancel)
	})
}
