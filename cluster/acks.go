package cluster

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// acks reads the answers to records published without a wait each
// (RecordEvents' waves), as the jetstream library's PublishMsgAsync does,
// but for a wave at a time: one subscription on the connection, an answer's
// reply subject naming its wave and its place in it, the ack read without
// decoding JSON (readPubAck), and one channel closed once the wave's last
// answer came — instead of the library's future, its two channels, its
// options and its header set for each record (a quarter of the
// allocations of BenchmarkJournalEvent's batch=100).
//
// The subscription is made at the first wave and lasts as long as the
// connection, as the library's own reply subscription does.
type acks struct {
	nc *nats.Conn
	// unwaited hears the error of a record published with publish,
	// for which nobody waits (a handled mark), if any.
	unwaited func(error)

	mu     sync.Mutex
	sub    *nats.Subscription
	prefix string // the reply subjects' inbox and its dot
	next   uint64
	waves  map[uint64]*ackWave
}

// ackWave is one wave's answers, by place.
type ackWave struct {
	id     uint64
	prefix string // the wave's reply subjects, before the place
	res    []pubResult
	left   int           // answers still awaited; under acks.mu
	done   chan struct{} // closed once left is 0
	sent   atomic.Int64  // the places published so far (see sentTo)
}

// pubResult is one record's answer: its ack, or the error.
type pubResult struct {
	ack *jetstream.PubAck
	err error
	got bool // an answer came
}

// errNoAnswer is what a record whose answer never came is left with.
var errNoAnswer = errors.New("nats: no answer to a record's publish")

// begin registers a wave of n records and returns it; its records go out
// with reply subjects from reply.
func (a *acks) begin(n int) (*ackWave, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.subscribeLocked(); err != nil {
		return nil, err
	}
	a.next++
	w := &ackWave{id: a.next, prefix: a.prefix + strconv.FormatUint(a.next, 10) + ".",
		res: make([]pubResult, n), left: n, done: make(chan struct{})}
	if n == 0 {
		close(w.done)
	}
	a.waves[w.id] = w
	return w, nil
}

// subscribeLocked makes the subscription if there is none yet (or the
// connection it was made on closed); a.mu must be held.
func (a *acks) subscribeLocked() error {
	if a.sub != nil && a.sub.IsValid() {
		return nil
	}
	prefix := a.nc.NewInbox() + "."
	sub, err := a.nc.Subscribe(prefix+"*.*", func(m *nats.Msg) { a.answer(prefix, m) })
	if err != nil {
		return err
	}
	// Answers are a few bytes each; the client's default bound on those
	// waiting for this goroutine (65,536) is ample.
	a.sub, a.prefix = sub, prefix
	if a.waves == nil {
		a.waves = make(map[uint64]*ackWave)
	}
	// The answers to what was sent before the connection was lost are
	// lost with it: those records fail at once, as the library fails its
	// futures, instead of at the wave's timeout. The goroutine ends with
	// the connection.
	status := a.nc.StatusChanged(nats.RECONNECTING, nats.CLOSED)
	go a.watch(status)
	return nil
}

// watch fails the records sent and unanswered each time the connection is
// lost, until it closes. (The client drops a status its listener has no
// room for: a CLOSED lost so is seen by IsClosed after the events that
// filled the room.)
func (a *acks) watch(status chan nats.Status) {
	defer a.nc.RemoveStatusListener(status)
	for st := range status {
		if st == nats.CLOSED || a.nc.IsClosed() {
			return
		}
		a.mu.Lock()
		for _, w := range a.waves {
			for i := range int(w.sent.Load()) {
				a.settleLocked(w, i, pubResult{err: nats.ErrDisconnected})
			}
		}
		a.mu.Unlock()
	}
}

// sentTo records that the wave's places before n were published (or are
// being): a lost connection fails those unanswered, maybe written;
// records published while the client reconnects go out once it has, and
// wait for their answers.
func (w *ackWave) sentTo(n int) { w.sent.Store(int64(n)) }

// unwaitedPlace is the reply subject's last tokens of a record published
// with publish: no wave is numbered 0.
const unwaitedPlace = "0.0"

// publish publishes msg, a record nobody waits for: its answer, if an
// error, goes to a.unwaited — where the library's PublishAsync would drop
// it unread, with a future made and kept until its answer for each.
func (a *acks) publish(msg *nats.Msg) error {
	a.mu.Lock()
	err := a.subscribeLocked()
	prefix := a.prefix
	a.mu.Unlock()
	if err != nil {
		return err
	}
	msg.Reply = prefix + unwaitedPlace
	return a.nc.PublishMsg(msg)
}

// reply returns the reply subject of the wave's record at place i.
func (w *ackWave) reply(i int) string {
	return w.prefix + strconv.Itoa(i)
}

// skip gives up the answer of the record at place i, which was not sent.
func (a *acks) skip(w *ackWave, i int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.settleLocked(w, i, pubResult{err: errNoAnswer})
}

// end unregisters w: answers coming later are dropped. It returns the
// wave's results, those never answered with got false.
func (a *acks) end(w *ackWave) []pubResult {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waves, w.id)
	return w.res
}

// settleLocked sets the result at place i once.
func (a *acks) settleLocked(w *ackWave, i int, r pubResult) {
	if i < 0 || i >= len(w.res) || w.res[i].got {
		return
	}
	r.got = true
	w.res[i] = r
	if w.left--; w.left == 0 {
		close(w.done)
	}
}

// answer reads one answer to a reply subject under prefix, on the
// subscription's goroutine.
func (a *acks) answer(prefix string, m *nats.Msg) {
	rest, ok := strings.CutPrefix(m.Subject, prefix)
	if !ok {
		return
	}
	wave, place, ok := strings.Cut(rest, ".")
	if !ok {
		return
	}
	id, err1 := strconv.ParseUint(wave, 10, 64)
	i, err2 := strconv.Atoi(place)
	if err1 != nil || err2 != nil {
		return
	}
	var r pubResult
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		// No stream listens on the subject: surely not written.
		r.err = jetstream.ErrNoStreamResponse
	} else {
		r.ack, r.err = readPubAck(m.Data)
	}
	if id == 0 {
		if r.err != nil && a.unwaited != nil {
			a.unwaited(r.err)
		}
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w := a.waves[id]; w != nil {
		a.settleLocked(w, i, r)
	}
}
