package sender

import (
	"context"
	"sync/atomic"
)

// Counters counts sends by their outcome as they pass [Count]: the
// statistics an engine reports as Stats().Sends.
//
// The zero value is ready to use, with every count at zero. Counters is safe
// for concurrent use. Do not copy a Counters after first use.
type Counters struct {
	delivered    atomic.Uint64
	failed       atomic.Uint64
	deadLettered atomic.Uint64
	attempts     atomic.Uint64
	retries      atomic.Uint64
}

// SendStats is a snapshot of [Counters]. It counts what [Metrics] exports,
// under the same names: every count is of sends that are over, as
// herald_sends_total counts them.
type SendStats struct {
	// Delivered counts sends delivered: herald_sends_total{outcome="ok"}.
	Delivered uint64
	// Failed counts sends that failed for good: herald_sends_total of
	// every other outcome.
	Failed uint64
	// DeadLettered counts the failed sends a DeadLetters decorator kept:
	// herald_send_dead_letters_total.
	DeadLettered uint64
	// Attempts counts the attempts of those sends, first ones included:
	// the sum of herald_send_attempts.
	Attempts uint64
	// Retries counts the attempts after a send's first: Attempts minus
	// the sends that made at least one.
	Retries uint64
}

// Snapshot returns the current counts. Each count is read atomically; a
// send that is ending may be caught between two of them, but DeadLettered
// never exceeds Failed in a snapshot.
func (c *Counters) Snapshot() SendStats {
	// A send is counted as failed before it is counted as dead-lettered,
	// and Failed is read after DeadLettered, so the bound holds.
	s := SendStats{DeadLettered: c.deadLettered.Load()}
	s.Delivered = c.delivered.Load()
	s.Failed = c.failed.Load()
	s.Attempts = c.attempts.Load()
	s.Retries = c.retries.Load()
	return s
}

// Count returns a decorator that counts every send in c (see [Observe]).
// It must sit outside [Retry] to see a send's attempts, and outside
// [DeadLetters] to count what DeadLetters stores; [Default] puts it just
// outside DeadLetters. A nil c returns the sender unchanged.
func Count(c *Counters) SenderDecorator { return Observe(c.observer()) }

// observer returns Count's observer function, nil for a nil c.
func (c *Counters) observer() func(context.Context, Outcome) {
	if c == nil {
		return nil
	}
	return c.count
}

// count records one send's outcome.
func (c *Counters) count(_ context.Context, o Outcome) {
	n := uint64(max(o.Attempts, 0))
	c.attempts.Add(n)
	if n > 1 {
		c.retries.Add(n - 1)
	}
	if o.Err == nil {
		c.delivered.Add(1)
		return
	}
	c.failed.Add(1)
	if o.DeadLettered {
		c.deadLettered.Add(1)
	}
}
