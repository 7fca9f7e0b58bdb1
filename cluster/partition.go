package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// partition is one partition of IN a member owns: its pinned consumer,
// pulled until the member gives it up, and the events it delivered that
// are not done yet.
type partition struct {
	s    *Shared
	m    engine.ClusterMember
	n    int
	name string
	it   jetstream.MessagesContext
	ctx  context.Context
	stop func()
	done chan struct{}
	// redeliveredBelow: events up to this stream sequence were there
	// when the consumer was reset, and may have been handled before.
	redeliveredBelow uint64

	mu      sync.Mutex
	pending map[*partRecord]struct{}
	drained chan struct{} // closed when pending empties, if someone waits
}

// partRecord is an event a partition delivered: done is an ack.
type partRecord struct {
	p   *partition
	msg jetstream.Msg
}

// take creates (or finds) partition p's consumer, resets it to its ack
// floor when reset is set, and starts pulling it.
func (r *membership) take(ctx context.Context, p int, reset bool) (*partition, error) {
	s := r.s
	name := fmt.Sprintf("in-%d", p)
	cons, err := s.in.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:        name,
		FilterSubject:  fmt.Sprintf("in.%s.%d.>", s.Journal.cfg.Bot, p),
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        s.cfg.AckWait,
		MaxAckPending:  1000,
		MaxDeliver:     -1,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PinnedTTL:      s.cfg.PinnedTTL,
		PriorityGroups: []string{pinGroup},
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	part := &partition{s: s, m: r.m, n: p, name: name, done: make(chan struct{}), pending: map[*partRecord]struct{}{}}
	if reset {
		info, err := s.in.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("consumer %s: %w", name, err)
		}
		part.redeliveredBelow = info.State.LastSeq
		if _, err := s.in.ResetConsumer(ctx, name); err != nil {
			return nil, fmt.Errorf("reset %s: %w", name, err)
		}
		if r.live != nil && len(r.live) > 0 {
			s.takeovers.Add(1)
		}
	}
	it, err := cons.Messages(jetstream.PullPriorityGroup(pinGroup), jetstream.PullExpiry(max(s.cfg.PinnedTTL/2, time.Second)))
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	part.it = it
	part.ctx, part.stop = context.WithCancel(context.Background())
	go part.run()
	return part, nil
}

// run hands each event pulled to the member, in order, until stopped, and
// says "in progress" for those it still works on.
func (p *partition) run() {
	defer close(p.done)
	tick := time.NewTicker(p.s.cfg.AckWait / 3)
	defer tick.Stop()
	msgs := make(chan jetstream.Msg)
	go func() { // ends when the iterator is stopped
		defer close(msgs)
		for {
			msg, err := p.it.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					return
				}
				continue // a pull that expired, or the pin moved: pull again
			}
			select {
			case msgs <- msg:
			case <-p.ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case msg, ok := <-msgs:
			if !ok {
				return
			}
			p.deliver(msg)
		case <-tick.C:
			p.inProgress()
		case <-p.ctx.Done():
			p.it.Stop()
			for range msgs { // let the reader end
			}
			return
		}
	}
}

func (p *partition) deliver(msg jetstream.Msg) {
	var ev platform.Event
	if err := json.Unmarshal(msg.Data(), &ev); err != nil {
		p.s.warn.Warn("cluster: an event in IN does not decode; dropping it", zap.String("subject", msg.Subject()), zap.Error(err))
		_ = msg.Term()
		return
	}
	meta, err := msg.Metadata()
	redelivered := err == nil && (meta.NumDelivered > 1 || meta.Sequence.Stream <= p.redeliveredBelow)
	if redelivered {
		p.s.redeliveries.Add(1)
	}
	rec := &partRecord{p: p, msg: msg}
	p.mu.Lock()
	p.pending[rec] = struct{}{}
	p.mu.Unlock()
	if err := p.m.Deliver(p.ctx, ev, rec, redelivered); err != nil {
		p.forget(rec)
		if p.ctx.Err() == nil {
			p.s.warn.Warn("cluster: an event could not be queued; the server offers it again", zap.Error(err))
		}
		_ = msg.Nak()
	}
}

func (p *partition) inProgress() {
	p.mu.Lock()
	recs := make([]*partRecord, 0, len(p.pending))
	for r := range p.pending {
		recs = append(recs, r)
	}
	p.mu.Unlock()
	for _, r := range recs {
		_ = r.msg.InProgress()
	}
}

func (p *partition) forget(rec *partRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, rec)
	if len(p.pending) == 0 && p.drained != nil {
		close(p.drained)
		p.drained = nil
	}
}

// Done acknowledges the event: the server removes it.
func (r *partRecord) Done(context.Context, *platform.SendResult) error {
	r.p.forget(r)
	return r.msg.Ack()
}

// Save does nothing: events have no progress.
func (r *partRecord) Save(context.Context, *platform.Progress) error { return nil }

// halt stops pulling; the events delivered go on.
func (p *partition) halt() {
	p.stop()
	<-p.done
}

// release gives the partition up: it stops pulling, waits (until ctx
// ends) for the events it delivered to be done, and unpins the consumer,
// so that the next owner gets them at once and in order.
func (p *partition) release(ctx context.Context) {
	p.halt()
	p.mu.Lock()
	var wait chan struct{}
	if len(p.pending) > 0 {
		if p.drained == nil {
			p.drained = make(chan struct{})
		}
		wait = p.drained
	}
	p.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
	uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.s.in.UnpinConsumer(uctx, p.name, pinGroup); err != nil {
		p.s.log.Debug("cluster: unpin", zap.String("consumer", p.name), zap.Error(err))
	}
}
