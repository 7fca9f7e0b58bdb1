package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/backoff"
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
	m       journal.Member
	name    string
	rev     uint64
	renewed atomic.Int64 // UnixNano of the last renewal

	// recv ends when the gateway stops taking events and sends; conn,
	// which also fences the sends, when it lets the connection go.
	recv     context.Context
	stopRecv context.CancelFunc
	conn     context.Context
	stopConn context.CancelFunc
	ran      chan struct{}

	it     *puller
	pulled chan struct{}
	// redeliveredBelow: sends up to this stream sequence were in OUT
	// when the consumer was reset, and may have been made before.
	redeliveredBelow uint64

	// leaving is set once the gateway stops taking sends: those not
	// started yet are left in OUT for the next gateway (the fence fails).
	leaving atomic.Bool
	// unsure is set the first time the fence fails (see sure): from then
	// on it never holds again for this lead.
	unsure atomic.Bool

	calls *interactions // the account's interactions, made for the members
}

// renewLeases renews the leases this member holds, gives up those it
// cannot renew, and with take takes those of the accounts nobody holds.
func (r *membership) renewLeases(ctx context.Context, take bool) {
	s := r.s
	for _, name := range r.m.Adapters() {
		key := token(name)
		s.leading.LoadOrStore(name, false) // contended: its gauge is 0 until held
		if l := r.leads[name]; l != nil && l.lost() {
			// It stopped taking sends: its consumer of OUT is gone (OUT
			// created again, or the server lost it), or its lease was
			// unsure for a while. The lease is given up, and taken again.
			s.warn.Warn("cluster: the gateway stopped taking sends (its consumer is gone, or its lease was unsure); leading again", zap.String("adapter", name))
			rctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			l.release(rctx)
			cancel()
			delete(r.leads, name)
			s.leading.Store(name, false)
		}
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
			s.storeRefused(err)
			l.lose()
			delete(r.leads, name)
			s.leading.Store(name, false)
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
				s.storeRefused(err)
				s.repair(ctx, err)
			}
			continue
		}
		l, err := r.lead(ctx, name, rev, at)
		if err != nil {
			s.warn.Warn("cluster: cannot lead", zap.String("adapter", name), zap.Error(err))
			s.repair(ctx, err)
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
	l := &lead{s: s, m: r.m, name: name, rev: rev, ran: make(chan struct{}), it: newPuller(it), pulled: make(chan struct{}),
		redeliveredBelow: info.State.LastSeq}
	l.renewed.Store(taken.UnixNano())
	l.conn, l.stopConn = context.WithCancel(context.Background())
	l.recv, l.stopRecv = context.WithCancel(l.conn)
	if err := l.serveInteractions(); err != nil {
		l.stopConn()
		l.it.Stop()
		return nil, err
	}
	go l.connect()
	go l.pull()
	return l, nil
}

// valid reports whether the lease is still surely this member's: renewed
// within two thirds of its TTL, so a gateway paused past that does not
// send (fencing), and the member connected, so that what it sends it can
// also record as sent.
func (l *lead) valid() error {
	if l.conn.Err() != nil || l.leaving.Load() || !l.s.nc.IsConnected() || time.Since(time.Unix(0, l.renewed.Load())) > l.s.cfg.LeaseTTL*2/3 {
		return ErrLeaseLost
	}
	return nil
}

// sure is the fence of the gateway's sends, connection and interactions:
// valid, until the first time it is not. From then on it fails for good,
// and the gateway stops taking sends from OUT at once, so that the
// membership leads again, from the consumer reset (see lost). A fence
// that held again once the lease was renewed would let the chat's next
// sends go while the fenced one waits in OUT unacknowledged, out of
// order, its Future unresolved, until AckWait.
func (l *lead) sure() error {
	if l.unsure.Load() {
		return ErrLeaseLost
	}
	err := l.valid()
	if err != nil && l.unsure.CompareAndSwap(false, true) && l.it != nil {
		l.stopPulling()
	}
	return err
}

// connect runs the adapter's connection while the lease lasts. It is
// fenced like the sends: once the lease is not surely this member's (it
// was not renewed in time), the connection is stopped, so a gateway that
// lost its lease does not poll against the next one, and it waits for the
// lead to end (the membership leads again, with a new connection, if the
// lease turns out to be still this member's).
func (l *lead) connect() {
	defer close(l.ran)
	for l.recv.Err() == nil {
		if l.sure() != nil {
			// Unsure: wait for the membership to lead again (or for the loss).
			if !l.sleep(l.s.cfg.Heartbeat) {
				break
			}
			continue
		}
		recv, stopRecv := context.WithCancel(l.recv)
		conn, stopConn := context.WithCancel(l.conn)
		fenced := make(chan struct{})
		go func() { // ends with the connection
			defer close(fenced)
			// Unsure of its lease, the gateway also stops taking sends
			// from OUT at once: the next gateway, which resets the
			// consumer as it leads, then gets every send left, in order
			// (this one, renewed after all, leads again: see lost).
			l.fence(conn, func() { l.stopPulling(); stopRecv(); stopConn() })
		}()
		err := l.m.Lead(recv, conn, l.name)
		stopRecv()
		stopConn()
		<-fenced
		if err != nil {
			// The member stops: the engine reports its adapter's failure.
			l.s.warn.Error("cluster: the gateway's connection failed", zap.String("adapter", l.name), zap.Error(err))
			return
		}
	}
}

// fence calls stop once the lease is no longer surely this member's, or
// returns when ctx ends: a timer set to when the last renewal stops
// counting (two thirds of the TTL after it) is the lease's deadline, set
// again after each renewal.
func (l *lead) fence(ctx context.Context, stop func()) {
	for {
		left := l.s.cfg.LeaseTTL*2/3 - time.Since(time.Unix(0, l.renewed.Load()))
		if left <= 0 || l.sure() != nil {
			l.unsure.Store(true)
			stop()
			return
		}
		t := time.NewTimer(left) // the lease's deadline, as renewed last
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// sleep waits d (a pause before trying again), or until the connection
// ends; it reports whether the gateway still runs.
func (l *lead) sleep(d time.Duration) bool {
	return backoff.Sleep(l.recv, d) && l.recv.Err() == nil
}

// pull hands the account's sends to the member's dispatcher, in order,
// until it stops taking or its consumer is gone (see lost).
func (l *lead) pull() {
	defer close(l.pulled)
	for {
		msg, err := l.it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
				errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrBadRequest) {
				return
			}
			continue
		}
		l.send(msg)
	}
}

// stopPulling stops taking sends from OUT; pull then returns, once it
// handed back the sends its pulls brought (see puller).
func (l *lead) stopPulling() { l.it.Stop() }

// lost reports whether the gateway stopped pulling sends by itself: its
// consumer of OUT is gone, or its lease was unsure.
func (l *lead) lost() bool {
	select {
	case <-l.pulled:
		return !l.leaving.Load()
	default:
		return false
	}
}

func (l *lead) send(msg jetstream.Msg) {
	s := l.s
	reply, key := msg.Headers().Get(hdrReply), msg.Headers().Get(hdrKey)
	data, blob, err := l.read(msg)
	if err != nil {
		if errors.Is(err, errBlobGone) {
			s.warn.Warn("cluster: a send in OUT whose object is gone cannot be read; dropping it", zap.Error(err))
			_ = msg.Term()
			l.answerLost(reply, key, err)
			return
		}
		_ = msg.Nak() // the gateway stops: the next one reads it
		return
	}
	var d sendData
	if err := decodeRecord(data, &d); err != nil {
		s.warn.Warn("cluster: a send in OUT does not decode; dropping it", zap.Error(err))
		_ = msg.Term()
		s.dropBlob(blob)
		l.answerLost(reply, key, err)
		return
	}
	answer := func(res platform.SendResult, err error) {
		if errors.Is(err, ErrLeaseLost) || reply == "" {
			return // the next gateway makes it, and answers
		}
		if reply == s.results {
			// This member's own send: heard here, without a message. Its
			// error is the one a member elsewhere would hear.
			if done := s.takeResult(key); done != nil {
				if err != nil {
					err = decodeError(encodeError(err))
				}
				done(res, err)
			}
			return
		}
		o := outcome{Key: key, Result: res, wireError: encodeError(err)}
		if b, merr := json.Marshal(o); merr == nil {
			_ = s.nc.Publish(reply, b)
		}
	}
	meta, _ := msg.Metadata()
	rec := &outRecord{l: l, msg: msg, id: d.ID, blob: blob}
	rec.sum, rec.what = sumOf(msg.Headers())
	out := journal.Outgoing{ID: d.ID, Request: d.Request, Record: rec, Fence: l.sure, Held: true, Done: answer}
	if meta != nil {
		rec.seq = meta.Sequence.Stream
		out.Redelivered = meta.NumDelivered > 1 || rec.seq <= l.redeliveredBelow
		if meta.NumDelivered > 1 {
			s.redeliveries.Add(1)
		}
	}
	if out.Redelivered {
		// A send delivered before may have been made, or begun: a
		// gateway saves its progress as it makes it. One never delivered
		// before has neither, and costs no request.
		ctx, cancel := context.WithTimeout(l.conn, opTimeout)
		if d.ID != "" {
			// Made before, by a gateway that died before its ack?
			if m, ok, err := s.mark(ctx, d.ID); err == nil && ok {
				err = msg.DoubleAck(ctx)
				cancel()
				if err == nil || errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
					s.skipped.Add(1)
					answer(m.SendResult, nil)
				}
				return
			}
		}
		if e, err := s.progress.Get(ctx, progressKey(rec.seq)); err == nil {
			rec.saved = true
			_ = json.Unmarshal(e.Value(), &out.Progress)
		}
		cancel()
	}
	// The consumer's MaxAckPending bounds the sends in hand: they are
	// queued past a chat's queue bound, in OUT's order.
	if err := l.m.Make(out); err != nil {
		// The engine stops, or cannot make the account's sends: this
		// gateway takes no more, and the next one makes them, in order.
		l.leaving.Store(true)
		l.s.warn.Warn("cluster: a send could not be queued; the next gateway makes it", zap.Error(err))
		_ = msg.Nak()
	}
}

// read returns the bytes of msg's send: its data, or the object it names.
// While the store cannot give the object, it tries again on a heartbeat,
// so that the account's order holds; it gives up when the gateway stops.
func (l *lead) read(msg jetstream.Msg) ([]byte, string, error) {
	beat := time.NewTicker(probeEvery) // heartbeat: the object asked for again while the store cannot give it
	defer beat.Stop()
	for {
		data, blob, err := l.s.recordData(l.recv, msg.Headers(), msg.Data()) // each request bounded there
		if err == nil || errors.Is(err, errBlobGone) {
			return data, blob, err
		}
		l.s.warn.Warn("cluster: a send's object cannot be read; trying again", zap.Error(err))
		select {
		case <-l.recv.Done():
			return nil, blob, l.recv.Err()
		case <-beat.C:
		}
	}
}

// answerLost tells the member that appended a send which can never be
// read that it failed for good.
func (l *lead) answerLost(reply, key string, cause error) {
	if reply == "" {
		return
	}
	err := platform.Permanent(fmt.Errorf("cluster: the send's record cannot be read: %w", cause))
	if b, merr := json.Marshal(outcome{Key: key, wireError: encodeError(err)}); merr == nil {
		_ = l.s.nc.Publish(reply, b)
	}
}

// stopTaking stops pulling sends and starting those taken: the sends
// under way end, the others are left in OUT for the next gateway, which
// makes them in order. The connection stays until release or lose.
func (l *lead) stopTaking() {
	l.leaving.Store(true)
	l.stopRecv() // the next gateway polls
	l.stopPulling()
	<-l.pulled
	l.calls.stop()
}

// lose stops the gateway at once: the lease is another's now.
func (l *lead) lose() {
	l.stopTaking()
	l.stopConn()
	<-l.ran
}

// release gives the lease up, once the sends under way ended: the next
// gateway takes it at once.
func (l *lead) release(ctx context.Context) {
	l.stopTaking()
	l.stopConn()
	<-l.ran
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
	blob  string // the object holding its bytes, or ""
	sum   uint64 // the send's Sum and What (journal.Send)
	what  string
}

// Done marks the send delivered (a handler run again after a crash may
// repeat it: the gateway cannot tell whether its event is done, so every
// send with an id is marked) and acknowledges it.
//
// What the store refuses (an outage) is done once it is back, and Done's
// error then wraps journal.ErrOutage: a mark refused does not hold the
// acknowledgement back (the send would be offered again, and made again,
// for sure).
func (r *outRecord) Done(ctx context.Context, delivered *platform.SendResult) error {
	s := r.l.s
	var markErr error
	marked := false
	if delivered != nil && r.id != "" {
		id, m := r.id, markData{SendResult: *delivered, Sum: r.sum, What: r.what}
		markErr = s.finish(ctx, func(ctx context.Context) error { return s.putMark(ctx, id, m) })
		marked = markErr == nil
	}
	msg, seq, saved, blob := r.msg, r.seq, r.saved, r.blob
	s.outAnchored.acked.Add(1)
	err := s.finish(ctx, func(ctx context.Context) error {
		if marked {
			// The mark is stored: an acknowledgement lost on the way
			// costs a redelivery, which the mark answers with no send
			// (see lead.send), so it need not wait for the server's
			// answer — one request fewer per send.
			if err := msg.Ack(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
				return outage("done", err)
			}
		} else if err := msg.DoubleAck(ctx); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return outage("done", err)
		}
		if saved {
			_ = s.progress.Purge(ctx, progressKey(seq))
		}
		s.dropBlob(blob)
		return nil
	})
	if markErr != nil || err != nil {
		return fmt.Errorf("%w (kept; finished once the store takes writes again)", errors.Join(markErr, err))
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
