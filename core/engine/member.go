package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/internal/handling"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// member is the engine as its journal sees it (journal.Member); a type of
// its own keeps these methods out of Engine's.
type member Engine

var _ journal.Member = (*member)(nil)

func (m *member) engine() *Engine { return (*Engine)(m) }

// Adapters implements journal.Member.
func (m *member) Adapters() []string {
	names := make([]string, len(m.adapters))
	for i, a := range m.adapters {
		names[i] = a.Name()
	}
	return names
}

// Deliver implements journal.Member.
func (m *member) Deliver(in journal.Incoming) error {
	e := m.engine()
	if in.Held {
		e.handedOver.events.Add(1)
	}
	return e.enqueue(in)
}

// Make implements journal.Member: it queues the send in the
// OutboundDispatcher, through the adapter's sender chain.
func (m *member) Make(out journal.Outgoing) error {
	e := m.engine()
	if out.Held {
		e.handedOver.sends.Add(1)
	}
	t, err := e.sendTaskOf(out)
	if err != nil {
		return err
	}
	key := handling.ChatKey(out.Request.Platform, out.Request.Target.ID)
	if out.Held {
		err = e.out.x.Push(key, t.run)
	} else {
		err = e.out.x.Submit(key, t.run)
	}
	if err != nil {
		if t.rec != nil {
			e.js.sends.Add(-1)
		}
		err = fmt.Errorf("engine: send not queued: %w", err)
		if errors.Is(err, ErrDispatcherClosed) {
			return &stoppingError{err}
		}
		return &refusal{err}
	}
	return nil
}

// sendTaskOf returns the task that makes out, counted among the sends
// the journal holds if it has a record.
func (e *Engine) sendTaskOf(out journal.Outgoing) (*sendTask, error) {
	snd := e.senders[out.Request.Platform]
	if snd == nil {
		return nil, &refusal{fmt.Errorf("engine: a send to %q: %w", out.Request.Platform, ErrNoSender)}
	}
	t := e.newSendTask(snd, out.Request)
	t.id, t.rec, t.fence, t.done, t.settled = out.ID, out.Record, out.Fence, out.Done, out.Settled
	if p := out.Progress; !p.Started.IsZero() {
		t.progress.Started, t.progress.Attempts, t.progress.Platform = p.Started, p.Attempts, p.Platform
		if time.Until(p.NotBefore) > 0 {
			t.notBefore = p.NotBefore
		}
	}
	if t.rec != nil {
		sender.MarkJournaled(&t.progress)
		e.js.sends.Add(1)
	}
	if out.Redelivered && out.ID != "" {
		// A handler run again on its event may repeat the send: it gets
		// this one's Future (journal.Send's duplicate).
		t.f = future.New[platform.SendResult]()
		e.js.mu.Lock()
		e.js.replayed[out.ID] = t.f
		e.js.mu.Unlock()
	}
	return t, nil
}

// Lead implements journal.Member: it runs the adapter named name — its
// Run, taking events until ctx ends and keeping its connection for the
// sends still being made until conn ends — and, beside it, sets its
// commands menu (platform.CommandSetter). What the adapter does on its way
// out is bounded by the engine's shutdown timeout (Inbound.Stop). An adapter
// that fails for good stops the engine.
func (m *member) Lead(ctx, conn context.Context, name string) error {
	e := m.engine()
	a := e.adapter(name)
	if a == nil {
		return fmt.Errorf("engine: no adapter %q", name)
	}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(conn, cancel)()
	receiving := make(chan struct{})
	defer context.AfterFunc(ctx, func() { close(receiving) })()
	if cs, ok := a.(platform.CommandSetter); ok {
		// Beside the adapter's run, not before it: a platform that does
		// not answer at start delays no event.
		var menu sync.WaitGroup
		menu.Go(func() { e.setCommands(actx, cs) })
		defer func() {
			cancel()
			menu.Wait()
		}()
	}
	err := a.Run(actx, platform.Inbound{Handle: e.handleFrom, HandleAll: e.handleAllFrom, Receiving: receiving, Stop: e.stopCtx})
	switch {
	case ctx.Err() == nil:
		// It stopped by itself: the engine stops.
		if err == nil {
			err = fmt.Errorf("engine: adapter %s stopped", name)
		} else {
			err = fmt.Errorf("engine: adapter %s: %w", name, err)
		}
		select {
		case e.failed <- err:
		default:
		}
		return err
	case err != nil:
		e.log.Warn("adapter stopped with an error", zap.String("adapter", name), zap.Error(err))
	}
	<-actx.Done() // an adapter that returned as it stopped taking events: the sends run out
	return nil
}

// Listen implements journal.Member: the adapter's Run, listening only
// (Inbound.Listen), takes in the events the platform delivers to its own
// listener (a webhook) in every process; an adapter without one returns at
// once.
func (m *member) Listen(ctx context.Context, name string) error {
	e := m.engine()
	a := e.adapter(name)
	if a == nil {
		return nil
	}
	err := a.Run(ctx, platform.Inbound{Handle: e.handleFrom, HandleAll: e.handleAllFrom, Listen: true, Stop: e.stopCtx})
	if err != nil && ctx.Err() == nil {
		e.log.Error("engine: receiving failed; this process takes no events from the adapter", zap.String("adapter", name), zap.Error(err))
		return err
	}
	return nil
}

// Drain implements journal.Member; the wait ends at the latest with the
// engine's shutdown timeout.
func (m *member) Drain(ctx context.Context) error {
	e := m.engine()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.stopCtx, cancel)()
	if err := e.in.Drain(ctx); err != nil {
		return err
	}
	return e.out.Drain(ctx)
}

// Interact implements journal.Member: it makes in on this process's
// adapter name, and returns what a download fetched.
func (m *member) Interact(ctx context.Context, name string, in journal.Interaction) ([]byte, error) {
	return m.engine().interactHere(ctx, name, in)
}

// setCommandsTimeout bounds each call that sets an adapter's commands
// menu; a call that failed is made again after setCommandsRetry doubling
// up to setCommandsMaxRetry (jittered: half to all of it), or after the
// retry-after of a 429 when that is longer, until one succeeds.
const (
	setCommandsTimeout  = 10 * time.Second
	setCommandsRetry    = time.Second
	setCommandsMaxRetry = 5 * time.Minute
)

// setCommands makes the registered commands, with their descriptions, cs's
// menu of commands (Telegram's setMyCommands), as the account's leader
// starts. A failure is logged once and the call made again, with backoff,
// until it succeeds, its error is permanent (a menu the platform refuses),
// or ctx ends; the bot runs meanwhile, without the menu.
func (e *Engine) setCommands(ctx context.Context, cs platform.CommandSetter) {
	var cmds []platform.Command
	seen := make(map[string]bool)
	for _, m := range e.Matchers() {
		if m.Kind != string(kindCommand) || seen[m.Words[0]] {
			continue
		}
		seen[m.Words[0]] = true
		cmds = append(cmds, platform.Command{Name: m.Words[0], Description: m.Description})
	}
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, setCommandsTimeout)
		err := cs.SetCommands(cctx, cmds, platform.CommandScope{})
		cancel()
		switch {
		case err == nil:
			if attempt > 0 {
				e.log.Info("engine: the commands menu is set", zap.String("adapter", cs.Name()), zap.Int("attempts", attempt+1))
			}
			return
		case ctx.Err() != nil:
			return
		case platform.IsPermanent(err):
			e.log.Warn("engine: setting the commands menu failed; the bot runs without it", zap.String("adapter", cs.Name()), zap.Error(err))
			return
		case attempt == 0:
			e.log.Warn("engine: setting the commands menu failed; trying again", zap.String("adapter", cs.Name()), zap.Error(err))
		}
		wait := backoff.EqualJitter(backoff.Exponential(attempt, setCommandsRetry, setCommandsMaxRetry), rand.Float64())
		if after, ok := platform.RetryAfterOf(err); ok && after > wait {
			wait = after // a 429: exactly what the platform asked for
		}
		if !backoff.Sleep(ctx, wait) {
			return
		}
	}
}
