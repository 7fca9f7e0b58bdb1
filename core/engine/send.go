package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/internal/lazyctx"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Errors with which a send's Future can end, besides the sender's own and
// those of the handler's Context (ErrNoChat).
var (
	// ErrNoSender resolves the Future of a send to a platform the engine
	// has no adapter for (an event given to HandleEvent by hand, say).
	ErrNoSender = errors.New("engine: no adapter for the platform")
	// ErrSendPanicked is wrapped by the error of a send whose Sender
	// panicked; the panic then continues into the dispatcher, which
	// recovers and reports it.
	ErrSendPanicked = errors.New("engine: send panicked")
	// ErrSendAborted resolves the Future of a send whose Sender called
	// runtime.Goexit.
	ErrSendAborted = errors.New("engine: send aborted")
)

// sendTask is one send on the OutboundDispatcher: its request, the sender
// chain it goes through, who hears its outcome, and its Progress, which it
// owns across its runs (see platform.Progress).
type sendTask struct {
	s        platform.Sender
	req      platform.SendRequest
	progress platform.Progress
	js       *journalState

	// f, if not nil, and done, if not nil, get the outcome.
	f    *future.Future[platform.SendResult]
	done func(platform.SendResult, error)

	// With a journal that keeps records: the send's id and record;
	// settled, for a send of a handler of this process, says whether its
	// event is done with; for a send taken up after a restart that was
	// waiting, when its wait ends; fence, for a gateway's send, whether
	// its lease still holds.
	id        string
	rec       journal.Record
	settled   func() bool
	notBefore time.Time
	fence     func() error
}

// queueSend appends s to the journal, which hands it to the gateway of its
// account (this process's Make, or another's), and returns its Future.
// Its error says why it was not queued (no adapter, the journal or the dispatcher refused); the
// Future is then resolved with it.
func (e *Engine) queueSend(key string, s journal.Send, done func(platform.SendResult, error)) (*future.Future[platform.SendResult], error) {
	return e.queueSendTo(future.New[platform.SendResult](), key, s, done)
}

// queueSendTo is queueSend resolving f, a Future not resolved yet.
func (e *Engine) queueSendTo(f *future.Future[platform.SendResult], key string, s journal.Send, done func(platform.SendResult, error)) (*future.Future[platform.SendResult], error) {
	if e.senders[s.Request.Platform] == nil {
		f.Resolve(platform.SendResult{}, ErrNoSender)
		return f, ErrNoSender
	}
	s.Done = func(res platform.SendResult, err error) {
		f.Resolve(res, err)
		if done != nil {
			done(res, err)
		}
	}
	js := e.js
	since := js.begin()
	a, err := e.journal.AppendSend(context.Background(), s)
	switch {
	case err != nil:
		if r := refusalOf(err); r != nil {
			err = r
		} else {
			err = js.failed("send", err)
		}
		f.Resolve(platform.SendResult{}, err)
		if done != nil {
			done(platform.SendResult{}, err)
		}
		return f, err
	case a.Duplicate && a.Sum != 0 && s.Sum != 0 && a.Sum != s.Sum:
		// A handler run again after a restart asks, at a send's place,
		// for another send than the one made there: it diverged.
		js.ok(since)
		err := fmt.Errorf("%w: after a restart it asked for a send (%q) where it had asked for another (%q)",
			ErrDiverged, s.What, a.What)
		f.Resolve(platform.SendResult{}, err)
		return f, err
	case a.Duplicate:
		// A handler run again after a restart repeats a send it made
		// before: that one is being made again, or was made.
		js.ok(since)
		if rf := js.replay(s.ID); rf != nil {
			// Taken up from the journal at the start, and being made: its
			// outcome, said to be the first send's.
			go func() {
				<-rf.Done()
				res, err := rf.Result()
				res.Duplicate = true
				f.Resolve(res, err)
			}()
			return f, nil
		}
		var res platform.SendResult
		if a.Delivered != nil {
			res = *a.Delivered
		}
		res.Duplicate = true
		f.Resolve(res, a.Failed)
		if a.Failed != nil && done != nil {
			// It failed for good before the restart: who hears the
			// outcome hears that again (a Prompt's question).
			done(res, a.Failed)
		}
		return f, nil
	}
	js.ok(since)
	return f, nil
}

// newSendTask returns the task that sends req through s, its life bounded
// by the OutboundDispatcher's MaxLifetime.
func (e *Engine) newSendTask(s platform.Sender, req platform.SendRequest) *sendTask {
	now := time.Now()
	var deadline time.Time
	if life := e.out.x.MaxLifetime(); life > 0 {
		deadline = now.Add(life)
	}
	t := &sendTask{s: s, req: req, js: e.js}
	t.progress = *platform.NewProgress(time.Time{}, deadline) // Started: at the first run
	t.progress.Submitted = now
	return t
}

// resolve hands the send's outcome to who hears it.
func (t *sendTask) resolve(res platform.SendResult, err error) {
	if t.f != nil {
		t.f.Resolve(res, err)
	}
	if t.done != nil {
		t.done(res, err)
	}
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
			t.resolve(platform.SendResult{}, ErrSendAborted)
			return
		}
		if perr, ok := r.(error); ok {
			t.resolve(platform.SendResult{}, fmt.Errorf("%w: %w", ErrSendPanicked, perr))
		} else {
			t.resolve(platform.SendResult{}, fmt.Errorf("%w: %v", ErrSendPanicked, r))
		}
		panic(r)
	}()
	if t.fence != nil {
		if err := t.fence(); err != nil {
			returned = true
			if t.rec != nil {
				t.js.sends.Add(-1) // not made, not done: another makes it
			}
			t.resolve(platform.SendResult{}, err)
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
		ctx = lazyctx.WithValue(ctx, fenceKey{}, t.fence) // see platform.WithProgress
	}
	res, err := t.s.Send(platform.WithProgress(ctx, &t.progress), t.req)
	returned = true
	if _, paused := platform.PauseOf(err); paused {
		t.save()
		return err // not finished: the dispatcher runs it again
	}
	t.progress.Release() // what layers hold for the send (rate tokens) and it no longer needs
	// The outcome is final: a failure is a dead letter by now (the chain's
	// DeadLetters keeps it, in the journal too), so the record can go —
	// unless a forced shutdown cancelled the send: the journal then keeps
	// it for the next start (and it is no dead letter).
	if !t.cancelledJournaled(ctx, err) {
		var delivered *platform.SendResult
		if err == nil && t.rec != nil && t.id != "" && (t.settled == nil || covered(t.rec) || !t.settled()) {
			sent := res       // a copy on the heap here, not res on every send's
			delivered = &sent // its handler may run again: remember it was sent
		}
		if c, ok := t.rec.(journal.Covering); ok && err != nil {
			t.js.failSend(c, err) // a run again gets err back
		} else {
			t.js.doneSend(t.rec, delivered)
		}
	}
	t.resolve(res, err)
	return err
}

// covered reports whether rec is a covered send's (journal.Covering),
// which decides itself whether a delivered send needs a mark.
func covered(rec journal.Record) bool {
	c, ok := rec.(journal.Covering)
	return ok && c.Covered()
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

// cancelledJournaled reports whether a journaled send was cut off by a
// forced shutdown and stays in the journal to be made at the next start
// (sender.KeptForNextStart, by which DeadLetters does not keep it).
func (t *sendTask) cancelledJournaled(ctx context.Context, err error) bool {
	return t.rec != nil && sender.KeptForNextStart(ctx, err)
}

// fenceKey carries a send's fence (journal.Outgoing.Fence) down its sender
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
