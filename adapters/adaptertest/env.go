package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

// promptly bounds how long Send and Run may take to react to the end of
// their context, and how long Send may take to refuse a message. A
// variable only for the package's own tests (export_test.go): a child
// process that runs the suite against a send that never returns waits it
// out.
var promptly = 5 * time.Second

// Time bounds of the suite.
const (
	// patience bounds every wait for a delivery.
	patience = 30 * time.Second
	// stallCancelAfter is how long a held-up send runs before the suite
	// ends its context.
	stallCancelAfter = 100 * time.Millisecond
)

// env is one subtest's adapter, peer and, once started, Run.
type env struct {
	t    *testing.T
	peer Peer
	a    platform.Adapter
	f    Features
	name string // a.Name() before Run
	rec  *recorder

	// Set by start.
	run *runner
}

// newEnv builds the subtest's adapter and peer with h.
func newEnv(t *testing.T, h Harness, f Features) *env {
	t.Helper()
	peer := h(t)
	if peer == nil {
		t.Fatal("adaptertest: the Harness returned a nil Peer")
	}
	a := peer.Adapter()
	if a == nil {
		t.Fatal("adaptertest: Peer.Adapter returned nil")
	}
	return &env{t: t, peer: peer, a: a, f: f, name: a.Name(), rec: newRecorder()}
}

// setup builds the subtest's adapter and peer and starts Run.
func setup(t *testing.T, h Harness, f Features) *env {
	t.Helper()
	e := newEnv(t, h, f)
	e.start()
	return e
}

// runner is the suite's goroutine running Run.
type runner struct {
	cancel    context.CancelFunc
	receiving chan struct{}   // Inbound.Receiving: closed by stopTaking
	stopOnce  sync.Once       // closes receiving once
	done      chan struct{}   // closed when Run has returned
	err       error           // Run's result; set before done is closed
	life      context.Context // ends, with a cause, when Run returns
	once      sync.Once       // stops Run once
}

// start runs the adapter's Run in a goroutine with the recorder's handle,
// arranges for it to be stopped when the subtest ends, and waits for
// Peer.Ready.
func (e *env) start() {
	e.t.Helper()
	runCtx, cancel := context.WithCancel(context.Background())
	life, endLife := context.WithCancelCause(context.Background())
	r := &runner{cancel: cancel, receiving: make(chan struct{}), done: make(chan struct{}), life: life}
	e.run = r
	go func() {
		err := e.a.Run(runCtx, platform.Inbound{Handle: e.rec.handle, Receiving: r.receiving})
		e.rec.runReturned()
		r.err = err
		select {
		case <-r.receiving: // told to stop taking events: it may return, the suite goes on
		default:
			endLife(fmt.Errorf("adaptertest: Run returned early with %v", err))
		}
		close(r.done)
	}()
	e.t.Cleanup(func() {
		e.stop()
		e.rec.check(e.t)
	})

	readyCtx, stop := e.ctx(patience)
	defer stop()
	if err := e.peer.Ready(readyCtx); err != nil {
		e.t.Fatalf("Peer.Ready: %v (%v)", err, context.Cause(readyCtx))
	}
}

// stopTaking closes Run's Inbound.Receiving: the adapter stops taking
// events.
func (e *env) stopTaking() { e.run.stopOnce.Do(func() { close(e.run.receiving) }) }

// stop cancels Run's context and waits for Run to return; it fails the
// subtest if Run takes longer than promptly or returns an error, and
// returns how long Run took to return. Only the first call does anything.
func (e *env) stop() time.Duration {
	e.t.Helper()
	var took time.Duration
	e.run.once.Do(func() {
		start := time.Now()
		e.run.cancel()
		timer := time.NewTimer(patience)
		defer timer.Stop()
		select {
		case <-e.run.done:
		case <-timer.C:
			e.t.Errorf("Run did not return within %v of its context ending", patience)
			return
		}
		took = time.Since(start)
		if took > promptly {
			e.t.Errorf("Run returned %v after its context ended; want within %v", took.Round(time.Millisecond), promptly)
		}
		if e.run.err != nil {
			e.t.Errorf("Run returned %v after its context ended; want nil", e.run.err)
		}
	})
	return took
}

// ctx returns a context that ends after d, or when Run returns early if
// Run was started.
func (e *env) ctx(d time.Duration) (context.Context, context.CancelFunc) {
	parent := context.Background()
	if e.run != nil {
		parent = e.run.life
	}
	return context.WithTimeout(parent, d)
}

// user returns peer user n.
func (e *env) user(n int) platform.User { return e.peer.User(n) }

// chat returns peer chat n of type typ.
func (e *env) chat(n int, typ platform.ChatType) platform.Chat {
	e.t.Helper()
	ctx, cancel := e.ctx(patience)
	defer cancel()
	c, err := e.peer.Chat(ctx, n, typ)
	if err != nil {
		e.t.Fatalf("Peer.Chat(%d, %q): %v (%v)", n, typ, err, context.Cause(ctx))
	}
	if c.ID == "" {
		e.t.Fatalf("Peer.Chat(%d, %q) returned a chat without an ID", n, typ)
	}
	return c
}

// chats returns the chats a check should cover: the private chat n, and
// the group chat n+1 unless the platform has no groups.
func (e *env) chats(n int) []platform.Chat {
	e.t.Helper()
	out := []platform.Chat{e.chat(n, platform.ChatPrivate)}
	if !e.f.NoGroups {
		out = append(out, e.chat(n+1, platform.ChatGroup))
	}
	return out
}

// say makes from say text in chat.
func (e *env) say(ctx context.Context, chat platform.Chat, from platform.User, text string) {
	e.t.Helper()
	if err := e.peer.Say(ctx, chat, from, text); err != nil {
		e.t.Fatalf("Peer.Say(%s, %s, %q): %v (%v)", chat.ID, from.ID, text, err, context.Cause(ctx))
	}
}

// received waits for n messages in chat and returns them, failing the
// subtest if there are fewer, or more.
func (e *env) received(chat platform.Chat, n int) []platform.OutboundMessage {
	e.t.Helper()
	msgs, err := e.tryReceived(chat, n)
	if err != nil {
		e.t.Fatal(err)
	}
	return msgs
}

// tryReceived is received for any goroutine: it returns an error instead
// of failing.
func (e *env) tryReceived(chat platform.Chat, n int) ([]platform.OutboundMessage, error) {
	ctx, cancel := e.ctx(patience)
	defer cancel()
	msgs, err := e.peer.Received(ctx, chat, n)
	switch {
	case err != nil:
		return msgs, fmt.Errorf("chat %s: Peer.Received: %d of %d messages: %w (%v); got %s",
			chat.ID, len(msgs), n, err, context.Cause(ctx), abridge(texts(msgs)))
	case len(msgs) != n:
		return msgs, fmt.Errorf("chat %s received %d messages %s; want %d", chat.ID, len(msgs), abridge(texts(msgs)), n)
	}
	return msgs, nil
}

// inject makes the peer fail the next send to chat with f.
func (e *env) inject(chat platform.Chat, f Fault) {
	e.t.Helper()
	if err := e.peer.Inject(chat, f); err != nil {
		hint := ""
		if errors.Is(err, ErrUnsupported) {
			hint = " (set the matching No… field of Features if the peer cannot inject it)"
		}
		e.t.Fatalf("Peer.Inject(%s, %s): %v%s", chat.ID, f.Kind, err, hint)
	}
}

// sendResult is what one Send returned and how long it took.
type sendResult struct {
	res  platform.SendResult
	err  error
	took time.Duration
}

// send calls Send in a goroutine and waits at most limit for it. The
// goroutine ends when Send returns; only a Send that ignores its context
// outlives the subtest, and the subtest has failed then.
func (e *env) send(ctx context.Context, chat platform.Chat, msg platform.OutboundMessage, limit time.Duration) sendResult {
	e.t.Helper()
	r, err := e.trySend(ctx, chat, msg, limit)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// trySend is send for any goroutine: it returns an error if Send does not
// return within limit.
func (e *env) trySend(ctx context.Context, chat platform.Chat, msg platform.OutboundMessage, limit time.Duration) (sendResult, error) {
	req := platform.SendRequest{Platform: e.name, Target: chat, Message: msg}
	ch := make(chan sendResult, 1)
	start := time.Now()
	s := e.a.Sender()
	go func() {
		res, err := s.Send(ctx, req)
		ch <- sendResult{res: res, err: err, took: time.Since(start)}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r, nil
	case <-timer.C:
		return sendResult{}, fmt.Errorf("Send(%s, %q) did not return within %v", chat.ID, msg.Text, limit)
	}
}

// mustSend sends msg to chat and fails the subtest unless it succeeds.
func (e *env) mustSend(chat platform.Chat, msg platform.OutboundMessage) platform.SendResult {
	e.t.Helper()
	ctx, cancel := e.ctx(patience)
	defer cancel()
	r := e.send(ctx, chat, msg, patience+promptly)
	if r.err != nil {
		e.t.Fatalf("Send(%s, %q) = %v; want success", chat.ID, msg.Text, r.err)
	}
	return r.res
}

// diffTexts describes where got first differs from want.
func diffTexts(got, want []string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	switch {
	case i < len(got) && i < len(want):
		return fmt.Sprintf("message %d is %q; want %q (got %s)", i, got[i], want[i], abridge(got))
	case i < len(got):
		return fmt.Sprintf("%d messages; want %d: the extra ones are %s", len(got), len(want), abridge(got[i:]))
	}
	return fmt.Sprintf("%d messages; want %d: missing %s", len(got), len(want), abridge(want[i:]))
}

// texts returns the texts of msgs.
func texts(msgs []platform.OutboundMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text
	}
	return out
}

// recorder is the handle func the suite gives Run: it records events and
// notices calls that overlap or come after Run returned.
type recorder struct {
	mu      sync.Mutex
	events  []platform.Event
	changed chan struct{} // closed and replaced at each event

	inHandle     atomic.Int32 // handle calls running
	overlapping  atomic.Int32 // calls that started while another ran
	afterReturn  atomic.Int32 // calls that started after Run returned
	returned     atomic.Bool  // Run has returned
	busyAtReturn atomic.Bool  // a call was running when Run returned
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

// handle records ev, and takes it.
func (r *recorder) handle(ev platform.Event) error {
	// Count the call before looking at returned, and runReturned sets
	// returned before it counts, so that a call racing with Run's return
	// is seen by at least one of the two.
	if r.inHandle.Add(1) > 1 {
		r.overlapping.Add(1)
	}
	if r.returned.Load() {
		r.afterReturn.Add(1)
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	r.inHandle.Add(-1)
	return nil
}

// runReturned notes that Run has returned.
func (r *recorder) runReturned() {
	r.returned.Store(true)
	if r.inHandle.Load() != 0 {
		r.busyAtReturn.Store(true)
	}
}

// snapshot returns the events recorded so far.
func (r *recorder) snapshot() []platform.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]platform.Event(nil), r.events...)
}

// wait waits until at least n events were recorded and returns them all,
// or returns those it has with ctx's cause.
func (r *recorder) wait(ctx context.Context, n int) ([]platform.Event, error) {
	for {
		r.mu.Lock()
		evs := append([]platform.Event(nil), r.events...)
		ch := r.changed
		r.mu.Unlock()
		if len(evs) >= n {
			return evs, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return evs, fmt.Errorf("%d of %d events: %w", len(evs), n, context.Cause(ctx))
		}
	}
}

// check reports handle calls that broke the Adapter contract.
func (r *recorder) check(t *testing.T) {
	t.Helper()
	if n := r.overlapping.Load(); n > 0 {
		t.Errorf("handle was called %d times while another call of it was running; want one call at a time", n)
	}
	if n := r.afterReturn.Load(); n > 0 {
		t.Errorf("handle was called %d times after Run returned", n)
	}
	if r.busyAtReturn.Load() {
		t.Error("Run returned while a call of handle was running")
	}
}
