package sender

import (
	"context"
	"sync/atomic"

	"github.com/heraldbot/herald/platform"
)

// Counters counts sends as they pass [Counters.Decorator]: how many entered
// the chain, how many were delivered, how many attempts and retries they
// took, and how many were stored as dead letters. They are the statistics
// an engine reports as its sender stats.
//
// The zero value is ready to use, with every count at zero. Counters is safe
// for concurrent use. Do not copy a Counters after first use.
type Counters struct {
	received     atomic.Uint64
	delivered    atomic.Uint64
	attempts     atomic.Uint64
	retried      atomic.Uint64
	deadLettered atomic.Uint64
}

// CounterStats is a snapshot of [Counters].
type CounterStats struct {
	Received     uint64 // sends that entered the chain
	Delivered    uint64 // sends that succeeded
	Attempts     uint64 // attempts made, first attempts and retries (see Retry)
	Retried      uint64 // attempts after a send's first
	DeadLettered uint64 // failed sends a DeadLetters decorator stored
}

// Snapshot returns the current counts. Each count is read atomically; the
// counts of sends still in flight may be caught between updates, but
// Delivered + DeadLettered never exceeds Received in a snapshot.
func (c *Counters) Snapshot() CounterStats {
	// Read the outcome counts before Received: every send is counted as
	// received before its outcome, so the invariant above holds.
	s := CounterStats{
		Delivered:    c.delivered.Load(),
		DeadLettered: c.deadLettered.Load(),
		Attempts:     c.attempts.Load(),
		Retried:      c.retried.Load(),
	}
	s.Received = c.received.Load()
	return s
}

// Decorator returns a decorator that counts every send in c. It must sit
// outside [Retry] to see a send's attempts, and outside [DeadLetters] to
// count what DeadLetters stores; [Default] puts it just outside DeadLetters.
// A nil c returns a decorator that changes nothing.
func (c *Counters) Decorator() SenderDecorator {
	return func(next platform.Sender) platform.Sender {
		if c == nil {
			return next
		}
		return &countingSender{next: next, c: c}
	}
}

type countingSender struct {
	next platform.Sender
	c    *Counters
}

func (s *countingSender) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	ctx, rec := withRecord(ctx, s)
	if !rec.resumed {
		s.c.received.Add(1)
	}
	res, err := s.next.Send(ctx, req)
	if rec.paused(s, err) {
		return res, err
	}
	n := uint64(max(rec.attemptsOf(), 0))
	s.c.attempts.Add(n)
	if n > 1 {
		s.c.retried.Add(n - 1)
	}
	if err == nil {
		s.c.delivered.Add(1)
	} else if rec.deadLettered.Load() {
		s.c.deadLettered.Add(1)
	}
	return res, err
}
