package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// An anchor is a message no consumer takes, kept in IN and OUT of a shared
// journal, whose records the members' acknowledgements remove (work-queue
// streams). A file store removes a block once its last message is removed;
// when that block is the stream's last, the server makes a new block file
// and writes a tombstone in it. A stream that drains after nearly every
// record — a bot answering as fast as its chats write, the usual case —
// would cost a file made and a tombstone written per record (8% of the CPU
// of BenchmarkSharedReplies): an anchor in the last block keeps it from
// emptying.
//
// A block fills and the next one starts without the anchor: each member
// writes a new anchor every anchorEvery while it acknowledges records, and
// purges those before it. Readers of a whole stream skip anchors (see
// Journal.each); nothing else reads their subject.
const anchorEvery = 250 * time.Millisecond

// anchorToken is the last token of an anchor's subject, in.<bot>._anchor
// and out.<bot>._anchor: three tokens, so neither IN's partitioning (of
// in.<bot>.<platform>.<chat>) nor a consumer's filter takes it.
const anchorToken = "_anchor"

// anchorSubject returns the subject of the anchors of stream kind ("in" or
// "out") of bot.
func anchorSubject(kind, bot string) string { return kind + "." + bot + "." + anchorToken }

// isAnchor says whether subject is an anchor's.
func (j *Journal) isAnchor(subject string) bool {
	return subject == j.inAnchor || subject == j.outAnchor
}

// anchored is one stream's anchor: acked counts the acknowledgements this
// member made on it, written how many there were at its last anchor.
type anchored struct {
	stream  jetstream.Stream
	subject string
	acked   atomic.Uint64
	written uint64
}

// anchor writes the anchors of IN and OUT while the member acknowledges
// records on them, until ctx ends.
func (r *membership) anchor(ctx context.Context) {
	s := r.s
	tick := time.NewTicker(anchorEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, a := range []*anchored{&s.inAnchored, &s.outAnchored} {
			n := a.acked.Load()
			if n == a.written {
				continue
			}
			a.written = n
			actx, cancel := context.WithTimeout(ctx, s.beatTimeout())
			err := s.writeAnchor(actx, a)
			cancel()
			if err != nil && ctx.Err() == nil {
				s.warn.Warn("cluster: an anchor was not written; a stream that empties costs the server a new file", zap.String("subject", a.subject), zap.Error(err))
			}
		}
	}
}

// writeAnchor writes a's anchor and purges the ones before it.
func (s *Shared) writeAnchor(ctx context.Context, a *anchored) error {
	if _, err := s.js.Publish(ctx, a.subject, nil); err != nil {
		return err
	}
	return a.stream.Purge(ctx, jetstream.WithPurgeSubject(a.subject), jetstream.WithPurgeKeep(1))
}
