package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// How a journal lives through an outage of its store (the server
// unreachable, its disk or its limit full, JetStream off for a while):
//
//   - The first write that fails for the store's sake begins the outage:
//     one log line, and from then on the journal refuses every new event
//     and send at once with an error wrapping journal.ErrOutage — no call
//     waits for a store that is not there, and no event slips in between
//     two refusals, out of its chat's order.
//   - While it lasts, a probe (a write of one small key) is tried on a
//     heartbeat, probeEvery. Once one succeeds, what a record's Done
//     could not finish (a delivered send's mark, a record's removal) is
//     done — so that nothing done is handed over again after a restart,
//     and a handling run again finds its sends' marks — and then the
//     outage ends: one log line, and WaitRecording returns.
const (
	// probeEvery is the heartbeat of the probe while the store refuses.
	probeEvery = 500 * time.Millisecond
	// probeTimeout bounds one probe.
	probeTimeout = 2 * time.Second
	// flapWindow: an outage that begins within it of the end of the last
	// one is logged at debug level, as is its end, so that a store that
	// hovers at its limit (each record done lets one more in) does not
	// write a pair of lines for each record.
	flapWindow = time.Minute
	// maxLeftover bounds the work kept for when the store is back.
	maxLeftover = 1 << 16
)

// probeKey is the key the probe writes in the sent bucket: markKey never
// makes it ("_" is always followed by two hexadecimal digits there).
const probeKey = "_probe"

// health is whether a journal's store takes writes, and what is left to do
// once it does again. It is safe for concurrent use.
type health struct {
	log    *zap.Logger
	probe  func(ctx context.Context, cause error) error // cause: the last failure
	closed func() bool                                  // the connection ended for good: probing stops

	mu       sync.Mutex
	down     bool
	cause    error
	since    time.Time
	back     chan struct{} // closed when the outage ends
	lastEnd  time.Time
	quiet    bool // this outage is logged at debug level (see flapWindow)
	refused  uint64
	probing  bool // the probe's goroutine runs
	leftover []func(ctx context.Context) error
}

// gate returns the outage's error while the store refuses, nil otherwise.
func (h *health) gate() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return nil
	}
	h.refused++
	return fmt.Errorf("cluster: %w: the store refused a write %v ago (%v); it is tried again every %v",
		journal.ErrOutage, time.Since(h.since).Round(time.Millisecond), h.cause, probeEvery)
}

// failed records that a write failed for the store's sake, beginning an
// outage if none is under way.
func (h *health) failed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cause = err
	if !h.down {
		h.down, h.since, h.back, h.refused = true, time.Now(), make(chan struct{}), 0
		h.quiet = !h.lastEnd.IsZero() && h.since.Sub(h.lastEnd) < flapWindow
		level := zap.WarnLevel
		if h.quiet {
			level = zap.DebugLevel
		}
		h.log.Log(level, "cluster: the journal's store refuses writes; events are refused and sends fail until it takes them again",
			zap.Error(err))
	}
	if !h.probing {
		h.probing = true
		go h.run()
	}
}

// ok records that a write succeeded, ending the outage if one is under
// way and nothing is left to do for it (the probe's loop does that first).
func (h *health) ok() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down || len(h.leftover) > 0 {
		return
	}
	h.down = false
	close(h.back)
	h.lastEnd = time.Now()
	level := zap.InfoLevel
	if h.quiet {
		level = zap.DebugLevel
	}
	h.log.Log(level, "cluster: the journal's store takes writes again",
		zap.Duration("after", h.lastEnd.Sub(h.since).Round(time.Millisecond)), zap.Uint64("refused", h.refused))
}

// wait returns nil once the store takes writes (at once when it does), or
// ctx's error.
func (h *health) wait(ctx context.Context) error {
	h.mu.Lock()
	down, back := h.down, h.back
	h.mu.Unlock()
	if !down {
		return nil
	}
	select {
	case <-back:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// later keeps f, to be done once the store is back; f's error wrapping
// journal.ErrOutage keeps it for the next time.
func (h *health) later(f func(ctx context.Context) error, cause error) {
	h.mu.Lock()
	if len(h.leftover) >= maxLeftover {
		h.leftover = h.leftover[1:]
		h.log.Warn("cluster: too much left to do once the store is back; the oldest is given up (a record it held may be handed over again after a restart)")
	}
	h.leftover = append(h.leftover, f)
	h.mu.Unlock()
	h.failed(cause)
}

// run probes the store on a heartbeat while it refuses, does what was
// left for its return, and only then counts it back (a handling run again
// once the journal is back finds the marks of its sends made before); it
// ends once the store is back with nothing left, or the connection ended
// for good.
func (h *health) run() {
	beat := time.NewTicker(probeEvery) // heartbeat: the store tried again while it refuses
	defer beat.Stop()
	for range beat.C {
		if h.closed() {
			h.mu.Lock()
			h.probing = false
			h.mu.Unlock()
			return
		}
		h.mu.Lock()
		down, cause := h.down, h.cause
		h.mu.Unlock()
		if down {
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			err := h.probe(ctx, cause)
			cancel()
			if err != nil {
				h.mu.Lock()
				h.cause = err
				h.mu.Unlock()
				continue
			}
		}
		if !h.finish() {
			continue
		}
		h.ok()
		h.mu.Lock()
		over := !h.down && len(h.leftover) == 0
		if over {
			h.probing = false
		}
		h.mu.Unlock()
		if over {
			return
		}
	}
}

// finish does what was left for the store's return, and reports whether
// all of it was done; work that fails again for the store's sake is kept,
// and its failure keeps (or puts) the journal down.
func (h *health) finish() bool {
	h.mu.Lock()
	work := h.leftover
	h.leftover = nil
	h.mu.Unlock()
	var again []func(ctx context.Context) error
	var cause error
	for _, f := range work {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := f(ctx)
		cancel()
		if errors.Is(err, journal.ErrOutage) {
			again = append(again, f)
			cause = err
		}
	}
	if cause == nil {
		return true
	}
	h.mu.Lock()
	h.leftover = append(again, h.leftover...)
	h.mu.Unlock()
	h.failed(cause)
	return false
}

// unrecordable reports whether err is a refusal of one record for what it
// is: larger than a message or a stream takes.
func unrecordable(err error) bool {
	switch apiCode(err) {
	case jetstream.JSErrCodeStreamMessageExceedsMaximum,
		10097: // JSStreamHeaderExceedsMaximumErr: the record's headers are too large
		return true
	}
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadHeaderMsg)
}

// writeErr returns err, the failure of a write of what, as the journal
// reports it: ctx's error as is when ctx ended; a refusal of the record
// alone wrapping journal.ErrUnrecordable, permanent; anything else an
// outage, wrapping journal.ErrOutage, that h records.
func (h *health) writeErr(ctx context.Context, what string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if unrecordable(err) {
		return platform.Permanent(fmt.Errorf("cluster: %s: %w: %w", what, journal.ErrUnrecordable, err))
	}
	h.failed(err)
	return fmt.Errorf("cluster: %s: %w: %w", what, journal.ErrOutage, err)
}

// errCodeNoRoom is JetStream's error code for a write refused for want
// of room (JSInsufficientResourcesErr), which nats.go does not name.
const errCodeNoRoom jetstream.ErrorCode = 10023

// storeRefused records, as the journal's outage, a write of the
// processes' own (a lease) that the store refused for want of room: the
// gateway stops with its lease, so no record of the journal may meet the
// full store to tell; the outage's probe ends it once the store takes
// writes again.
func (j *Journal) storeRefused(err error) {
	if apiCode(err) == errCodeNoRoom {
		j.health.failed(err)
	}
}

// outage returns err, a failure to finish a record's Done, as an outage
// without beginning one: the caller keeps the work (later), which does.
func outage(what string, err error) error {
	return fmt.Errorf("cluster: %s: %w: %w", what, journal.ErrOutage, err)
}
