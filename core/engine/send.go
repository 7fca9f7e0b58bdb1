package engine

import (
	"context"
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
}

// send queues msg for chat (under key, on the named platform) and returns
// its Future.
func (e *Engine) send(platformName, key string, chat platform.Chat, msg platform.OutboundMessage) *future.Future[platform.SendResult] {
	s := e.senders[platformName]
	if s == nil {
		return future.Resolved(platform.SendResult{}, ErrNoSender)
	}
	t := e.newSendTask(s, platform.SendRequest{Platform: platformName, Target: chat, Message: msg})
	if err := e.submitSend(key, t.run); err != nil {
		t.f.Resolve(platform.SendResult{}, fmt.Errorf("engine: send not queued: %w", err))
	}
	return t.f
}

// newSendTask returns the task that sends req through s, its life bounded
// by the OutboundDispatcher's MaxLifetime.
func (e *Engine) newSendTask(s platform.Sender, req platform.SendRequest) *sendTask {
	now := time.Now()
	var deadline time.Time
	if life := e.out.cfg.maxLifetime; life > 0 {
		deadline = now.Add(life)
	}
	t := &sendTask{s: s, req: req, f: future.New[platform.SendResult]()}
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
	if t.progress.Started.IsZero() {
		t.progress.Started = time.Now()
	}
	res, err := t.s.Send(platform.WithProgress(ctx, &t.progress), t.req)
	returned = true
	if _, paused := platform.PauseOf(err); paused {
		return err // not finished: the dispatcher runs it again
	}
	t.f.Resolve(res, err)
	return err
}
