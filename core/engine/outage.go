package engine

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/internal/handling"
)

// Paces of the runs again after an outage: once the journal says it
// records again (journal.WaitRecording: at once for one that cannot
// tell), after outageRetryMin, doubling to outageRetryMax while they keep
// failing.
const (
	outageRetryMin = 100 * time.Millisecond
	outageRetryMax = 30 * time.Second
)

// afterOutage holds the handlings whose runs an outage of the journal
// ended (handling.Run.Outage) until it records again, and then runs them
// again on their chats' tasks, in the order their runs ended — for one
// chat, the order of its events. One goroutine waits for the journal
// while any is held; close stops it. A handling held when the engine
// stops is not lost: its event is in the journal, which hands it over at
// the next start.
type afterOutage struct {
	e      *Engine
	ctx    context.Context // ends at close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	held    []heldHandling
	waiting bool // the goroutine runs
	closed  bool
	// tries counts the rounds of runs again since one last got through
	// (paces them).
	tries int
}

// heldHandling is a handling held, and how it ran (runHandling's inner).
type heldHandling struct {
	h     *handling.Handling
	inner bool
}

func newAfterOutage(e *Engine) *afterOutage {
	o := &afterOutage{e: e}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	return o
}

// hold holds h until the journal records again.
func (o *afterOutage) hold(h *handling.Handling, inner bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return // the engine stops: the journal keeps h's event
	}
	o.held = append(o.held, heldHandling{h, inner})
	if !o.waiting {
		o.waiting = true
		o.wg.Add(1)
		go o.wait()
	}
}

// wait waits for the journal, then hands what is held to the chats'
// tasks, until nothing is held.
func (o *afterOutage) wait() {
	defer o.wg.Done()
	for {
		if err := journal.WaitRecording(o.ctx, o.e.journal); err != nil {
			return
		}
		o.mu.Lock()
		tries := o.tries
		o.tries++
		o.mu.Unlock()
		if !backoff.Sleep(o.ctx, backoff.Exponential(tries, outageRetryMin, outageRetryMax)) {
			return
		}
		o.mu.Lock()
		batch := o.held
		o.held = nil
		if len(batch) == 0 || o.closed {
			o.waiting = false
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		for _, hh := range batch {
			err := o.e.in.Push(hh.h.Key(), func(context.Context) error {
				o.e.runAgain(hh.h, hh.inner)
				return nil
			})
			if err != nil {
				return // the engine stops: the journal keeps the events
			}
		}
	}
}

// through records that a run again got through the journal: the next
// outage's runs again start at the first pace.
func (o *afterOutage) through() {
	o.mu.Lock()
	o.tries = 0
	o.mu.Unlock()
}

// close stops the goroutine and drops what is held (the journal keeps
// their events).
func (o *afterOutage) close() {
	o.mu.Lock()
	o.closed = true
	o.held = nil
	o.mu.Unlock()
	o.cancel()
	o.wg.Wait()
}

// runAgain runs h again after an outage ended its last run: the records
// of its effects the outage refused first, then its handlers, over what
// its log holds (handling.Start.Again).
func (e *Engine) runAgain(h *handling.Handling, inner bool) {
	ctx, cancel := context.WithTimeout(e.in.Base(), journalOpTimeout)
	err := h.Rerecord(ctx, (*env)(e))
	cancel()
	if err != nil {
		e.outage.hold(h, inner)
		return
	}
	ev := h.Event()
	e.log.Debug("engine: running a handling again after the journal's outage",
		zap.String("platform", ev.Platform), zap.String("event", ev.ID))
	e.runHandling(h, handling.Start{Again: true}, inner)
}
