package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// partition is one partition of IN a member owns: its pinned consumer,
// pulled until the member gives it up, and the events it delivered that
// are not done yet.
type partition struct {
	s     *Shared
	m     journal.Member
	n     int
	name  string
	claim uint64 // the revision of its claim
	it    *puller
	ctx   context.Context
	stop  func()
	done  chan struct{}
	ended chan struct{} // closed when the pulling ended, stopped or by itself
	// redeliveredBelow: events up to this stream sequence were there
	// when the consumer was reset, and may have been handled before.
	redeliveredBelow uint64
	// takenAt is when the partition was taken over from a member that
	// was gone; announce, until its first event, that it should be logged.
	takenAt  time.Time
	announce bool

	mu      sync.Mutex
	pending map[*partRecord]struct{}
	parked  int           // those of pending whose handlings wait for their users (journal.Parker)
	drained chan struct{} // closed when every one pending is parked, if someone waits
}

// unfinished is the claim of a partition given up with events in hand.
const unfinished = "-"

// partRecord is an event a partition delivered: done is an ack.
type partRecord struct {
	p      *partition
	msg    jetstream.Msg
	event  string // its handled key
	blob   string // the object holding its bytes, or ""
	parked bool   // its handling waits for its user; under p.mu
	handed bool   // handed over with its partition before its handling ended; under p.mu
}

// take claims partition p and starts pulling it, or returns nil while
// another live member still has it (it hands it over: finishes its
// events, unpins, gives the claim up). A claim left by a member that is
// gone (or by this one before a restart) is taken over: the consumer is
// reset to its ack floor first, so the events that member left come
// first, in order, marked as maybe handled before.
func (r *membership) take(ctx context.Context, p int) (*partition, error) {
	s := r.s
	me := token(s.cfg.Node)
	key := strconv.Itoa(p)
	r.mu.Lock()
	handing := r.handing[p]
	r.mu.Unlock()
	if handing {
		return nil, nil // this member's own hand-over is not over yet
	}
	var rev uint64
	from := "" // the member gone whose claim this takes over
	e, err := s.claims.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		if rev, err = s.claims.Create(ctx, key, []byte(me)); errors.Is(err, jetstream.ErrKeyExists) {
			return nil, nil
		}
	case err != nil:
	default:
		holder := string(e.Value())
		if holder != me && slices.Contains(r.live, holder) {
			return nil, nil
		}
		if holder != me && holder != unfinished {
			// Not listed: a listing taken while the holder's heartbeat
			// replaced its last one can miss it, and a member that
			// just started knows no member listed before. Its claim is
			// taken only once its heartbeat has run out — else both
			// would handle its events (seen once: a member starting
			// ran again every handling the other still ran).
			switch _, err := s.members.Get(ctx, holder); {
			case err == nil:
				return nil, nil
			case !errors.Is(err, jetstream.ErrKeyNotFound):
				return nil, fmt.Errorf("claim %d: is %s alive: %w", p, holder, err)
			}
		}
		from = holder
		if rev, err = s.claims.Update(ctx, key, []byte(me), e.Revision()); errors.Is(err, jetstream.ErrKeyExists) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("claim %d: %w", p, err)
	}
	part, err := r.startPartition(ctx, p, rev, from)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		_ = s.claims.Delete(ctx, key, jetstream.LastRevision(rev))
		return nil, err
	}
	return part, nil
}

// startPartition creates (or finds) partition p's consumer, claimed at
// rev, resets it to its ack floor, and starts pulling it; from names the
// member gone whose events it takes up, if any.
func (r *membership) startPartition(ctx context.Context, p int, rev uint64, from string) (*partition, error) {
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
	part := &partition{s: s, m: r.m, n: p, name: name, claim: rev, done: make(chan struct{}), pending: map[*partRecord]struct{}{}}
	// Nobody else has events of p in hand (its claim says so): a reset
	// redelivers only those a member gone left, first and in order.
	info, err := s.in.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	if _, err := s.in.ResetConsumer(ctx, name); err != nil {
		return nil, fmt.Errorf("reset %s: %w", name, err)
	}
	if from != "" {
		part.redeliveredBelow = info.State.LastSeq
		if from != token(s.cfg.Node) {
			s.takeovers.Add(1)
			part.takenAt, part.announce = time.Now(), true
		}
	}
	it, err := cons.Messages(jetstream.PullPriorityGroup(pinGroup), jetstream.PullExpiry(max(s.cfg.PinnedTTL/2, time.Second)))
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	part.it = newPuller(it)
	part.ctx, part.stop = context.WithCancel(context.Background())
	part.ended = make(chan struct{})
	go part.run()
	return part, nil
}

// lost reports whether the partition stopped pulling by itself: its
// consumer is gone (IN was created again, the server lost it), and it is
// to be taken again.
func (p *partition) lost() bool {
	select {
	case <-p.ended:
		return p.ctx.Err() == nil
	default:
		return false
	}
}

// run hands each event pulled to the member, in order, until stopped, and
// says "in progress" for those it still works on.
func (p *partition) run() {
	defer close(p.done)
	tick := time.NewTicker(p.s.cfg.AckWait / 3) // heartbeat: "in progress" before AckWait runs out
	defer tick.Stop()
	msgs := make(chan jetstream.Msg)
	go func() { // ends when the puller is stopped (and handed back what it held), or ends by itself
		defer close(msgs)
		defer close(p.ended)
		for {
			msg, err := p.it.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
					errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrBadRequest) {
					return // stopped, or its consumer is gone: lost tells
				}
				continue // a pull that expired, or the pin moved: pull again
			}
			select {
			case msgs <- msg:
			case <-p.ctx.Done():
				_ = msg.Nak() // taken, not handed over: the next owner gets it at once
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
			for msg := range msgs { // let the reader end; what it took goes back at once (see puller)
				_ = msg.Nak()
			}
			return
		}
	}
}

func (p *partition) deliver(msg jetstream.Msg) {
	data, blob, err := p.read(msg)
	if err != nil {
		if errors.Is(err, errBlobGone) {
			p.s.warn.Warn("cluster: an event in IN whose object is gone cannot be read; dropping it", zap.String("subject", msg.Subject()), zap.Error(err))
			_ = msg.Term()
			return
		}
		_ = msg.Nak() // the partition stops: its next owner reads it
		return
	}
	var ev platform.Event
	if err := decodeRecord(data, &ev); err != nil {
		p.s.warn.Warn("cluster: an event in IN does not decode; dropping it", zap.String("subject", msg.Subject()), zap.Error(err))
		_ = msg.Term()
		p.s.dropBlob(blob)
		return
	}
	meta, err := msg.Metadata()
	if p.announce && err == nil {
		// How long the events left by the member that was gone waited
		// for this one: the takeover's cost.
		p.announce = false
		if meta.Timestamp.Before(p.takenAt) {
			p.s.log.Info("cluster: took over a partition: its first event", zap.Int("partition", p.n),
				zap.Duration("after_taking", time.Since(p.takenAt)))
		}
	}
	redelivered := err == nil && (meta.NumDelivered > 1 || meta.Sequence.Stream <= p.redeliveredBelow)
	if redelivered {
		p.s.redeliveries.Add(1)
	}
	rec := &partRecord{p: p, msg: msg, event: handledKey(ev), blob: blob}
	p.mu.Lock()
	p.pending[rec] = struct{}{}
	p.mu.Unlock()
	// The consumer's MaxAckPending bounds the events in hand: they are
	// queued past a chat's queue bound, in the partition's order.
	if err := p.m.Deliver(journal.Incoming{Event: ev, Record: rec, Redelivered: redelivered, Held: true}); err != nil {
		p.forget(rec)
		if p.ctx.Err() == nil {
			p.s.warn.Warn("cluster: an event could not be queued; the server offers it again", zap.Error(err))
		}
		_ = msg.Nak()
	}
}

// read returns the bytes of msg's event: its data, or the object it
// names. While the store cannot give the object, it tries again on a
// heartbeat, keeping the events in hand in progress, so that the
// partition's order holds; it gives up when the partition stops.
func (p *partition) read(msg jetstream.Msg) ([]byte, string, error) {
	beat := time.NewTicker(probeEvery) // heartbeat: the object asked for again while the store cannot give it
	defer beat.Stop()
	last := time.Now()
	for {
		data, blob, err := p.s.recordData(p.ctx, msg.Headers(), msg.Data()) // each request bounded there
		if err == nil || errors.Is(err, errBlobGone) {
			return data, blob, err
		}
		p.s.warn.Warn("cluster: an event's object cannot be read; trying again", zap.Error(err))
		if time.Since(last) > p.s.cfg.AckWait/3 {
			p.inProgress()
			_ = msg.InProgress()
			last = time.Now()
		}
		select {
		case <-p.ctx.Done():
			return nil, blob, p.ctx.Err()
		case <-beat.C:
		}
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
	if _, ok := p.pending[rec]; !ok {
		return
	}
	delete(p.pending, rec)
	if rec.parked {
		rec.parked = false
		p.parked--
	}
	p.settledLocked()
}

// settledLocked closes drained once every event pending waits for its
// user: what release waits for. p.mu is held.
func (p *partition) settledLocked() {
	if len(p.pending) == p.parked && p.drained != nil {
		close(p.drained)
		p.drained = nil
	}
}

// HandedOver reports whether the event went to the partition's next
// owner before its handling ended (see journal.Parker).
func (r *partRecord) HandedOver() bool {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.handed
}

// Parked notes whether the event's handling waits for its user (see
// journal.Parker): a partition handed over does not wait for it.
func (r *partRecord) Parked(waiting bool) {
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[r]; !ok || r.parked == waiting {
		return
	}
	r.parked = waiting
	if waiting {
		p.parked++
	} else {
		p.parked--
	}
	p.settledLocked()
}

// Done acknowledges the event: the server removes it. An event with an
// object is acknowledged for sure (an ack lost would hand it over again,
// and its object would be needed), and its object removed after.
func (r *partRecord) Done(ctx context.Context, _ *platform.SendResult) error {
	r.p.forget(r)
	r.p.s.markHandled(r.event)
	r.p.s.inAnchored.acked.Add(1)
	if r.blob == "" {
		return r.msg.Ack()
	}
	if err := r.msg.DoubleAck(ctx); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		return outage("done", err) // handed over again: its object stays
	}
	r.p.s.dropBlob(r.blob)
	return nil
}

// Save does nothing: events have no progress.
func (r *partRecord) Save(context.Context, *platform.Progress) error { return nil }

// halt stops pulling; the events delivered go on.
func (p *partition) halt() {
	p.stop()
	<-p.done
}

// release gives the partition up: it stops pulling, waits (until ctx
// ends) for the handlings of the events it delivered to end or to wait
// for their users (an event it no longer pulls would end those), marks
// the events still in hand handed over, and unpins the consumer, so that
// the next owner gets them at once and in order.
func (p *partition) release(ctx context.Context) {
	p.halt()
	p.mu.Lock()
	// Checked again under the lock it is decided in: a wait that ended
	// meanwhile (its deadline) runs its handling, which is waited for;
	// once marked handed over, one that ends is dropped (HandedOver).
	for len(p.pending) > p.parked && ctx.Err() == nil {
		if p.drained == nil {
			p.drained = make(chan struct{})
		}
		wait := p.drained
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
		p.mu.Lock()
	}
	left := len(p.pending)
	for r := range p.pending {
		r.handed = true // the next owner runs its handling again
	}
	p.mu.Unlock()
	uctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := p.s.in.UnpinConsumer(uctx, p.name, pinGroup); err != nil {
		p.s.log.Debug("cluster: unpin", zap.String("consumer", p.name), zap.Error(err))
	}
	var err error
	if left > 0 {
		// Events still in hand past the hand-over's time (a conversation
		// waiting for an answer this member no longer pulls): the next
		// owner takes them up again, as from a member gone.
		_, err = p.s.claims.Update(uctx, strconv.Itoa(p.n), []byte(unfinished), p.claim)
	} else {
		err = p.s.claims.Delete(uctx, strconv.Itoa(p.n), jetstream.LastRevision(p.claim))
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		// Another member claimed it since (it counted this one gone):
		// there is nothing left to give up.
		p.s.log.Debug("cluster: a partition's claim moved on before it was given up", zap.Int("partition", p.n))
	case err != nil:
		p.s.warn.Warn("cluster: cannot give a partition's claim up; it moves once this member is gone", zap.Int("partition", p.n), zap.Error(err))
	}
}
