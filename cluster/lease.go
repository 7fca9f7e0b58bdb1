package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// ErrLeaseLost is what a send a gateway stops making fails with: its lease
// ran out (the gateway was paused or cut off), and the next gateway makes
// the send instead.
var ErrLeaseLost = errors.New("cluster: the gateway's lease is lost")

// lead is the gateway of one platform account, while this member holds
// its lease: the adapter's connection and the account's sends.
type lead struct {
	s       *Shared
	m       engine.ClusterMember
	name    string
	rev     uint64
	renewed atomic.Int64 // UnixNano of the last renewal

	ctx    context.Context // the adapter's connection and the sends' fence
	cancel context.CancelFunc
	ran    chan struct{}

	it     jetstream.MessagesContext
	pulled chan struct{}
	// redeliveredBelow: sends up to this stream sequence were in OUT
	// when the consumer was reset, and may have been made before.
	redeliveredBelow uint64

	// leaving is set once the gateway stops taking sends: those not
	// started yet are left in OUT for the next gateway (the fence fails).
	leaving atomic.Bool

	// waiting holds, per chat, the sends pulled while the chat's queue in
	// the dispatcher was full, in order; retry queues them as room frees
	// up. The consumer's MaxAckPending bounds them.
	mu       sync.Mutex
	waiting  map[string][]waitingSend
	nwaiting int
	wake     chan struct{}
	retried  chan struct{}

	calls *interactions // the account's interactions, made for the members
}

// waitingSend is a send that waits for room in its chat's queue.
type waitingSend struct {
	rs   engine.RecoveredSend
	done func(platform.SendResult, error)
	msg  jetstream.Msg
}

// renewLeases renews the leases this member holds, gives up those it
// cannot renew, and with take takes those of the accounts nobody holds.
func (r *membership) renewLeases(ctx context.Context, take bool) {
	s := r.s
	for _, name := range r.m.Adapters() {
		key := token(name)
		if l := r.leads[name]; l != nil {
			if time.Since(time.Unix(0, l.renewed.Load())) < s.cfg.LeaseTTL/3 {
				continue
			}
			// The lease lasts its TTL from when the server wrote it, which
			// is after this request left: count from here, not from the
			// reply, which a paused process may read much later.
			at := time.Now()
			rev, err := s.leases.Update(ctx, key, []byte(s.cfg.Node), l.rev)
			if err == nil {
				l.rev = rev
				l.renewed.Store(at.UnixNano())
				continue
			}
			if ctx.Err() != nil {
				return
			}
			s.warn.Warn("cluster: lost the lease; no longer the gateway", zap.String("adapter", name), zap.Error(err))
			l.lose()
			delete(r.leads, name)
			s.leading.Delete(name)
			continue
		}
		if !take {
			continue
		}
		at := time.Now() // as when renewing, the lease counts from the request
		rev, err := s.leases.Create(ctx, key, []byte(s.cfg.Node))
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) && ctx.Err() == nil {
				s.warn.Warn("cluster: cannot take a lease", zap.String("adapter", name), zap.Error(err))
			}
			continue
		}
		l, err := r.lead(ctx, name, rev, at)
		if err != nil {
			s.warn.Warn("cluster: cannot lead", zap.String("adapter", name), zap.Error(err))
			_ = s.leases.Delete(ctx, key, jetstream.LastRevision(rev))
			continue
		}
		r.leads[name] = l
		s.leading.Store(name, true)
		if len(r.live) > 1 {
			s.takeovers.Add(1)
		}
		s.log.Info("cluster: holding the lease: this member is the gateway", zap.String("adapter", name))
	}
}

// lead starts the gateway of name: the adapter's connection, and the
// account's sends from OUT, reset to the ack floor so that those the
// previous gateway left come first, in order. The lease of revision rev
// was asked for at taken.
func (r *membership) lead(ctx context.Context, name string, rev uint64, taken time.Time) (*lead, error) {
	s := r.s
	cname := "out-" + markKey(name)
	cons, err := s.out.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       cname,
		FilterSubject: "out." + s.Journal.cfg.Bot + "." + token(name) + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.cfg.AckWait,
		MaxAckPending: 10000,
		MaxDeliver:    -1,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cname, err)
	}
	info, err := s.out.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cname, err)
	}
	if _, err := s.out.ResetConsumer(ctx, cname); err != nil {
		return nil, fmt.Errorf("reset %s: %w", cname, err)
	}
	it, err := cons.Messages(jetstream.PullExpiry(time.Second))
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cname, err)
	}
	l := &lead{s: s, m: r.m, name: name, rev: rev, ran: make(chan struct{}), it: it, pulled: make(chan struct{}),
		redeliveredBelow: info.State.LastSeq,
		waiting:          map[string][]waitingSend{}, wake: make(chan struct{}, 1), retried: make(chan struct{})}
	l.renewed.Store(taken.UnixNano())
	l.ctx, l.cancel = context.WithCancel(context.Background())
	if err := l.serveInteractions(); err != nil {
		l.cancel()
		it.Stop()
		return nil, err
	}
	go l.connect()
	go l.pull()
	go l.retry()
	return l, nil
}

// valid reports whether the lease is still surely this member's: renewed
// within two thirds of its TTL, so a gateway paused past that does not
// send (fencing), and the member connected, so that what it sends it can
// also record as sent.
func (l *lead) valid() error {
	if l.ctx.Err() != nil || l.leaving.Load() || !l.s.nc.IsConnected() || time.Since(time.Unix(0, l.renewed.Load())) > l.s.cfg.LeaseTTL*2/3 {
		return ErrLeaseLost
	}
	return nil
}

// connect runs the adapter's connection while the lease lasts, again after
// a pause if it fails. It is fenced like the sends: while the lease is not
// surely this member's (a pause, a lost connection to NATS), the
// connection is stopped, so a gateway that lost its lease does not poll
// against the next one.
func (l *lead) connect() {
	defer close(l.ran)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for l.ctx.Err() == nil {
		if l.valid() != nil {
			select { // wait until it is sure again, or lost
			case <-tick.C:
			case <-l.ctx.Done():
			}
			continue
		}
		ctx, cancel := context.WithCancel(l.ctx)
		fenced := make(chan struct{})
		go func() {
			defer close(fenced)
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					if l.valid() != nil {
						cancel()
						return
					}
				}
			}
		}()
		err := l.m.Lead(ctx, l.name)
		stopped := ctx.Err() != nil
		cancel()
		<-fenced
		if stopped {
			continue
		}
		l.s.warn.Error("cluster: the gateway's connection failed; trying again", zap.String("adapter", l.name), zap.Error(err))
		select {
		case <-time.After(5 * time.Second):
		case <-l.ctx.Done():
		}
	}
}

// pull hands the account's sends to the member's dispatcher, in order.
func (l *lead) pull() {
	defer close(l.pulled)
	for {
		msg, err := l.it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			continue
		}
		l.send(msg)
	}
}

func (l *lead) send(msg jetstream.Msg) {
	s := l.s
	var d sendData
	if err := json.Unmarshal(msg.Data(), &d); err != nil {
		s.warn.Warn("cluster: a send in OUT does not decode; dropping it", zap.Error(err))
		_ = msg.Term()
		return
	}
	reply, key := msg.Headers().Get(hdrReply), msg.Headers().Get(hdrKey)
	answer := func(res platform.SendResult, err error) {
		if errors.Is(err, ErrLeaseLost) || reply == "" {
			return // the next gateway makes it, and answers
		}
		o := outcome{Key: key, Result: res, wireError: encodeError(err)}
		if b, merr := json.Marshal(o); merr == nil {
			_ = s.nc.Publish(reply, b)
		}
	}
	meta, _ := msg.Metadata()
	rec := &outRecord{l: l, msg: msg, id: d.ID}
	rs := engine.RecoveredSend{ID: d.ID, Request: d.Request, Record: rec, Fence: l.valid}
	if meta != nil {
		rec.seq = meta.Sequence.Stream
		redelivered := meta.NumDelivered > 1 || rec.seq <= l.redeliveredBelow
		if meta.NumDelivered > 1 {
			s.redeliveries.Add(1)
		}
		ctx, cancel := context.WithTimeout(l.ctx, opTimeout)
		if redelivered && d.ID != "" {
			// Made before, by a gateway that died before its ack?
			if res, ok, err := s.mark(ctx, d.ID); err == nil && ok {
				err = msg.DoubleAck(ctx)
				cancel()
				if err == nil || errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
					s.skipped.Add(1)
					answer(res, nil)
				}
				return
			}
		}
		if e, err := s.progress.Get(ctx, progressKey(rec.seq)); err == nil {
			rec.saved = true
			_ = json.Unmarshal(e.Value(), &rs.Progress)
		}
		cancel()
	}
	l.submit(sendChat(d.Request), waitingSend{rs: rs, done: answer, msg: msg})
}

func sendChat(r platform.SendRequest) string { return r.Platform + "\x00" + r.Target.ID }

// submit queues w in the dispatcher, or behind the sends of its chat that
// wait for room.
func (l *lead) submit(chat string, w waitingSend) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiting[chat]) == 0 && l.trySubmit(w) {
		return
	}
	l.waiting[chat] = append(l.waiting[chat], w)
	l.nwaiting++
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// trySubmit queues w in the dispatcher; it returns false when w's chat
// has no room. Called with mu held.
func (l *lead) trySubmit(w waitingSend) bool {
	err := l.m.Send(w.rs, w.done)
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		return false
	case err != nil:
		// The engine is closing: this gateway takes no more sends, and the
		// next one makes them, in order.
		l.leaving.Store(true)
		l.s.warn.Warn("cluster: a send could not be queued; the next gateway makes it", zap.Error(err))
	}
	return true
}

// retry queues the waiting sends as their chats' queues free up, until
// the gateway stops.
func (l *lead) retry() {
	defer close(l.retried)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.wake:
		}
		for {
			l.mu.Lock()
			if l.leaving.Load() { // left in OUT for the next gateway
				clear(l.waiting)
				l.nwaiting = 0
			}
			for chat, ws := range l.waiting {
				for len(ws) > 0 && l.trySubmit(ws[0]) {
					ws = ws[1:]
					l.nwaiting--
				}
				if len(ws) == 0 {
					delete(l.waiting, chat)
				} else {
					l.waiting[chat] = ws
				}
			}
			n := l.nwaiting
			l.mu.Unlock()
			if n == 0 {
				break
			}
			select {
			case <-l.ctx.Done():
				return
			case <-tick.C:
			}
		}
	}
}

// stopTaking stops pulling sends and starting those taken: the sends
// under way end, the others are left in OUT for the next gateway, which
// makes them in order.
func (l *lead) stopTaking() {
	l.leaving.Store(true)
	l.cancel() // the connection too: the next gateway polls
	l.it.Stop()
	<-l.pulled
	l.calls.stop()
}

// lose stops the gateway at once: the lease is another's now.
func (l *lead) lose() {
	l.stopTaking()
	l.cancel()
	<-l.ran
	<-l.retried
}

// release gives the lease up, once the sends under way ended: the next
// gateway takes it at once.
func (l *lead) release(ctx context.Context) {
	l.stopTaking()
	l.cancel()
	<-l.ran
	<-l.retried
	_ = l.s.leases.Delete(ctx, token(l.name), jetstream.LastRevision(l.rev))
}

// outRecord is a send a gateway took from OUT: done is a synchronous ack
// (the send's removal is confirmed before its chat's next send starts),
// after marking it delivered when it has an id.
type outRecord struct {
	l     *lead
	msg   jetstream.Msg
	id    string
	seq   uint64
	saved bool
}

// Done marks the send delivered (a handler run again after a crash may
// repeat it: the gateway cannot tell whether its event is done, so every
// send with an id is marked) and acknowledges it.
func (r *outRecord) Done(ctx context.Context, delivered *platform.SendResult) error {
	s := r.l.s
	if delivered != nil && r.id != "" {
		if err := s.putMark(ctx, r.id, delivered); err != nil {
			return err
		}
	}
	if err := r.msg.DoubleAck(ctx); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		return fmt.Errorf("cluster: done: %w", err)
	}
	if r.saved {
		_ = s.progress.Purge(ctx, progressKey(r.seq))
	}
	return nil
}

// Save records how far the send got, for the next gateway.
func (r *outRecord) Save(ctx context.Context, p *platform.Progress) error {
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("cluster: progress: %w", err)
	}
	if _, err := r.l.s.progress.Put(ctx, progressKey(r.seq), data); err != nil {
		return fmt.Errorf("cluster: progress: %w", err)
	}
	r.saved = true
	return nil
}
