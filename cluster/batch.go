package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// asyncWriteTimeout bounds how long a record published without a wait
// each (RecordEvents) waits for its answer: it then fails as a write whose
// answer was lost, as a waited write does after the client's default
// timeout.
const asyncWriteTimeout = 5 * time.Second

var _ journal.EventBatchLog = (*Journal)(nil)

// RecordEvents records evs in IN, in order, as RecordEvent records each,
// but with one wait for all: their records are published one after
// another and their answers then read in order, so that the client and
// the server handle them together (BenchmarkPublishFloor: 14–17 µs of CPU
// a record, against 32–45 µs for a write waited for alone). A record too
// large for a message is written as RecordEvent writes it, in its place.
func (j *Journal) RecordEvents(ctx context.Context, evs []platform.Event) []journal.RecordedEvent {
	res := make([]journal.RecordedEvent, len(evs))
	if err := j.health.gate(); err != nil {
		for i := range res {
			res[i].Err = err
		}
		return res
	}
	type inFlight struct {
		i   int
		paf jetstream.PubAckFuture
		w   writing
		key string
	}
	d := j.inDone
	flight := make([]inFlight, 0, len(evs))
	for i := range evs {
		ev := evs[i] // encodeRecord replaces its attachment lists: the caller's stay
		pieces, err := encodeRecord(&ev)
		if err != nil {
			res[i].Err = platform.Permanent(fmt.Errorf("cluster: event: %w: %w", journal.ErrUnrecordable, err))
			continue
		}
		key := handledKey(ev)
		if j.handledBefore(key) {
			res[i].Duplicate = true // handled before a restart, handed on again
			continue
		}
		if size := piecesLen(pieces); size > j.nc.MaxPayload()-partOverhead || j.cfg.MaxRecord > 0 && size > j.cfg.MaxRecord {
			// An object first, or refused for its size: as RecordEvent
			// does, after the records published before it.
			res[i].Record, res[i].Duplicate, res[i].Err = j.recordEvent(ctx, ev, d)
			continue
		}
		msg := nats.NewMsg(j.subject("in", ev.Platform, chatOf(ev)))
		msg.Data = joinPieces(pieces)
		var opts []jetstream.PublishOpt
		if ev.ID != "" {
			opts = append(opts, jetstream.WithMsgID("ev:"+ev.Platform+":"+ev.ID))
		}
		w := d.begin()
		paf, err := j.js.PublishMsgAsync(msg, opts...)
		if err != nil {
			// Not sent (too many writes unanswered, the connection
			// closed): surely not written.
			d.failed(w, false)
			res[i].Err = j.health.writeErr(ctx, "record event", err)
			continue
		}
		flight = append(flight, inFlight{i, paf, w, key})
	}
	for _, f := range flight {
		r := &res[f.i]
		select {
		case ack := <-f.paf.Ok():
			j.health.ok()
			epoch := d.written(f.w, ack.Sequence, ack.Duplicate)
			if ack.Duplicate {
				r.Duplicate = true
				continue
			}
			r.Record = &record{j: j, log: d, epoch: epoch, seq: ack.Sequence, event: f.key}
		case err := <-f.paf.Err():
			maybe := !refused(err)
			d.failed(f.w, maybe)
			err = j.health.writeErr(ctx, "record event", err)
			if maybe && !refused(err) {
				err = &unknownWrite{err}
			}
			r.Err = err
		case <-ctx.Done():
			d.failed(f.w, true)
			r.Err = &unknownWrite{ctx.Err()}
		}
	}
	return res
}
