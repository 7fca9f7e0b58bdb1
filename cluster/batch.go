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
// but without a wait each: the records are published one after another
// and their answers then read in order, so that the client and the server
// handle them together (BenchmarkPublishFloor: 14–17 µs of CPU a record,
// against 32–45 µs for a write waited for alone). A chat has one record in
// flight at a time: its events go out in waves (the first event of each
// chat, then the second, …), and one refused stops its chat's later
// events, so that IN never holds a chat's events out of order — a record
// refused while a later one of its chat was written would come after it
// when the platform delivers it again, and a restart would hand them over
// so. A record too large for a message is written as RecordEvent writes
// it, in its wave.
func (j *Journal) RecordEvents(ctx context.Context, evs []platform.Event) []journal.RecordedEvent {
	return j.recordEvents(ctx, evs, j.inDone)
}

// recordEvents is RecordEvents with the records' removal through d; with a
// nil d (a shared journal's events, which their partitions' consumers
// remove) it makes no records: an outcome tells only whether the event was
// written, or was a duplicate.
func (j *Journal) recordEvents(ctx context.Context, evs []platform.Event, d *doneLog) []journal.RecordedEvent {
	res := make([]journal.RecordedEvent, len(evs))
	if err := j.health.gate(); err != nil {
		for i := range res {
			res[i].Err = err
		}
		return res
	}
	subjects := make([]string, len(evs))
	for i := range evs {
		subjects[i] = j.subject("in", evs[i].Platform, chatOf(evs[i]))
	}
	stopped := map[string]error{} // chats whose event was refused
	todo := make([]int, len(evs))
	for i := range todo {
		todo[i] = i
	}
	for len(todo) > 0 {
		var wave, later []int
		inWave := map[string]bool{}
		for _, i := range todo {
			switch subj := subjects[i]; {
			case stopped[subj] != nil:
				res[i].Err = fmt.Errorf("cluster: record event: not written after an earlier event of its chat: %w", stopped[subj])
			case inWave[subj]:
				later = append(later, i)
			default:
				inWave[subj] = true
				wave = append(wave, i)
			}
		}
		j.recordWave(ctx, d, evs, subjects, wave, res)
		for _, i := range wave {
			if res[i].Err != nil {
				stopped[subjects[i]] = res[i].Err
			}
		}
		todo = later
	}
	return res
}

// recordWave records the events of evs at wave, of as many chats, with one
// wait for all, setting their outcomes in res; their records are removed
// through d, or, with a nil d, made by nobody (see recordEvents).
func (j *Journal) recordWave(ctx context.Context, d *doneLog, evs []platform.Event, subjects []string, wave []int, res []journal.RecordedEvent) {
	type inFlight struct {
		i    int
		msg  *nats.Msg
		w    writing
		key  string
		size int
	}
	flight := make([]inFlight, 0, len(wave))
	for _, i := range wave {
		ev := &evs[i]
		if len(ev.Attachments) > 0 {
			c := *ev // encodeRecord replaces its attachment lists: the caller's stay
			ev = &c
		}
		pieces, err := encodeRecord(ev)
		if err != nil {
			res[i].Err = platform.Permanent(fmt.Errorf("cluster: event: %w: %w", journal.ErrUnrecordable, err))
			continue
		}
		key := handledKey(*ev)
		if j.handledBefore(key) {
			res[i].Duplicate = true // handled before a restart, handed on again
			continue
		}
		if size := piecesLen(pieces); size > j.nc.MaxPayload()-partOverhead || j.cfg.MaxRecord > 0 && size > j.cfg.MaxRecord {
			// An object first, or refused for its size: as RecordEvent
			// does, from the caller's event (ev's files lost their bytes
			// to the frame above).
			res[i].Record, res[i].Duplicate, res[i].Err = j.recordEvent(ctx, evs[i], d)
			continue
		}
		msg := &nats.Msg{Subject: subjects[i], Data: joinPieces(pieces)}
		if ev.ID != "" {
			msg.Header = nats.Header{jetstream.MsgIDHeader: {eventMsgID(*ev)}}
		}
		flight = append(flight, inFlight{i: i, msg: msg, key: key, size: len(msg.Data)})
	}
	if len(flight) == 0 {
		return
	}
	aw, err := j.acks.begin(len(flight))
	if err != nil {
		for _, f := range flight {
			res[f.i].Err = j.health.writeErr(ctx, "record event", err)
		}
		return
	}
	for k := range flight {
		f := &flight[k]
		f.msg.Reply = aw.reply(k)
		// No retry of a publish the server did not take: a try again,
		// late, could land after a record published after it.
		if d != nil {
			f.w = d.begin()
		}
		aw.sentTo(k + 1) // before: a connection lost as it goes out fails it
		if err := j.nc.PublishMsg(f.msg); err != nil {
			// Not sent (the connection closed, or its buffer full while
			// it reconnects): surely not written.
			if d != nil {
				d.failed(f.w, false)
			}
			res[f.i].Err = j.health.writeErr(ctx, "record event", err)
			f.msg = nil
			j.acks.skip(aw, k)
		}
	}
	timeout := time.NewTimer(asyncWriteTimeout)
	var unanswered error // what ended the wait before every answer came
	select {
	case <-aw.done:
	case <-ctx.Done():
		unanswered = &unknownWrite{ctx.Err()}
	case <-timeout.C:
		unanswered = j.publishFailed(ctx, "record event", jetstream.ErrAsyncPublishTimeout)
	}
	timeout.Stop()
	answers := j.acks.end(aw)
	for k, f := range flight {
		if f.msg == nil {
			continue // not sent
		}
		r, a := &res[f.i], answers[k]
		switch {
		case !a.got:
			r.Err = unanswered
		case a.err != nil:
			r.Err = j.publishFailed(ctx, "record event", a.err)
		default:
			j.health.ok()
		}
		switch {
		case d == nil:
			r.Duplicate = r.Err == nil && a.ack.Duplicate
		case r.Err != nil:
			d.failed(f.w, !a.got || maybeWritten(r.Err))
		default:
			epoch := d.written(f.w, a.ack.Sequence, a.ack.Duplicate, f.size)
			if a.ack.Duplicate {
				r.Duplicate = true
				continue
			}
			rec := &record{j: j, log: d, epoch: epoch, seq: a.ack.Sequence, event: f.key}
			j.holdable(rec, &evs[f.i])
			r.Record = rec
		}
	}
}
