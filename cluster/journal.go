// Package cluster keeps Herald's journal on NATS JetStream: every event the
// engine takes until its handling ended, every send until its outcome is
// final, and the sends that failed for good, so that a process that dies
// loses nothing (see engine.WithJournal). It speaks to any NATS server with
// JetStream: the one package cluster/embedded runs inside the process, or a
// cluster shared by several processes.
//
// What it writes, for a bot named B (Config.Bot):
//
//	stream IN_B   in.B.<platform>.<chat>    an event, until handled  (work queue; Msg-Id ev:<platform>:<event id>)
//	stream OUT_B  out.B.<platform>.<chat>   a send, until final      (work queue; Msg-Id the send's id)
//	              in.B.done, out.B.done     which records are done, until purged
//	              in.B._anchor, out.B._anchor  one message no consumer takes (shared journals: keeps a drained stream's block)
//	stream DLQ_B  dlq.B.<platform>.<chat>   a dead letter            (kept until replayed or purged)
//	bucket progress_B  <OUT sequence>       how far a waiting send got
//	bucket sent_B      <send id>            a send delivered while its event was still handled (TTL: the window)
//	                   n.<unique>           the same for many covered sends at once (see marks.go)
//	bucket effects_B   <effect id>          a handler's Once result (TTL: the window)
//	bucket handled_B   <platform>:<event id> an event handled (no value; TTL: the window)
//	objects blobs_B    r-<unique>            a record larger than a message (the message names it)
//
// Platform names and chat IDs are escaped into subject tokens (a "." or a
// space cannot be in one). Events and sends are JSON (the bytes of the
// files they carry follow it, outside). JetStream drops a publish whose
// Msg-Id it saw within the duplicate window (Config.DuplicateWindow) and
// still holds; a send delivered while its event was still being handled is
// marked in sent_B. Together they make a handler that runs again after a
// crash repeat no send. A handler's send in one process usually has no
// record in OUT: its event's record in IN keeps it (see cover.go).
//
// Every stream and bucket is created again when it is found missing (a
// server restarted without it, a new cluster). A store that refuses writes
// (unreachable, its disk or limit full) is an outage the journal lives
// through by itself: one log line; new events and sends refused at once
// with an error wrapping journal.ErrOutage, in order; what was left to
// finish done once the store is back (Journal.WaitRecording waits for it).
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Defaults for the zero fields of [Config].
const (
	DefaultBot             = "herald"
	DefaultDuplicateWindow = time.Hour
	DefaultPartitions      = 16
)

// Config configures [Open]. The zero value is a valid configuration.
type Config struct {
	// Bot names the bot, so that several bots can share one NATS server:
	// it is part of every stream name and subject. Letters, digits, "-"
	// and "_". Empty means DefaultBot ("herald").
	Bot string

	// Replicas is how many servers keep each stream. 0 means 1 on a
	// single server and 3 on a cluster of three or more.
	Replicas int

	// DuplicateWindow is how long JetStream recognizes an event or a send
	// it has seen, by its id: a platform's redelivery, or a send repeated
	// by a handler run again after a restart, within it is dropped. It
	// must outlast the longest restart and the longest conversation wait.
	// 0 means DefaultDuplicateWindow (1 hour).
	DuplicateWindow time.Duration

	// Partitions is how many partitions IN's events are split into by
	// chat, for the processes of a bot to share (see Shared): at most that
	// many processes handle events at once. Each is a consumer whose state
	// the server writes to a file up to ten times a second while it is
	// busy: fewer cost less CPU per event (16 take 10–20% less than 64 in
	// BenchmarkSharedReplies). It is fixed when IN is created: an existing
	// IN keeps its own. 0 means DefaultPartitions (16).
	Partitions int

	// Logger receives the journal's failures that are no call's error
	// (a handled mark not written), each at most once a minute. Nil
	// means none.
	Logger *zap.Logger

	// MaxBytes bounds each stream's size; a full stream refuses new
	// events and sends (the engine then refuses them with an error
	// wrapping engine.ErrJournal) until what it holds is done. 0 means
	// no bound but the server's store.
	MaxBytes int64

	// MaxRecord bounds the record of one event or send, in bytes of its
	// JSON and of the files it carries, as they are: a larger one is
	// refused with an error wrapping journal.ErrUnrecordable, an error of
	// that event or send alone. A record larger than a NATS message is
	// kept in the object store blobs_B. 0 means DefaultMaxRecord (128
	// MiB); a negative value means no bound but the store's.
	MaxRecord int64
}

// Journal is the journal of one process on NATS JetStream: a
// journal.Journal (the one-process journal.Local) over its own
// journal.Log, the streams and buckets above. Create it with [Open]; it
// is safe for concurrent use.
type Journal struct {
	*journal.Local
	cfg      Config
	js       jetstream.JetStream
	in       jetstream.Stream
	out      jetstream.Stream
	dlq      jetstream.Stream
	progress jetstream.KeyValue
	sent     jetstream.KeyValue
	effects  jetstream.KeyValue
	blobs    jetstream.ObjectStore
	nc       *nats.Conn
	assets   *assets
	health   *health

	inDone, outDone *doneLog // see done.go
	acks            acks     // the answers to RecordEvents' writes (acks.go)

	inAnchor, outAnchor string // the subjects of IN's and OUT's anchors (see anchor.go)

	// covers holds the records of events whose handlings' sends the
	// journal covers, by coverKey (see cover.go); nil for a journal that
	// covers none.
	coverMu      sync.Mutex
	covers       map[string]*record
	coveredChats map[string][]*coveredSend // by chatOfSend: the covered sends not final, in order
	recording    map[string]int            // by chatOfSend: the sends recorded on their own not done
	marks        map[string]markData       // the groups' marks Pending read (marks.go)
	markW        *markWriter

	sentSubject    string              // $KV.sent_B.
	handled        jetstream.KeyValue  // see handled.go
	handledSubject string              // $KV.handled_B.
	recent         map[string]struct{} // the last handled marks Open read
	limited        *ratelog.Logger
	blobGrace      time.Duration // see blobGrace
	reclaim        reclaimer     // see reclaim.go
}

var (
	_ journal.Journal   = (*Journal)(nil)
	_ journal.Log       = (*Journal)(nil)
	_ journal.EffectLog = (*Journal)(nil)
	_ journal.Waiter    = (*Journal)(nil)
)

// withDefaults returns c with each setting left unset given its default.
func (c Config) withDefaults() Config {
	if c.Bot == "" {
		c.Bot = DefaultBot
	}
	if c.DuplicateWindow <= 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.Partitions <= 0 {
		c.Partitions = DefaultPartitions
	}
	if c.MaxRecord == 0 {
		c.MaxRecord = DefaultMaxRecord
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Open creates (or updates) the journal's streams and bucket on nc's
// server and returns the journal. It fails when the server has no
// JetStream, or refuses the streams. The journal is one process's: it
// removes what it is done with by purging its streams below the records it
// holds, so two journals of one bot must never run at once; several
// processes use [OpenShared].
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Journal, error) {
	cfg = cfg.withDefaults()
	if !validName(cfg.Bot) {
		return nil, fmt.Errorf("cluster: bot name %q: want letters, digits, - and _", cfg.Bot)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(asyncWriteTimeout))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cfg.Replicas = replicas(ctx, nc, cfg.Replicas)
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, fmt.Errorf("cluster: the server has no JetStream: %w", err)
	}
	log := cfg.Logger
	j := &Journal{cfg: cfg, js: js, nc: nc, acks: acks{nc: nc}, limited: ratelog.New(log, time.Minute), assets: &assets{js: js}, blobGrace: blobGrace}
	j.health = &health{log: log, probe: j.probe, closed: nc.IsClosed}
	j.Local = journal.NewLocal(j)
	j.covers = make(map[string]*record)
	j.coveredChats = make(map[string][]*coveredSend)
	j.recording = make(map[string]int)
	j.markW = newMarkWriter(j)
	j.acks.unwaited = j.handledFailed
	stream := func(kind string, retention jetstream.RetentionPolicy) (jetstream.Stream, error) {
		sc := jetstream.StreamConfig{
			Name:        strings.ToUpper(kind) + "_" + cfg.Bot,
			Subjects:    []string{kind + "." + cfg.Bot + ".>"},
			Retention:   retention,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
			Duplicates:  cfg.DuplicateWindow,
			MaxBytes:    max(cfg.MaxBytes, -1),
			Discard:     jetstream.DiscardNew,
			AllowDirect: true,
		}
		if kind == "in" {
			// in.B.<platform>.<chat> is kept as in.B.<partition>.<platform>.<chat>.
			sc.SubjectTransform = &jetstream.SubjectTransformConfig{
				Source:      "in." + cfg.Bot + ".*.*",
				Destination: fmt.Sprintf("in.%s.{{partition(%d,1,2)}}.{{wildcard(1)}}.{{wildcard(2)}}", cfg.Bot, cfg.Partitions),
			}
			if old, err := js.Stream(ctx, sc.Name); err == nil {
				if t := old.CachedInfo().Config.SubjectTransform; t != nil {
					sc.SubjectTransform = t // the partitions are fixed at creation
					if n, ok := partitionsOf(t.Destination); ok {
						j.cfg.Partitions = n
					}
				}
			}
		}
		s, err := ensureStream(ctx, js, sc)
		if err != nil {
			return nil, fmt.Errorf("cluster: stream %s: %w", kind, err)
		}
		j.assets.addStream(sc)
		return s, nil
	}
	if j.in, err = stream("in", jetstream.WorkQueuePolicy); err != nil {
		return nil, err
	}
	if j.out, err = stream("out", jetstream.WorkQueuePolicy); err != nil {
		return nil, err
	}
	j.inAnchor, j.outAnchor = anchorSubject("in", cfg.Bot), anchorSubject("out", cfg.Bot)
	j.inDone = newDoneLog(js, j.in, "in."+cfg.Bot+".done", j.limited)
	j.outDone = newDoneLog(js, j.out, "out."+cfg.Bot+".done", j.limited)
	if cfg.MaxBytes > 0 {
		// A purge due before a quarter of the stream's room holds what
		// is done, so that a bot near its bound is seldom refused a write
		// for room that done records hold (the probe's compaction would
		// end that outage).
		for _, d := range []*doneLog{j.inDone, j.outDone} {
			d.bytes = min(d.bytes, max(cfg.MaxBytes/4, 1))
		}
	}
	if j.dlq, err = stream("dlq", jetstream.LimitsPolicy); err != nil {
		return nil, err
	}
	j.progress, err = j.keyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   "progress_" + cfg.Bot,
		Storage:  jetstream.FileStorage,
		Replicas: cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: progress bucket: %w", err)
	}
	j.sent, err = j.keyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   "sent_" + cfg.Bot,
		TTL:      cfg.DuplicateWindow,
		Storage:  jetstream.FileStorage,
		Replicas: cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: sent bucket: %w", err)
	}
	j.sentSubject = "$KV.sent_" + cfg.Bot + "."
	j.effects, err = j.keyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   "effects_" + cfg.Bot,
		TTL:      cfg.DuplicateWindow,
		Storage:  jetstream.FileStorage,
		Replicas: cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: effects bucket: %w", err)
	}
	oc := jetstream.ObjectStoreConfig{Bucket: "blobs_" + cfg.Bot, Storage: jetstream.FileStorage, Replicas: cfg.Replicas}
	if j.blobs, err = ensureObjectStore(ctx, js, oc); err != nil {
		return nil, fmt.Errorf("cluster: blobs object store: %w", err)
	}
	j.assets.addObjectStore(oc)
	if err := j.openHandled(ctx); err != nil {
		return nil, err
	}
	j.inDone.mark = j.markHandledAll
	return j, nil
}

// keyValue creates (or updates) the bucket kc describes, and keeps it
// among the journal's assets.
func (j *Journal) keyValue(ctx context.Context, kc jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := ensureKeyValue(ctx, j.js, kc)
	if err != nil {
		return nil, err
	}
	j.assets.addKeyValue(kc)
	return kv, nil
}

// Join runs the process's part (see journal.Local.Join); once what it
// took is done, it removes what the streams still hold done (see done.go),
// so that a clean stop leaves only the records not done.
func (j *Journal) Join(ctx context.Context) error {
	err := j.Local.Join(ctx)
	if j.health.gate() != nil {
		return err // the store refuses: it is left for the next start
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	_ = j.compact(cctx) // what is left goes with the next start's purges
	return err
}

// compact removes at once what IN and OUT hold done (doneLog.compact).
func (j *Journal) compact(ctx context.Context) error {
	for _, d := range []*doneLog{j.inDone, j.outDone} {
		if err := d.compact(ctx); err != nil {
			return err
		}
	}
	return nil
}

// WaitRecording returns nil once the journal's store takes writes again
// after an outage, at once when it does (see journal.Waiter).
func (j *Journal) WaitRecording(ctx context.Context) error { return j.health.wait(ctx) }

// probe is the journal's test of whether its store takes writes again:
// it creates again the streams and buckets that are missing when the
// last failure (cause) or the probe says one may be, then writes one
// small key; with Config.MaxBytes, IN and OUT must have room left too (a
// quarter of it, up to 64 KiB).
func (j *Journal) probe(ctx context.Context, cause error) error {
	if _, err := j.assets.repair(ctx, cause); err != nil {
		return err
	}
	_, err := j.sent.Put(ctx, probeKey, nil)
	if missing(err) {
		if _, rerr := j.assets.repair(ctx, err); rerr != nil {
			return rerr
		}
		_, err = j.sent.Put(ctx, probeKey, nil)
	}
	if err != nil {
		return err
	}
	if j.cfg.MaxBytes <= 0 {
		return nil
	}
	if err := j.compact(ctx); err != nil {
		return err
	}
	for _, s := range []jetstream.Stream{j.in, j.out} {
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if room := j.cfg.MaxBytes - int64(info.State.Bytes); room < min(j.cfg.MaxBytes/4, 64<<10) {
			return fmt.Errorf("cluster: stream %s holds %d of its %d bytes", info.Config.Name, info.State.Bytes, j.cfg.MaxBytes)
		}
	}
	return nil
}

// Effect returns the value recorded under id (see journal.Journal).
func (j *Journal) Effect(ctx context.Context, id string) ([]byte, bool, error) {
	if err := j.health.gate(); err != nil {
		return nil, false, err
	}
	e, err := j.effects.Get(ctx, markKey(id))
	switch {
	case err == nil:
		return e.Value(), true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, false, nil
	default:
		return nil, false, j.health.writeErr(ctx, "look up an effect", err)
	}
}

// RecordEffect records value under id for the duplicate window (see
// journal.Journal).
func (j *Journal) RecordEffect(ctx context.Context, id string, value []byte) error {
	if err := j.health.gate(); err != nil {
		return err
	}
	if _, err := j.effects.Put(ctx, markKey(id), value); err != nil {
		return j.health.writeErr(ctx, "record an effect", err)
	}
	j.health.ok()
	return nil
}

// replicas returns n, or for n <= 0 the replicas that follow the cluster:
// 3 where it has three servers or more, 1 otherwise.
func replicas(ctx context.Context, nc *nats.Conn, n int) int {
	switch {
	case n > 0:
		return n
	case clusterSize(ctx, nc) >= 3:
		return 3
	}
	return 1
}

// clusterSize returns how many servers the connected cluster has, or 1
// when it cannot tell.
func clusterSize(ctx context.Context, nc *nats.Conn) int {
	if !nc.IsConnected() {
		return 1
	}
	urls := nc.DiscoveredServers()
	return 1 + len(urls)
}

// eventData and sendData are what IN and OUT hold.
type sendData struct {
	ID      string               `json:"id,omitempty"`
	Request platform.SendRequest `json:"request"`
}

// RecordEvent records ev in IN (see journal.Log).
func (j *Journal) RecordEvent(ctx context.Context, ev platform.Event) (journal.Record, bool, error) {
	return j.recordEvent(ctx, ev, j.inDone)
}

// recordEvent records ev in IN; the record's Done removes it through d, or,
// with a nil d (a shared journal's event, which its partition's consumer
// removes), it has none.
func (j *Journal) recordEvent(ctx context.Context, ev platform.Event, d *doneLog) (journal.Record, bool, error) {
	pieces, err := encodeRecord(&ev)
	if err != nil {
		return nil, false, platform.Permanent(fmt.Errorf("cluster: event: %w: %w", journal.ErrUnrecordable, err))
	}
	key := handledKey(ev)
	if j.handledBefore(key) {
		return nil, true, nil // handled before a restart, handed on again
	}
	var id string
	if ev.ID != "" {
		id = eventMsgID(ev)
	}
	msg := nats.NewMsg(j.subject("in", ev.Platform, chatOf(ev)))
	var w writing
	if d != nil {
		w = d.begin()
	}
	ack, blob, err := j.putRecord(ctx, "record event", msg, pieces, id)
	if err != nil {
		if d != nil {
			d.failed(w, maybeWritten(err))
		}
		return nil, false, err
	}
	var epoch uint64
	if d != nil {
		epoch = d.written(w, ack.Sequence, ack.Duplicate, len(msg.Data))
	}
	if ack.Duplicate {
		return nil, true, nil
	}
	rec := &record{j: j, log: d, epoch: epoch, seq: ack.Sequence, event: key, blob: blob}
	if d != nil {
		j.holdable(rec, &ev)
	}
	return rec, false, nil
}

// eventMsgID returns the Msg-Id of ev's record, by which JetStream drops
// the platform's repeat of an event: the same whether the event was
// recorded alone (recordEvent) or in a batch (RecordEvents).
func eventMsgID(ev platform.Event) string { return "ev:" + ev.Platform + ":" + ev.ID }

// chatOf returns the chat an event's subject names: its chat, or, for an
// event without one, its user, as the engine's inbound queue does.
func chatOf(ev platform.Event) string {
	if ev.Chat.ID != "" {
		return ev.Chat.ID
	}
	return "user:" + ev.From.ID
}

// RecordSend records a send in OUT (see journal.Log). A send with Repeat
// set is first looked up in the marks of delivered sends.
func (j *Journal) RecordSend(ctx context.Context, s journal.Send) (journal.Record, journal.Appended, error) {
	if err := j.health.gate(); err != nil {
		return nil, journal.Appended{}, err
	}
	if s.Covered && !s.Repeat && s.ID != "" {
		if c := j.cover(s); c != nil {
			return c, journal.Appended{}, nil
		}
	}
	if s.Repeat && s.ID != "" {
		if m, ok := j.groupMarkOf(s.ID); ok {
			return nil, m.appended(), nil
		}
		if m, ok, err := j.mark(ctx, s.ID); err != nil {
			return nil, journal.Appended{}, err
		} else if ok {
			return nil, m.appended(), nil
		}
	}
	chat := j.beginRecording(&s.Request)
	if err := j.recordCoveredBefore(ctx, &s.Request); err != nil {
		j.recorded(chat)
		return nil, journal.Appended{}, err
	}
	rec, a, err := j.recordSend(ctx, s)
	if r, ok := rec.(*record); ok && chat != "" {
		r.recording = chat // until its Done
	} else {
		j.recorded(chat)
	}
	return rec, a, err
}

// recordSend writes s's record in OUT (RecordSend's write).
func (j *Journal) recordSend(ctx context.Context, s journal.Send) (journal.Record, journal.Appended, error) {
	pieces, err := encodeRecord(&sendData{ID: s.ID, Request: s.Request})
	if err != nil {
		return nil, journal.Appended{}, platform.Permanent(fmt.Errorf("cluster: send: %w: %w", journal.ErrUnrecordable, err))
	}
	var id string
	if s.ID != "" {
		id = "send:" + s.ID
	}
	msg := sendMsg(j.subject("out", s.Request.Platform, s.Request.Target.ID), id, s)
	w := j.outDone.begin()
	ack, blob, err := j.putRecord(ctx, "record send", msg, pieces, "") // its Msg-Id set
	if err != nil {
		j.outDone.failed(w, maybeWritten(err))
		return nil, journal.Appended{}, err
	}
	epoch := j.outDone.written(w, ack.Sequence, ack.Duplicate, len(msg.Data))
	if ack.Duplicate {
		return nil, j.duplicate(ctx, j.out, ack.Sequence, s.ID), nil
	}
	return &record{j: j, log: j.outDone, epoch: epoch, seq: ack.Sequence, send: true, id: s.ID, blob: blob, sum: s.Sum, what: s.What}, journal.Appended{}, nil
}

// mark returns the mark of a send with id delivered, if it was.
func (j *Journal) mark(ctx context.Context, id string) (markData, bool, error) {
	e, err := j.sent.Get(ctx, markKey(id))
	switch {
	case err == nil:
		var m markData
		_ = json.Unmarshal(e.Value(), &m) // a bad mark still says it was sent
		return m, true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return markData{}, false, nil
	default:
		return markData{}, false, j.health.writeErr(ctx, "look up a repeated send", err)
	}
}

// putMark marks the send id delivered with m: a put into the sent bucket,
// published as a record is (publishRecord), not through the library's
// KeyValue.Put, which decodes its answer as JSON and, under the engine's
// context that never ends, makes a context of its own for each mark.
func (j *Journal) putMark(ctx context.Context, id string, m markData) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cluster: mark: %w", err)
	}
	msg := &nats.Msg{Subject: j.sentSubject + markKey(id), Data: data}
	if _, err := publishRecord(ctx, j.nc, msg, ""); err != nil {
		return outage("mark delivered", err)
	}
	return nil
}

// finish does a part of a record's Done: at once, or, the store refusing
// it, once the store is back (see health). It returns do's error.
func (j *Journal) finish(ctx context.Context, do func(ctx context.Context) error) error {
	err := do(ctx)
	if errors.Is(err, journal.ErrOutage) {
		j.health.later(do, err)
	}
	return err
}

// markKey turns a send's id into a key of the sent bucket: KV keys allow
// letters, digits, "-", "_", "=", "." and "/", and a "." separates tokens,
// so anything else is escaped as _XX.
func markKey(id string) string {
	var b strings.Builder
	b.Grow(len(id) + 6) // an event's ID: one colon escaped, and a few more
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c == '-' || c == '=' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}

// record is one message of IN or OUT.
type record struct {
	j     *Journal
	log   *doneLog // its stream's; nil for none (a shared journal's event)
	epoch uint64   // its stream's epoch (doneLog)
	seq   uint64
	send  bool
	id    string // a send's id
	event string // an event's handled key
	blob  string // the object holding its bytes, or ""
	saved bool   // a progress entry exists for it
	sum   uint64 // a send's Sum and What (journal.Send)
	what  string

	// For the record of an event whose handling's sends it covers (see
	// cover.go): its key among the journal's covers, and, under the
	// journal's coverMu, the covered sends not final, whether its removal
	// was asked for meanwhile, and the records to remove with it.
	coverKey string
	inChat   string // its platform and chat (chatOf): its handlings run in order
	held     int
	asked    bool
	removed  bool // its removal, asked for and waited for, was made
	taken    []journal.Record
	marked   []string // the ids of its covered sends marked (marks.go), kept in marks
	// recording is, for a send recorded on its own, its chat's key among
	// the journal's recording until its Done (see cover.go).
	recording string
}

// Done removes the message, its object and a send's progress, after
// marking it delivered if asked to. What the store refuses (an outage) is
// done once it is back, and Done's error then wraps journal.ErrOutage: a
// mark refused does not keep the record (a send's record kept would be
// made again after a restart, for sure), and the record refused is removed
// later.
func (r *record) Done(ctx context.Context, delivered *platform.SendResult) error {
	if r.coverKey != "" {
		if r.holdDone(nil) {
			return nil // removed by the last covered send's Done
		}
		return doneAll(ctx, r, nil) // and its covered sends' marks forgotten
	}
	if r.recording != "" {
		r.j.recorded(r.recording)
	}
	return r.done(ctx, delivered)
}

// done is Done, the record no longer covering sends.
func (r *record) done(ctx context.Context, delivered *platform.SendResult) error {
	j := r.j
	var markErr error
	if delivered != nil && r.id != "" {
		id, m := r.id, markData{SendResult: *delivered, Sum: r.sum, What: r.what}
		markErr = j.finish(ctx, func(ctx context.Context) error { return j.putMark(ctx, id, m) })
	}
	rm := removal{j: j, log: r.log, epoch: r.epoch, seq: r.seq, blob: r.blob, saved: r.saved, mark: r.event}
	if rm.log == nil || rm.log.mark == nil {
		j.markHandled(rm.mark) // else with its group's note
		rm.mark = ""
	}
	err := rm.do(ctx) // as finish does, without a closure on every Done
	if errors.Is(err, journal.ErrOutage) {
		j.health.later(rm.do, err)
	}
	if markErr != nil || err != nil {
		return fmt.Errorf("%w (kept; finished once the store takes writes again)", errors.Join(markErr, err))
	}
	return nil
}

// removal is the part of a record's Done that removes it: its done note
// (with its handled mark, if any), its object and its progress.
type removal struct {
	j          *Journal
	log        *doneLog // nil for none
	epoch, seq uint64
	blob       string
	saved      bool
	mark       string // written with the note; "" for none
}

func (rm removal) do(ctx context.Context) error {
	if rm.log != nil {
		if err := rm.log.done(ctx, rm.epoch, rm.seq, rm.mark); err != nil {
			return err
		}
	}
	rm.j.dropBlob(rm.blob)
	if rm.saved {
		if err := rm.j.progress.Purge(ctx, progressKey(rm.seq)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return outage("done: progress", err)
		}
	}
	return nil
}

// Save records a send's progress in the bucket.
func (r *record) Save(ctx context.Context, p *platform.Progress) error {
	if !r.send {
		return nil
	}
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("cluster: progress: %w", err)
	}
	if _, err := r.j.progress.Put(ctx, progressKey(r.seq), data); err != nil {
		return r.j.health.writeErr(ctx, "progress", err)
	}
	r.saved = true
	return nil
}

func progressKey(seq uint64) string { return strconv.FormatUint(seq, 10) }

// gone reports whether err says a message is not there (already removed).
// A deletion the server refused for another reason (its disk full) is
// not.
func gone(err error) bool {
	return errors.Is(err, jetstream.ErrMsgNotFound) || apiCode(err) == jetstream.JSErrCodeMessageNotFound ||
		errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) && (strings.Contains(err.Error(), "no message found") || strings.Contains(err.Error(), "not found"))
}

// Pending returns what IN and OUT hold, in order, and the dead letters
// (see journal.Log). A record whose object is gone is dropped, with a
// warning; the objects no record names are removed.
//
// A record a done note names is done, and is not handed over (see
// done.go); the others are held until done.
func (j *Journal) Pending(ctx context.Context) (journal.Pending, error) {
	var rec journal.Pending
	outNoted, err := j.notes(ctx, j.outDone)
	if err != nil {
		return journal.Pending{}, fmt.Errorf("cluster: recover sends: %w", err)
	}
	inNoted, err := j.notes(ctx, j.inDone)
	if err != nil {
		return journal.Pending{}, fmt.Errorf("cluster: recover events: %w", err)
	}
	var outHeld, inHeld []uint64
	var oldest time.Time          // when the first event held was recorded
	heldKeys := map[string]bool{} // their coverKeys
	var outLast, inLast uint64
	outEpoch, inEpoch := j.outDone.current(), j.inDone.current()
	named := map[string]bool{}
	read := func(m *jetstream.RawStreamMsg, what string, v any) (string, bool, error) {
		data, blob, err := j.recordData(ctx, m.Header, m.Data)
		named[blob] = blob != ""
		if errors.Is(err, errBlobGone) {
			j.limited.Warn("cluster: a record whose object is gone cannot be read; dropping it", zap.String("record", what), zap.Error(err))
			return blob, false, nil
		}
		if err != nil {
			return blob, false, fmt.Errorf("%s %d: %w", what, m.Sequence, err)
		}
		if err := decodeRecord(data, v); err != nil {
			return blob, false, fmt.Errorf("%s %d: %w", what, m.Sequence, err)
		}
		return blob, true, nil
	}
	err = j.each(ctx, j.out, func(m *jetstream.RawStreamMsg) error {
		outLast = m.Sequence
		if _, done := outNoted[m.Sequence]; done || m.Subject == j.outDone.subject {
			return nil
		}
		var d sendData
		blob, ok, err := read(m, "send", &d)
		if !ok {
			return err
		}
		outHeld = append(outHeld, m.Sequence)
		r := &record{j: j, log: j.outDone, epoch: outEpoch, seq: m.Sequence, send: true, id: d.ID, blob: blob}
		r.sum, r.what = sumOf(m.Header)
		rs := journal.Outgoing{ID: d.ID, Request: d.Request, Record: r}
		if e, err := j.progress.Get(ctx, progressKey(m.Sequence)); err == nil {
			r.saved = true
			_ = json.Unmarshal(e.Value(), &rs.Progress) // a bad entry: start afresh
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("progress of send %d: %w", m.Sequence, err)
		}
		rec.Sends = append(rec.Sends, rs)
		return nil
	})
	if err != nil {
		return journal.Pending{}, fmt.Errorf("cluster: recover sends: %w", err)
	}
	err = j.each(ctx, j.in, func(m *jetstream.RawStreamMsg) error {
		inLast = m.Sequence
		if _, done := inNoted[m.Sequence]; done || m.Subject == j.inDone.subject {
			return nil
		}
		var ev platform.Event
		blob, ok, err := read(m, "event", &ev)
		if !ok {
			return err
		}
		inHeld = append(inHeld, m.Sequence)
		if oldest.IsZero() {
			oldest = m.Time
		}
		if ev.ID != "" {
			heldKeys[coverKey(ev)] = true
		}
		rec.Events = append(rec.Events, journal.Incoming{Event: ev, Record: &record{j: j, log: j.inDone, epoch: inEpoch, seq: m.Sequence, event: handledKey(ev), blob: blob}})
		return nil
	})
	if err != nil {
		return journal.Pending{}, fmt.Errorf("cluster: recover events: %w", err)
	}
	if err := j.loadMarks(ctx, oldest.Add(-markSkew), heldKeys); err != nil {
		return journal.Pending{}, fmt.Errorf("cluster: recover the marks of delivered sends: %w", err)
	}
	j.outDone.adopt(outHeld, outLast, outNoted)
	j.inDone.adopt(inHeld, inLast, inNoted)
	if rec.DeadLetters, err = j.readDeadLetters(ctx, named); err != nil {
		return journal.Pending{}, err
	}
	if err := j.sweepBlobs(ctx, func() (map[string]bool, error) { return named, nil }); err != nil {
		j.limited.Warn("cluster: the objects no record names were not removed", zap.Error(err))
	}
	return rec, nil
}

// deadLetters returns the dead letters DLQ holds, in order.
func (j *Journal) deadLetters(ctx context.Context) ([]sender.DeadLetter, error) {
	return j.readDeadLetters(ctx, map[string]bool{})
}

// readDeadLetters is deadLetters, noting in named the objects they name.
func (j *Journal) readDeadLetters(ctx context.Context, named map[string]bool) ([]sender.DeadLetter, error) {
	var letters []sender.DeadLetter
	err := j.each(ctx, j.dlq, func(m *jetstream.RawStreamMsg) error {
		data, blob, err := j.recordData(ctx, m.Header, m.Data)
		named[blob] = blob != ""
		if errors.Is(err, errBlobGone) {
			j.limited.Warn("cluster: a dead letter whose object is gone cannot be read; dropping it", zap.Error(err))
			return nil
		}
		if err != nil {
			return fmt.Errorf("dead letter %d: %w", m.Sequence, err)
		}
		var dl sender.DeadLetter
		if err := decodeRecord(data, &dl); err != nil {
			return fmt.Errorf("dead letter %d: %w", m.Sequence, err)
		}
		dl.ID = progressKey(m.Sequence)
		letters = append(letters, dl)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: recover dead letters: %w", err)
	}
	return letters, nil
}

// notes returns the records d's done notes name, each with its note. A
// note written for a stream before this one (made anew since) is not
// read, nor a name at or past its note: a record comes before its note.
func (j *Journal) notes(ctx context.Context, d *doneLog) (map[uint64]uint64, error) {
	info, err := d.stream.Info(ctx)
	if err != nil {
		return nil, err
	}
	ident := streamIdent(info)
	noted := map[uint64]uint64{}
	err = j.eachOn(ctx, d.stream, d.subject, func(m *jetstream.RawStreamMsg) error {
		if h := m.Header.Get(hdrStream); h != "" && h != ident {
			j.limited.Warn("cluster: a done note of a stream made anew since is not read", zap.Uint64("note", m.Sequence))
			return nil
		}
		if err := decodeSeqs(m.Data, func(s uint64) {
			if s < m.Sequence {
				noted[s] = m.Sequence
			}
		}); err != nil {
			j.limited.Warn("cluster: a done note cannot be read; the records it names may be handed over again", zap.Uint64("note", m.Sequence))
		}
		return nil
	})
	return noted, err
}

// each calls f for every message s holds, in order, but anchors.
func (j *Journal) each(ctx context.Context, s jetstream.Stream, f func(*jetstream.RawStreamMsg) error) error {
	return j.eachOn(ctx, s, ">", func(m *jetstream.RawStreamMsg) error {
		if j.isAnchor(m.Subject) {
			return nil
		}
		return f(m)
	})
}

// eachOn calls f for every message s holds on subject, in order.
func (j *Journal) eachOn(ctx context.Context, s jetstream.Stream, subject string, f func(*jetstream.RawStreamMsg) error) error {
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	if info.State.Msgs == 0 {
		return nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f(m); err != nil {
			return err
		}
		seq = m.Sequence + 1
	}
	return nil
}

// opTimeout bounds a dead-letter call, which the store makes without a
// context.
const opTimeout = 10 * time.Second

// Keep records a dead letter in DLQ; its ID is its sequence there.
func (j *Journal) Keep(dl sender.DeadLetter) (string, error) {
	pieces, err := encodeRecord(&dl)
	if err != nil {
		return "", platform.Permanent(fmt.Errorf("cluster: dead letter: %w: %w", journal.ErrUnrecordable, err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	msg := nats.NewMsg(j.subject("dlq", dl.Request.Platform, dl.Request.Target.ID))
	ack, _, err := j.putRecord(ctx, "keep dead letter", msg, pieces, "")
	if err != nil {
		return "", err
	}
	return progressKey(ack.Sequence), nil
}

// Forget removes dead letters by the IDs Keep gave them, and their
// objects.
func (j *Journal) Forget(ids ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var errs []error
	for _, id := range ids {
		seq, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			continue // not one of ours
		}
		m, err := j.dlq.GetMsg(ctx, seq)
		switch {
		case err == nil:
		case errors.Is(err, jetstream.ErrMsgNotFound):
			continue
		default:
			errs = append(errs, err)
			continue
		}
		if err := j.dlq.DeleteMsg(ctx, seq); err != nil && !gone(err) {
			errs = append(errs, err)
			continue
		}
		j.dropBlob(m.Header.Get(hdrBlob))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: forget dead letters: %w", err)
	}
	return nil
}

// partitionsOf reads N from a destination with {{partition(N,...)}}.
func partitionsOf(dest string) (int, bool) {
	_, rest, ok := strings.Cut(dest, "{{partition(")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ",")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	return n, err == nil && n > 0
}

// subject returns kind.<bot>.<platform>.<chat> with the names escaped.
func (j *Journal) subject(kind, platformName, chat string) string {
	return kind + "." + j.cfg.Bot + "." + token(platformName) + "." + token(chat)
}

// token escapes s into one subject token: "%" and the bytes a token
// cannot hold (".", "*", ">", white space and control characters) become
// %XX; an empty s becomes "%".
func token(s string) string {
	if s == "" {
		return "%"
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if badTokenByte(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; badTokenByte(c) {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func badTokenByte(c byte) bool {
	return c == '.' || c == '*' || c == '>' || c == '%' || c <= ' ' || c == 0x7f
}

func validName(s string) bool {
	for _, r := range s {
		if !(r == '-' || r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return s != ""
}
