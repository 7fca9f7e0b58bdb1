package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// The delivered marks of covered sends (see cover.go) are written many to
// one message of the sent bucket's stream, under the key n.<unique> (no
// send's key has a "."), its value their JSON: while one group is being
// written, the marks that come meanwhile wait for the next, which one of
// them writes for all (a group commit), so that a bot answering many
// chats at once writes one message for many of their replies. Each mark
// is stored before its Done returns, and so before its chat's next send
// starts.
//
// They are read back only at a restart, for the events taken up again:
// Pending reads the groups written since the oldest of those events was
// recorded (less markSkew), the marks of the sends of those events alone.
// A group lives as long as a mark of its own (the bucket's TTL, the
// duplicate window).

// markSkew is how much earlier than the oldest event taken up Pending
// starts reading the groups of marks: the server's clock stamps both, and
// a mark is written after its event.
const markSkew = time.Minute

// markRoom is what a message of marks leaves of the server's largest
// payload for its subject and headers, and the least it takes.
const markRoom = 4 << 10

// loadTries is how many fetches in a row loadMarks makes that bring
// nothing, loadPause apart, before it gives up on a server that does not
// give the groups it holds.
const (
	loadTries = 20
	loadPause = 50 * time.Millisecond
)

// markWriter writes groups of marks. It is safe for concurrent use.
type markWriter struct {
	j    *Journal
	turn chan struct{} // held by the one writing a group

	mu   sync.Mutex
	next *markGroup
}

// markGroup is the marks one message takes.
type markGroup struct {
	marks []groupMark
	done  chan struct{} // closed once written (or failed)
	err   error
}

// groupMark is one mark of a group: a send's id and its markData.
type groupMark struct {
	ID   string   `json:"id"`
	Mark markData `json:"m"`
}

func newMarkWriter(j *Journal) *markWriter {
	return &markWriter{j: j, turn: make(chan struct{}, 1)}
}

// mark marks the send id delivered with m, in the next group written; it
// returns once the group is stored, or failed (an error wrapping
// journal.ErrOutage).
func (w *markWriter) mark(id string, m markData) error {
	w.mu.Lock()
	g := w.next
	if g == nil {
		g = &markGroup{done: make(chan struct{})}
		w.next = g
	}
	g.marks = append(g.marks, groupMark{id, m})
	w.mu.Unlock()
	for {
		select {
		case <-g.done:
			return g.err
		case w.turn <- struct{}{}:
			w.mu.Lock()
			next := w.next
			w.next = nil
			w.mu.Unlock()
			if next != nil {
				next.err = w.write(next.marks)
				close(next.done)
			}
			<-w.turn
		}
	}
}

// write stores marks, each waited for, in messages of at most marksMax
// marks and of at most the payload the server takes (less room for the
// subject and headers); a mark that alone would not fit keeps its result
// without the platform's raw answer.
func (w *markWriter) write(marks []groupMark) error {
	room := max(int(w.j.nc.MaxPayload())-markRoom, markRoom)
	data := make([]byte, 0, 1024)
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		data = append(data, ']')
		msg := &nats.Msg{Subject: w.j.sentSubject + marksPrefix + nuid.Next(), Data: data}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		_, err := publishRecord(ctx, w.j.nc, msg, "")
		cancel()
		data, n = data[:0:0], 0
		if err != nil {
			return outage("mark delivered", err)
		}
		return nil
	}
	for _, gm := range marks {
		one, err := json.Marshal(gm)
		if err == nil && len(one)+2 > room {
			gm.Mark.Raw = "" // too large with it: the message ID is what a run again needs
			one, err = json.Marshal(gm)
		}
		if err != nil {
			return fmt.Errorf("cluster: marks: %w", err)
		}
		if n == marksMax || n > 0 && len(data)+1+len(one)+1 > room {
			if err := flush(); err != nil {
				return err
			}
		}
		if n == 0 {
			data = append(data, '[')
		} else {
			data = append(data, ',')
		}
		data = append(data, one...)
		n++
	}
	return flush()
}

// loadMarks reads the marks of the groups the sent bucket holds from
// since on whose send ids begin with one of keys (events' coverKeys), for
// the sends of those events run again (groupMarkOf). It reads up to the
// last group written when it began, and fails rather than stop short.
func (j *Journal) loadMarks(ctx context.Context, since time.Time, keys map[string]bool) error {
	if len(keys) == 0 {
		return nil
	}
	stream, err := j.js.Stream(ctx, "KV_sent_"+j.cfg.Bot)
	if err != nil {
		return err
	}
	subject := j.sentSubject + marksPrefix + ">"
	lastMsg, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		j.setMarks(nil)
		return nil
	}
	if err != nil {
		return err
	}
	if lastMsg.Time.Before(since) {
		j.setMarks(nil)
		return nil
	}
	last := lastMsg.Sequence
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	})
	if err != nil {
		return err
	}
	found := map[string]markData{}
	for seen, idle := uint64(0), 0; seen < last; {
		batch, err := cons.FetchNoWait(256) // those there, at once
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if meta, err := m.Metadata(); err == nil {
				seen = max(seen, meta.Sequence.Stream)
			}
			var marks []groupMark
			if json.Unmarshal(m.Data(), &marks) != nil {
				continue // a bad group: its sends are made again
			}
			for _, gm := range marks {
				if slash := strings.LastIndexByte(gm.ID, '/'); slash >= 0 && keys[gm.ID[:slash]] {
					found[gm.ID] = gm.Mark
				}
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return err
		}
		switch {
		case n > 0:
			idle = 0
		case idle == loadTries:
			if _, err := stream.GetMsg(ctx, last); errors.Is(err, jetstream.ErrMsgNotFound) {
				// The last group ran out (the bucket's TTL) while it was
				// read: none is left to read.
				j.setMarks(found)
				return nil
			}
			return fmt.Errorf("the groups of marks stopped at %d of %d", seen, last)
		default:
			// None came although more are there: the server was slow to
			// answer (a fetch that does not wait gives up after a second).
			idle++
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(loadPause):
			}
		}
	}
	j.setMarks(found)
	return nil
}

// setMarks keeps marks for groupMarkOf (Pending's, read before any
// covered send of this process was marked). They are kept for the life of
// the journal: they are those of the events a start took up, no more,
// and a goroutine a handler run again started may repeat a send after
// its event was removed.
func (j *Journal) setMarks(marks map[string]markData) {
	j.coverMu.Lock()
	j.marks = marks
	j.coverMu.Unlock()
}

// groupMarkOf returns the mark of the send id read by loadMarks, if any.
func (j *Journal) groupMarkOf(id string) (markData, bool) {
	j.coverMu.Lock()
	defer j.coverMu.Unlock()
	m, ok := j.marks[id]
	return m, ok
}
