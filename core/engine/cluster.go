package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/future"
	"github.com/heraldbot/herald/platform"
)

// Cluster is a [Journal] shared by several processes of one bot (package
// cluster's, on a NATS cluster). Given to [WithJournal], it makes the
// engine one member of the bot:
//
//   - an event HandleEvent records is handled by the process that owns
//     its chat's partition, which the cluster delivers it to
//     (ClusterMember.Deliver): each chat is handled by one process at a
//     time, in order, so conversations work across processes;
//   - a send Reply records is made by the process that holds the lease of
//     its platform account, the gateway (ClusterMember.Send), through that
//     process's dispatcher and sender chain, so a platform's rate limits
//     hold across all processes; its outcome comes back to the process
//     that made it (ClusterMember.Result), and Wait and Edit work as in
//     one process;
//   - only the gateway of an account runs its adapter's connection
//     (ClusterMember.Lead): one long poll, one WebSocket.
type Cluster interface {
	Journal
	// Join takes part in the cluster for m until ctx ends or it fails for
	// good. When ctx ends it stops taking events and sends, lets m finish
	// what it took (ClusterMember.Drain), gives up its leases and
	// partitions so other members take them at once, and returns nil.
	Join(ctx context.Context, m ClusterMember) error
	// Interact makes in on the named adapter's account through its
	// gateway: this process's adapter when it leads the account
	// (ClusterMember.Interact), another member's otherwise. It returns
	// what a download fetched, and the gateway's error as the gateway's
	// adapter gave it (its kind and the platform sentinels it matched);
	// with no gateway, a retryable error.
	Interact(ctx context.Context, adapter string, in Interaction) ([]byte, error)
}

// ClusterMember is the engine as its [Cluster] sees it.
type ClusterMember interface {
	// Adapters returns the names of the engine's adapters: the platform
	// accounts it can lead.
	Adapters() []string
	// Deliver queues ev, an event of a partition this process owns, for
	// its handlers; rec is done once its handling ended. redelivered says
	// another process (or this one, before a restart) may have handled
	// it: its handlers' sends may repeat ones made before. Deliver waits
	// while the chat's queue is full, until ctx ends.
	Deliver(ctx context.Context, ev platform.Event, rec JournalRecord, redelivered bool) error
	// Lead runs the connection of the named adapter until ctx ends: this
	// process holds the lease of its account.
	Lead(ctx context.Context, adapter string) error
	// Send makes a send of an account this process leads, recorded as rec
	// (with its id and progress), through the dispatcher and the sender
	// chain; done gets its final outcome. rec is done by then, but for a
	// send a forced shutdown cut off, which stays for the next gateway.
	Send(s RecoveredSend, done func(platform.SendResult, error)) error
	// Result resolves the Future of a send this process made, by the key
	// AppendSend gave it, with the gateway's outcome.
	Result(key string, res platform.SendResult, err error)
	// Drain waits until the events and sends this process took are done,
	// or ctx ends.
	Drain(ctx context.Context) error
	// Interact makes in on this process's adapter of the account it
	// leads, for a member that asked through Cluster.Interact.
	Interact(ctx context.Context, adapter string, in Interaction) ([]byte, error)
}

// clusterState is the engine's side of its Cluster.
type clusterState struct {
	c Cluster

	mu     sync.Mutex
	remote map[string]*future.Future[platform.SendResult] // sends made elsewhere, by key
}

// member is the engine as a ClusterMember; a type of its own keeps these
// methods out of Engine's.
type member Engine

func (m *member) engine() *Engine { return (*Engine)(m) }

// Adapters implements ClusterMember.
func (m *member) Adapters() []string {
	names := make([]string, len(m.adapters))
	for i, a := range m.adapters {
		names[i] = a.Name()
	}
	return names
}

// deliverRetry is how long Deliver waits before trying a full chat queue
// again.
const deliverRetry = 50 * time.Millisecond

// Deliver implements ClusterMember.
func (m *member) Deliver(ctx context.Context, ev platform.Event, rec JournalRecord, redelivered bool) error {
	e := m.engine()
	for {
		err := e.enqueue(ev, rec, redelivered)
		if err == nil {
			e.journal.events.Add(1)
			return nil
		}
		if !errors.Is(err, ErrQueueFull) {
			return err
		}
		t := time.NewTimer(deliverRetry)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// Lead implements ClusterMember.
func (m *member) Lead(ctx context.Context, name string) error {
	e := m.engine()
	for _, a := range e.adapters {
		if a.Name() != name {
			continue
		}
		e.log.Info("engine: leading the platform account", zap.String("adapter", name))
		defer e.log.Info("engine: no longer leading the platform account", zap.String("adapter", name))
		var err error
		if ca, ok := a.(platform.ConfirmingAdapter); ok {
			err = ca.RunConfirmed(ctx, e.HandleEvent)
		} else {
			err = a.Run(ctx, e.handleFromAdapter)
		}
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return fmt.Errorf("engine: no adapter %q", name)
}

// Send implements ClusterMember.
func (m *member) Send(s RecoveredSend, done func(platform.SendResult, error)) error {
	e := m.engine()
	snd := e.senders[s.Request.Platform]
	if snd == nil {
		return fmt.Errorf("engine: no adapter %q", s.Request.Platform)
	}
	t := e.newSendTask(snd, s.Request)
	t.id, t.rec, t.fence = s.ID, s.Record, s.Fence
	t.progress.Journaled = true
	if !s.Progress.Started.IsZero() {
		t.progress.Started, t.progress.Attempts, t.progress.Platform = s.Progress.Started, s.Progress.Attempts, s.Progress.Platform
		t.notBefore = s.Progress.NotBefore
	}
	e.journal.sends.Add(1)
	if err := e.out.Submit(chatKey(s.Request.Platform, s.Request.Target.ID), t.run); err != nil {
		e.journal.sends.Add(-1)
		return err
	}
	go func() { // ends when the send does
		res, err := t.f.Wait(context.Background())
		done(res, err)
	}()
	return nil
}

// Result implements ClusterMember.
func (m *member) Result(key string, res platform.SendResult, err error) {
	cs := m.engine().cluster
	cs.mu.Lock()
	f := cs.remote[key]
	delete(cs.remote, key)
	cs.mu.Unlock()
	if f != nil {
		f.Resolve(res, err)
	}
}

// Drain implements ClusterMember.
func (m *member) Drain(ctx context.Context) error {
	e := m.engine()
	for {
		st := e.journalStats()
		in, out := e.inStats(), e.out.Stats()
		if st == (JournalStats{}) && in.Queued+in.Running == 0 && out.Queued+out.Running+out.Waiting == 0 {
			return nil
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// awaitRemote returns the Future of a send the gateway makes, resolved by
// Result under key. The gateway that makes it answers the process the
// send's record names, also a gateway that took over after the first
// died; a Future still open when the engine stops is resolved then
// (resolveRemote).
func (e *Engine) awaitRemote(key string) *future.Future[platform.SendResult] {
	cs := e.cluster
	f := future.New[platform.SendResult]()
	cs.mu.Lock()
	cs.remote[key] = f
	cs.mu.Unlock()
	return f
}

// resolveRemote resolves the Futures of sends made elsewhere whose outcome
// this process will no longer hear: it stops.
func (e *Engine) resolveRemote() {
	cs := e.cluster
	cs.mu.Lock()
	open := cs.remote
	cs.remote = map[string]*future.Future[platform.SendResult]{}
	cs.mu.Unlock()
	for _, f := range open {
		f.Resolve(platform.SendResult{}, fmt.Errorf("%w: the send's outcome is made elsewhere and no longer heard here", ErrEngineClosed))
	}
}

// runCluster is Run with a Cluster: the engine joins it, which runs the
// adapters whose leases this process holds and delivers the events of the
// partitions it owns, until ctx ends or Shutdown is called; then it leaves,
// within the shutdown timeout: it stops taking events and sends, finishes
// those it took, gives up its leases and partitions, and stops.
func (e *Engine) runCluster(ctx context.Context) error {
	rec, err := e.cluster.c.Recover(ctx)
	if err != nil {
		return fmt.Errorf("engine: journal: recover: %w", err)
	}
	e.deadLetters.Restore(rec.DeadLetters)
	stopCtx, endStop := context.WithCancel(context.Background())
	defer endStop()
	jctx, leave := context.WithCancel(platform.WithStopContext(context.WithoutCancel(ctx), stopCtx))
	defer leave()
	// Adapters that take events in at a listener of their own (a
	// webhook) receive in every process; the gateway only registers it.
	rctx, stopReceiving := context.WithCancel(jctx)
	defer stopReceiving()
	var receiving sync.WaitGroup
	defer receiving.Wait()
	for _, a := range e.adapters {
		if r, ok := a.(platform.Receiver); ok && r.Receives() {
			receiving.Go(func() {
				if err := r.Receive(rctx, e.HandleEvent); err != nil && rctx.Err() == nil {
					e.log.Error("engine: receiving failed; this process takes no events from the adapter", zap.String("adapter", a.Name()), zap.Error(err))
				}
			})
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- e.cluster.c.Join(jctx, (*member)(e)) }()
	e.log.Info("engine running as a member of a cluster", zap.Strings("adapters", (*member)(e).Adapters()))

	var runErr error
	joined := true
	select {
	case <-ctx.Done():
	case <-e.stopping:
	case runErr = <-errc:
		joined = false
		if runErr != nil {
			e.log.Error("cluster failed; stopping", zap.Error(runErr))
		}
	}
	sctx, scancel := context.WithTimeout(context.Background(), e.opts.shutdownTimeout)
	defer scancel()
	context.AfterFunc(sctx, endStop)
	stopReceiving()
	receiving.Wait()
	leave()
	if joined {
		if err := <-errc; err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	if err := e.Shutdown(sctx); err != nil {
		runErr = errors.Join(runErr, err)
	}
	e.resolveRemote()
	return runErr
}
