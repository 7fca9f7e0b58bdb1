package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// A platform hands an event on again when it does not know it was taken:
// Telegram gives a bot the updates of its last getUpdates batch again
// after a restart when the call that would have confirmed them was never
// made. JetStream drops such an event while it holds it, or within its
// duplicate window while the server runs (it remembers the ids it saw,
// also of messages since removed); but a server started again — the
// embedded one restarts with its bot — knows only the ids of the messages
// it still holds, so an event handled and removed before the crash would
// be recorded and handled a second time, its replies made twice.
//
// So an event done is marked in the handled bucket (its id as a key, with
// no value, for the duplicate window), and Open reads the last
// recentHandled marks into a set RecordEvent drops events of: the ones a
// platform hands on again after a restart are those it took last.
//
// The one-process journal writes the marks of the events one done note
// names together, in one message of the bucket's stream under the key
// n.<unique> (no event's key has a "."), its value their keys, one a line:
// one write for the group instead of one an event.

const (
	// recentHandled is how many of the last handled marks Open reads.
	recentHandled = 2048
	// marksMax bounds the marks one message holds.
	marksMax = 256
	// marksPrefix begins the key of a message of several marks.
	marksPrefix = "n."
	// handledChunk is how many of the bucket's messages Open reads at
	// once, from the last back, until it has recentHandled marks.
	handledChunk = 256
)

// handledKey returns the handled bucket's key of ev, or "" for an event
// without an id.
func handledKey(ev platform.Event) string {
	if ev.ID == "" {
		return ""
	}
	return markKey(ev.Platform + ":" + ev.ID)
}

// markHandled marks the event of key done, without waiting for the
// server's answer: the mark only spares a platform's redelivery after a
// crash, and the removal of the event's record, which follows on the same
// connection, is what the journal waits for.
func (j *Journal) markHandled(key string) {
	if key == "" || j.handled == nil {
		return
	}
	if err := j.acks.publish(&nats.Msg{Subject: j.handledSubject + key}); err != nil {
		j.handledFailed(err)
	}
}

// handledFailed logs a handled mark (or a group of them) not written: the
// publish's error, or the server's answer (acks.unwaited).
func (j *Journal) handledFailed(err error) {
	j.limited.Warn("cluster: an event's handled mark was not written; a platform handing it on again after a restart may have it handled twice", zap.Error(err))
}

// markHandledAll marks the events of keys done, marksMax to a message,
// without waiting for the server's answer (see markHandled).
func (j *Journal) markHandledAll(keys []string) {
	for len(keys) > 0 {
		part := keys[:min(len(keys), marksMax)]
		keys = keys[len(part):]
		if len(part) == 1 {
			j.markHandled(part[0])
			continue
		}
		msg := nats.NewMsg(j.handledSubject + marksPrefix + nuid.Next())
		msg.Data = []byte(strings.Join(part, "\n"))
		if err := j.acks.publish(msg); err != nil {
			j.handledFailed(err)
		}
	}
}

// loadHandled reads the last recentHandled marks (or a few more) of the
// handled bucket's stream into j.recent: its messages from the last back,
// handledChunk at a time.
func (j *Journal) loadHandled(ctx context.Context, stream jetstream.Stream) error {
	info, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	st := info.State
	if st.Msgs == 0 {
		return nil
	}
	j.recent = make(map[string]struct{}, min(st.Msgs, recentHandled))
	for end := st.LastSeq; len(j.recent) < recentHandled && end >= st.FirstSeq && end > 0; {
		start := st.FirstSeq
		if end-st.FirstSeq >= handledChunk {
			start = end - handledChunk + 1
		}
		if err := j.readHandled(ctx, stream, start, end); err != nil {
			return err
		}
		end = start - 1
	}
	return nil
}

// readHandled reads the marks of the handled bucket's messages from start
// to end into j.recent.
func (j *Journal) readHandled(ctx context.Context, stream jetstream.Stream, start, end uint64) error {
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   start,
	})
	if err != nil {
		return err
	}
	for {
		batch, err := cons.FetchNoWait(int(end - start + 1)) // they are there: no wait for more
		if err != nil {
			return err
		}
		last := uint64(0)
		for m := range batch.Messages() {
			meta, err := m.Metadata()
			if err == nil {
				last = meta.Sequence.Stream
			}
			if err == nil && last > end {
				continue // read with the chunk after it
			}
			key := strings.TrimPrefix(m.Subject(), j.handledSubject)
			if !strings.HasPrefix(key, marksPrefix) {
				j.recent[key] = struct{}{}
				continue
			}
			for k := range strings.SplitSeq(string(m.Data()), "\n") {
				if k != "" {
					j.recent[k] = struct{}{}
				}
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return err
		}
		if last == 0 || last >= end {
			return nil
		}
	}
}

// openHandled creates (or updates) the handled bucket and reads its last
// marks.
func (j *Journal) openHandled(ctx context.Context) error {
	name := "handled_" + j.cfg.Bot
	kv, err := j.keyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   name,
		TTL:      j.cfg.DuplicateWindow,
		Storage:  jetstream.FileStorage,
		Replicas: j.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("cluster: handled bucket: %w", err)
	}
	j.handled, j.handledSubject = kv, "$KV."+name+"."
	stream, err := j.js.Stream(ctx, "KV_"+name)
	if err != nil {
		return fmt.Errorf("cluster: handled bucket: %w", err)
	}
	if err := j.loadHandled(ctx, stream); err != nil {
		return fmt.Errorf("cluster: read the handled marks: %w", err)
	}
	return nil
}

// handledBefore reports whether the event of key was handled before this
// journal was opened (among the last marks read).
func (j *Journal) handledBefore(key string) bool {
	if key == "" || j.recent == nil {
		return false
	}
	_, ok := j.recent[key]
	return ok
}
