package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// sendTask is one send on the OutboundDispatcher: its request, the sender
// chain it goes through, the Future it resolves, and its Progress, which
// it owns across its runs (see platform.Progress).
type sendTask struct {
	s        platform.Sender
	req      platform.SendRequest
	f        *future.Future[platform.SendResult]
	progress platform.Progress

	// With a journal: the send's id and record, the event whose handler
	// made it (nil for others), and, for a send taken up after a restart
	// that was waiting, when its wait ends.
	js        *journalState
	id        string
	rec       JournalRecord
	ev        *eventState
	notBefore time.Time
	fence     func() error
}

// send queues msg, a send of ev's handler, for chat (under key) and
// returns its Future.
func (e *Engine) send(ev *eventState, key string, chat platform.Chat, msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	req := platform.SendRequest{Platform: ev.event.Platform, Target: chat, Message: msg}
	f, _ := e.queueSend(key, JournalSend{ID: ev.nextSendID(), Request: req, Repeat: ev.recovered}, ev)
	return f
}

// queueSend records s in the journal, if there is one, and queues it
// under key; ev is the event whose handler made it, or nil. Its error says
// why it was not queued (no adapter, the journal or the dispatcher
// refused); the Future is then resolved with it.
func (e *Engine) queueSend(key string, s JournalSend, ev *eventState) (*future.Future[platform.SendResult], error) {
	snd := e.senders[s.Request.Platform]
	if snd == nil {
		return future.Resolved(platform.SendResult{}, ErrNoSender), ErrNoSender
	}
	t := e.newSendTask(snd, s.Request)
	if js := e.journal; js != nil {
		ctx, cancel := context.WithTimeout(context.Background(), journalOpTimeout)
		a, err := js.j.AppendSend(ctx, s)
		cancel()
		switch {
		case err != nil:
			err = js.failed("send", err)
			return future.Resolved(platform.SendResult{}, err), err
		case a.Duplicate:
			// A handler run again after a restart repeats a send it made
			// before: that one is being made again, or was made.
			js.ok()
			if f := js.replay(s.ID); f != nil {
				return f, nil
			}
			var res platform.SendResult
			if a.Delivered != nil {
				res = *a.Delivered
			}
			return future.Resolved(res, nil), nil
		}
		js.ok()
		if e.cluster != nil {
			return e.awaitRemote(a.Key), nil // the gateway makes it
		}
		js.sends.Add(1)
		t.id, t.rec, t.ev = s.ID, a.Record, ev
		t.progress.Journaled = true
	}
	if err := e.submitSend(key, t.run); err != nil {
		err = fmt.Errorf("engine: send not queued: %w", err)
		t.f.Resolve(platform.SendResult{}, err)
		if t.js != nil {
			t.js.doneSend(t.rec, nil)
		}
		return t.f, err
	}
	return t.f, nil
}

// newSendTask returns the task that sends req through s, its life bounded
// by the OutboundDispatcher's MaxLifetime.
func (e *Engine) newSendTask(s platform.Sender, req platform.SendRequest) *sendTask {
	now := time.Now()
	var deadline time.Time
	if life := e.out.x.MaxLifetime(); life > 0 {
		deadline = now.Add(life)
	}
	t := &sendTask{s: s, req: req, f: future.New[platform.SendResult](), js: e.journal}
	t.progress = *platform.NewProgress(time.Time{}, deadline) // Started: at the first run
	return t
}

// run is one run of the send. It resolves the Future on every path but a
// pause: with the sender's result or error, ErrSendAborted if the sender
// called runtime.Goexit, or an error wrapping ErrSendPanicked if it
// panicked, in which case the panic goes on to the dispatcher, which
// recovers and reports it.
func (t *sendTask) run(ctx context.Context) error {
	returned := false
	defer func() {
		if returned {
			return
		}
		r := recover()
		if r == nil {
			t.f.Resolve(platform.SendResult{}, ErrSendAborted)
			return
		}
		if perr, ok := r.(error); ok {
			t.f.Resolve(platform.SendResult{}, fmt.Errorf("%w: %w", ErrSendPanicked, perr))
		} else {
			t.f.Resolve(platform.SendResult{}, fmt.Errorf("%w: %v", ErrSendPanicked, r))
		}
		panic(r)
	}()
	if t.fence != nil {
		if err := t.fence(); err != nil {
			returned = true
			if t.rec != nil {
				t.js.sends.Add(-1) // not made, not done: another makes it
			}
			t.f.Resolve(platform.SendResult{}, err)
			return nil
		}
	}
	if d := time.Until(t.notBefore); d > 0 {
		// Taken up after a restart in the middle of a wait.
		t.notBefore = time.Time{}
		returned = true
		return &platform.PauseError{Delay: d}
	}
	if t.progress.Started.IsZero() {
		t.progress.Started = time.Now()
	}
	if t.fence != nil {
		ctx = context.WithValue(ctx, fenceKey{}, t.fence)
	}
	res, err := t.s.Send(platform.WithProgress(ctx, &t.progress), t.req)
	returned = true
	if _, paused := platform.PauseOf(err); paused {
		t.save()
		return err // not finished: the dispatcher runs it again
	}
	if r := t.progress.Reserved; r != nil {
		r.Cancel() // tokens a layer reserved and the send no longer needs
		t.progress.Reserved = nil
	}
	// The outcome is final: a failure is a dead letter by now (the chain's
	// DeadLetters keeps it, in the journal too), so the record can go —
	// unless a forced shutdown cancelled the send: the journal then keeps
	// it for the next start (and it is no dead letter).
	if t.js != nil && !cancelledJournaled(ctx, &t.progress, err) {
		var delivered *platform.SendResult
		if err == nil && t.id != "" && (t.ev == nil || !t.ev.settled.Load()) {
			delivered = &res // its handler may run again: remember it was sent
		}
		t.js.doneSend(t.rec, delivered)
	}
	t.f.Resolve(res, err)
	return err
}

// save records a paused send's progress in the journal, so that a restart
// takes it up where it stopped.
func (t *sendTask) save() {
	if t.rec == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalOpTimeout)
	defer cancel()
	if err := t.rec.Save(ctx, &t.progress); err != nil {
		t.js.failed("save progress", err)
	}
}

// cancelledJournaled reports whether a journaled send ended because its
// context was cancelled: a forced shutdown, after which the journal keeps
// the send to make it at the next start. DeadLetters does not keep it.
func cancelledJournaled(ctx context.Context, p *platform.Progress, err error) bool {
	return p.Journaled && errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled)
}

// fenceKey carries a send's fence (RecoveredSend.Fence) down its sender
// chain, to fencedSender.
type fenceKey struct{}

// fencedSender is the innermost layer of a cluster member's chains: it
// checks the send's fence once more right before the platform is called,
// after whatever the layers above waited for (a rate limit's token, a
// retry's backoff), so a gateway paused meanwhile, that lost its lease,
// does not send. A fenced send pauses; its next run finds the fence
// closed and leaves it to the next gateway.
type fencedSender struct{ next platform.Sender }

func (f fencedSender) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	if fence, ok := ctx.Value(fenceKey{}).(func() error); ok && fence() != nil {
		return platform.SendResult{}, &platform.PauseError{}
	}
	return f.next.Send(ctx, req)
}
