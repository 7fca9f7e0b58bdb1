package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Defaults for the zero fields of [SharedConfig].
const (
	DefaultHeartbeat = time.Second
	DefaultMemberTTL = 5 * time.Second
	DefaultPinnedTTL = 10 * time.Second
	DefaultLeaseTTL  = 10 * time.Second
	DefaultAckWait   = 2 * time.Minute
)

// pinGroup is the priority group of the pinned partition consumers.
const pinGroup = "herald"

// SharedConfig configures [OpenShared]. Its zero value is valid.
type SharedConfig struct {
	Config

	// Node names this process among the bot's; the names of the live
	// processes must differ. Empty means the host name and the process
	// ID.
	Node string

	// Heartbeat is how often the process says it is alive, and MemberTTL
	// how long after its last heartbeat the others count it gone and
	// take its partitions. 0 means 1 s and 5 s.
	Heartbeat, MemberTTL time.Duration

	// PinnedTTL is how long a partition stays with a process that stopped
	// pulling it (it died) before another may take it. 0 means 10 s.
	PinnedTTL time.Duration

	// LeaseTTL is how long a gateway's lease on a platform account lasts
	// unless renewed (every LeaseTTL/3): another process leads the
	// account at most that long after the gateway died. 0 means 10 s.
	LeaseTTL time.Duration

	// AckWait is how long an event or a send may stay unacknowledged
	// before the server offers it again; the process says "in progress"
	// for those it still works on. 0 means 2 minutes.
	AckWait time.Duration

	// Logger receives the moves of partitions and leases. Nil means none.
	Logger *zap.Logger
}

// Shared is a journal shared by the processes of one bot: given to
// engine.WithJournal, it makes the engine one member of the bot (see
// journal.Journal). Each chat is handled by one process at a time, in
// order, so conversations work across processes; each platform
// account's sends are made by one process, its gateway, so the
// platform's rate limits hold across all of them; and only the gateway
// runs the adapter's connection (one long poll, one WebSocket).
//
// IN is split into Partitions by chat (a subject transform, fixed when IN
// is created). The live members, known by heartbeats in a bucket with a
// TTL, share the partitions by rendezvous hashing, so a member joining or
// leaving moves about 1/N of them; each partition has one durable pull
// consumer pinned to one member at a time (PriorityPolicy pinned_client),
// the safety net while two members disagree. A member taking a partition
// from a member that is gone first resets its consumer to the ack floor,
// so the events the other left unacknowledged come first, in order.
//
// Each platform account has a gateway: the member holding its lease (a
// key with a TTL in a bucket, renewed by compare-and-swap). It runs the
// adapter's connection and consumes the account's sends from OUT, making
// them through its dispatcher and sender chain, so the platform's rate
// limits hold for the whole bot, and answers each send's outcome to the
// member that made it. A gateway that cannot renew its lease stops
// sending at once.
//
// Create it with [OpenShared]; it is safe for concurrent use.
type Shared struct {
	*Journal
	cfg     SharedConfig
	nc      *nats.Conn
	log     *zap.Logger
	warn    *ratelog.Logger // failures, each logged at most once a minute
	members jetstream.KeyValue
	claims  jetstream.KeyValue // partition → the member that has it
	leases  jetstream.KeyValue
	results string // the subject this member hears outcomes on

	m atomic.Pointer[journal.Member]
	// pending holds the Done of each send this member appended whose
	// outcome the gateway has not answered yet, by the send's key.
	pmu     sync.Mutex
	pending map[string]func(platform.SendResult, error)

	// inAnchored and outAnchored count this member's acknowledgements on
	// IN and OUT, for their anchors (see anchor.go).
	inAnchored, outAnchored anchored

	takeovers, redeliveries, skipped atomic.Uint64
	owned                            atomic.Int64
	sendSeq                          atomic.Uint64 // numbers this member's sends, for their keys
	leading                          sync.Map      // adapter name → whether this member holds its lease
}

var _ journal.Journal = (*Shared)(nil)

// withDefaults returns c with each setting left unset given its default;
// the journal's Logger is the member's unless set.
func (c SharedConfig) withDefaults() SharedConfig {
	if c.Node == "" {
		host, _ := os.Hostname()
		c.Node = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&c.Heartbeat, DefaultHeartbeat}, {&c.MemberTTL, DefaultMemberTTL}, {&c.PinnedTTL, DefaultPinnedTTL},
		{&c.LeaseTTL, DefaultLeaseTTL}, {&c.AckWait, DefaultAckWait},
	} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Config.Logger == nil {
		c.Config.Logger = c.Logger
	}
	return c
}

// OpenShared opens the journal (see [Open]) and the buckets the members
// share, and returns it as a Shared.
func OpenShared(ctx context.Context, nc *nats.Conn, cfg SharedConfig) (*Shared, error) {
	cfg = cfg.withDefaults()
	log := cfg.Logger
	j, err := Open(ctx, nc, cfg.Config)
	if err != nil {
		return nil, err
	}
	if err := j.settleNotes(ctx); err != nil {
		return nil, err
	}
	log = log.With(zap.String("node", cfg.Node))
	s := &Shared{Journal: j, cfg: cfg, nc: nc, log: log, warn: ratelog.New(log, time.Minute),
		results: "herald." + j.cfg.Bot + ".result." + token(cfg.Node), pending: map[string]func(platform.SendResult, error){}}
	s.inAnchored.stream, s.inAnchored.subject = j.in, j.inAnchor
	s.outAnchored.stream, s.outAnchored.subject = j.out, j.outAnchor
	// Memory-backed: heartbeats go on while the file store refuses writes
	// (its disk full). A server restarted without it has it created
	// again by the first heartbeat that fails (see assets).
	s.members, err = j.keyValue(ctx, jetstream.KeyValueConfig{
		Bucket: "members_" + j.cfg.Bot, TTL: cfg.MemberTTL, Storage: jetstream.MemoryStorage, Replicas: j.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: members bucket: %w", err)
	}
	s.claims, err = j.keyValue(ctx, jetstream.KeyValueConfig{
		Bucket: "partitions_" + j.cfg.Bot, Storage: jetstream.FileStorage, Replicas: j.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: partitions bucket: %w", err)
	}
	s.leases, err = j.keyValue(ctx, jetstream.KeyValueConfig{
		Bucket: "leases_" + j.cfg.Bot, TTL: cfg.LeaseTTL, Storage: jetstream.FileStorage, Replicas: j.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: leases bucket: %w", err)
	}
	return s, nil
}

// beatTimeout bounds the requests of one step of a beat of the
// membership (a heartbeat, the members' reading, the leases' renewals): a
// third of the shorter of the member's and the lease's TTL, or a beat if
// that is longer. A renewal cut off so is made again at the next beat,
// within two thirds of the lease's TTL, before the lease's fence closes.
func (s *Shared) beatTimeout() time.Duration {
	return max(s.cfg.Heartbeat, min(s.cfg.MemberTTL, s.cfg.LeaseTTL)/3)
}

// repair creates again the streams and buckets the members need, if err
// says one may be missing (see assets), logging what it did. It has a
// beat's time of its own: err may be the end of the caller's.
func (s *Shared) repair(ctx context.Context, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.beatTimeout())
	defer cancel()
	created, rerr := s.assets.repair(ctx, err)
	switch {
	case rerr != nil && ctx.Err() == nil:
		s.warn.Warn("cluster: cannot create again the streams and buckets that are missing", zap.Error(rerr))
	case created:
		s.log.Warn("cluster: created again the streams and buckets that were missing (the server restarted without them, or they were deleted)", zap.NamedError("cause", err))
	}
}

// SharedStats counts what a member did in its cluster.
type SharedStats struct {
	// Partitions is how many partitions this member owns now.
	Partitions int
	// Leading lists the platform accounts whose lease it holds now.
	Leading []string
	// Takeovers counts the partitions it took from a member that was
	// gone or that handed them over with events in hand (conversations
	// waiting for their users), and the leases it took while other
	// members were live: from a gateway gone, or one that gave its lease
	// up as it left (the lease does not tell the two apart).
	Takeovers uint64
	// Redeliveries counts events and sends it got that the server had
	// delivered before (to a member that died, or to this one before a
	// restart).
	Redeliveries uint64
	// Skipped counts what it found done already: events the platform gave
	// again (recorded before, within the duplicate window) and sends
	// offered again that their mark says were delivered (by a gateway
	// that died before its acknowledgement).
	Skipped uint64
}

// Stats returns the member's figures.
func (s *Shared) Stats() SharedStats {
	st := SharedStats{Partitions: int(s.owned.Load()), Takeovers: s.takeovers.Load(), Redeliveries: s.redeliveries.Load(), Skipped: s.skipped.Load()}
	s.leading.Range(func(k, v any) bool {
		if v.(bool) {
			st.Leading = append(st.Leading, k.(string))
		}
		return true
	})
	slices.Sort(st.Leading)
	return st
}

// Attach binds the journal to its engine (see journal.Journal).
func (s *Shared) Attach(m journal.Member) error {
	if m == nil {
		return errors.New("cluster: Attach: nil member")
	}
	if !s.m.CompareAndSwap(nil, &m) {
		return journal.ErrAttached
	}
	return nil
}

func (s *Shared) member() (journal.Member, error) {
	if p := s.m.Load(); p != nil {
		return *p, nil
	}
	return nil, journal.ErrNotAttached
}

// AppendEvent records ev in IN, for the member owning its partition.
func (s *Shared) AppendEvent(ctx context.Context, ev platform.Event) (bool, error) {
	if _, err := s.member(); err != nil {
		return false, err
	}
	_, dup, err := s.Journal.recordEvent(ctx, ev, nil) // its partition's consumer removes it
	if dup {
		s.skipped.Add(1)
	}
	return dup, err
}

// AppendEvents records evs in IN as AppendEvent records each, with one
// wait for all (see journal.EventBatcher and Journal.RecordEvents: a
// chat's events in order, one refused stopping its chat's later ones).
// The events after the first not written that were written all the same
// are their partitions' to handle; the platform's next delivery of them is
// a duplicate, by their IDs — so a batch with an event without one is
// appended one by one, stopping at the first not written.
func (s *Shared) AppendEvents(ctx context.Context, evs []platform.Event) ([]bool, error) {
	if _, err := s.member(); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(evs, func(ev platform.Event) bool { return ev.ID == "" }) {
		return journal.AppendEach(ctx, s, evs)
	}
	dups := make([]bool, 0, len(evs))
	for _, r := range s.Journal.recordEvents(ctx, evs, nil) {
		if r.Err != nil {
			return dups, r.Err
		}
		if r.Duplicate {
			s.skipped.Add(1)
		}
		dups = append(dups, r.Duplicate)
	}
	return dups, nil
}

// RelaysSends reports that the member's sends are made by the gateway of
// their account, through OUT (see journal.Relayer).
func (s *Shared) RelaysSends() bool { return true }

// resultHeaders name, on a send in OUT, where its outcome goes.
const (
	hdrReply = "Herald-Reply"
	hdrKey   = "Herald-Key"
)

// AppendSend records a send in OUT, for the gateway of its account, which
// answers its outcome to this member, under a key of the send's own.
func (s *Shared) AppendSend(ctx context.Context, snd journal.Send) (journal.Appended, error) {
	if _, err := s.member(); err != nil {
		return journal.Appended{}, err
	}
	if err := s.health.gate(); err != nil {
		return journal.Appended{}, err
	}
	if snd.Repeat && snd.ID != "" {
		if m, ok, err := s.mark(ctx, snd.ID); err != nil {
			return journal.Appended{}, err
		} else if ok {
			return m.appended(), nil
		}
	}
	pieces, err := encodeRecord(&sendData{ID: snd.ID, Request: snd.Request})
	if err != nil {
		return journal.Appended{}, platform.Permanent(fmt.Errorf("cluster: send: %w: %w", journal.ErrUnrecordable, err))
	}
	key := s.cfg.Node + "/" + strconv.FormatUint(s.sendSeq.Add(1), 10)
	var id string
	if snd.ID != "" {
		id = "send:" + snd.ID
	}
	msg := sendMsg(s.subject("out", snd.Request.Platform, snd.Request.Target.ID), id, snd, hdrReply, s.results, hdrKey, key)
	if snd.Done != nil {
		// Before the publish: the gateway may answer before it returns.
		s.pmu.Lock()
		s.pending[key] = snd.Done
		s.pmu.Unlock()
	}
	ack, _, err := s.putRecord(ctx, "record send", msg, pieces, "") // its Msg-Id set
	if err != nil || ack.Duplicate {
		s.takeResult(key)
	}
	if err != nil {
		return journal.Appended{}, err
	}
	if ack.Duplicate {
		return s.duplicate(ctx, s.out, ack.Sequence, snd.ID), nil
	}
	return journal.Appended{}, nil
}

// takeResult removes and returns the Done waiting under key, or nil.
func (s *Shared) takeResult(key string) func(platform.SendResult, error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	done := s.pending[key]
	delete(s.pending, key)
	return done
}

// unheard resolves the sends whose outcome this member will no longer
// hear: it leaves.
func (s *Shared) unheard() {
	s.pmu.Lock()
	open := s.pending
	s.pending = map[string]func(platform.SendResult, error){}
	s.pmu.Unlock()
	for _, done := range open {
		done(platform.SendResult{}, journal.ErrUnheard)
	}
}

// Recover returns the journal as the dead letters' backend, with the
// letters it keeps: the members take up events and sends through their
// consumers (see journal.Journal). It removes the objects of large
// records that no record names (a process died between writing the two).
func (s *Shared) Recover(ctx context.Context) (sender.DeadLetterBackend, []sender.DeadLetter, error) {
	if _, err := s.member(); err != nil {
		return nil, nil, err
	}
	letters, err := s.deadLetters(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := s.sweepBlobs(ctx, func() (map[string]bool, error) { return s.blobRefs(ctx) }); err != nil {
		s.warn.Warn("cluster: the objects no record names were not removed", zap.Error(err))
	}
	return s.Journal, letters, nil
}

// outcome is a send's outcome as the gateway answers it.
type outcome struct {
	Key    string              `json:"key"`
	Result platform.SendResult `json:"result"`
	wireError
}

// Join takes part in the cluster until ctx ends (see journal.Journal).
func (s *Shared) Join(ctx context.Context) error {
	m, err := s.member()
	if err != nil {
		return err
	}
	defer s.unheard()
	sub, err := s.nc.Subscribe(s.results, func(msg *nats.Msg) {
		var o outcome
		if json.Unmarshal(msg.Data, &o) != nil {
			return
		}
		if done := s.takeResult(o.Key); done != nil {
			done(o.Result, decodeError(o.wireError))
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: results: %w", err)
	}
	defer sub.Unsubscribe()

	run := &membership{s: s, m: m, parts: map[int]*partition{}, leads: map[string]*lead{}, handing: map[int]bool{}}
	hctx, stopBeating := context.WithCancel(context.Background())
	beating := make(chan struct{})
	anchoring := make(chan struct{})
	go func() {
		defer close(beating)
		run.heartbeat(hctx)
	}()
	go func() {
		defer close(anchoring)
		run.anchor(hctx)
	}()
	listening := run.listen(ctx)
	err = run.loop(ctx)
	// Leave: stop taking, finish what was taken, still alive and holding
	// the leases so that nobody takes over meanwhile, then let go. The
	// member bounds the wait by its own shutdown timeout.
	run.stopTaking()
	kctx, stopKeeping := context.WithCancel(context.Background())
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		run.keepAlive(kctx)
	}()
	if derr := m.Drain(context.Background()); derr != nil {
		s.warn.Warn("cluster: left with work unfinished; the next owners take it up", zap.Error(derr))
	}
	stopKeeping()
	<-kept
	stopBeating()
	<-beating
	<-anchoring
	run.letGo()
	listening.Wait()
	return err
}

// membership is one Join's state.
type membership struct {
	s     *Shared
	m     journal.Member
	parts map[int]*partition
	leads map[string]*lead
	live  []string // the members last seen, sorted
	// releasing counts the partitions being handed over; handing lists
	// them.
	releasing sync.WaitGroup
	mu        sync.Mutex
	handing   map[int]bool
}

// listen runs, until ctx ends, the listeners of the member's adapters
// that take events in at a listener of their own (a webhook): in every
// process, so the platform may deliver to any of them.
func (r *membership) listen(ctx context.Context) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, name := range r.m.Adapters() {
		wg.Go(func() { _ = r.m.Listen(ctx, name) })
	}
	return &wg
}

// loop keeps the member alive, its partitions and leases current, until
// ctx ends.
func (r *membership) loop(ctx context.Context) error {
	s := r.s
	beat := time.NewTicker(s.cfg.Heartbeat) // heartbeat: members, partitions and leases looked at each beat
	defer beat.Stop()
	for {
		// The members' reading and the leases' renewals are each bounded
		// (beatTimeout): a request the server lost (it restarted
		// meanwhile) does not hold the renewals back until the leases run
		// out.
		bctx, cancel := context.WithTimeout(ctx, s.beatTimeout())
		live, err := r.liveMembers(bctx)
		if err != nil && ctx.Err() == nil {
			s.warn.Warn("cluster: cannot read the members", zap.Error(err))
			s.repair(bctx, err)
		}
		cancel()
		bctx, cancel = context.WithTimeout(ctx, s.beatTimeout())
		r.renewLeases(bctx, true)
		cancel()
		if err == nil {
			r.assign(ctx, live)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-beat.C:
		}
	}
}

// heartbeat says the member is alive every Heartbeat until ctx ends, on a
// beat of its own: a slow takeover never makes it look gone.
func (r *membership) heartbeat(ctx context.Context) {
	beat := time.NewTicker(r.s.cfg.Heartbeat) // heartbeat: the member's own
	defer beat.Stop()
	for {
		bctx, cancel := context.WithTimeout(ctx, r.s.beatTimeout())
		if _, err := r.s.members.Put(bctx, token(r.s.cfg.Node), []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil && ctx.Err() == nil {
			r.s.warn.Warn("cluster: heartbeat failed", zap.Error(err))
			r.s.repair(bctx, err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
		}
	}
}

// keepAlive renews the leases held, taking nothing, until ctx ends: the
// member is leaving.
func (r *membership) keepAlive(ctx context.Context) {
	beat := time.NewTicker(r.s.cfg.Heartbeat) // heartbeat: the leases' renewals while leaving
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
		}
		r.renewLeases(ctx, false)
	}
}

// memberKeys returns the keys of the members bucket kv, sorted, once each.
// It lists them with ListKeys, which ends with ctx: KeyValue.Keys waits,
// past its context, for the end of the keys it was told of, which never
// comes when the last of them runs out (a member's heartbeat expiring, as
// a dead member's does) between the start of the listing and its delivery:
// a member's loop stopped there for good (seen once, in
// TestSharedMemberDies: 9 minutes in Keys), its partitions no longer
// following the members and its Join never returning.
func memberKeys(ctx context.Context, kv jetstream.KeyValue) ([]string, error) {
	l, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	for k := range l.Keys() { // closed when all are listed, or ctx ends
		keys = append(keys, k)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

func (r *membership) liveMembers(ctx context.Context) ([]string, error) {
	keys, err := memberKeys(ctx, r.s.members)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(keys, token(r.s.cfg.Node)) {
		keys = append(keys, token(r.s.cfg.Node))
	}
	// A listing taken while a member's heartbeat replaces its last one
	// may miss it: a member seen before and not listed is asked for. A
	// bucket created again (the server restarted without it) has not
	// heard every member yet: those seen before are taken as alive for a
	// member's TTL from its creation, so that nobody takes over from
	// members that are alive.
	young := -1
	for _, m := range r.live {
		if slices.Contains(keys, m) {
			continue
		}
		if _, err := r.s.members.Get(ctx, m); err == nil {
			keys = append(keys, m)
			continue
		}
		if young < 0 {
			young = 0
			if st, err := r.s.js.Stream(ctx, "KV_members_"+r.s.Journal.cfg.Bot); err == nil && time.Since(st.CachedInfo().Created) < r.s.cfg.MemberTTL {
				young = 1
			}
		}
		if young == 1 {
			keys = append(keys, m)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// owner returns the member that owns partition p among live: rendezvous
// hashing, so a change of members moves only the partitions of the
// members that came or went.
func owner(live []string, p int) string {
	var best string
	var bestScore uint64
	for _, m := range live {
		h := fnv.New64a()
		h.Write([]byte(m))
		if sc := mix64(h.Sum64() ^ (uint64(p)+1)*0x9e3779b97f4a7c15); best == "" || sc > bestScore {
			best, bestScore = m, sc
		}
	}
	return best
}

// mix64 is splitmix64's finalizer: every input bit moves every output
// bit, so scores of similar names are not ordered alike.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// assign takes the partitions live gives this member and gives up the
// others.
func (r *membership) assign(ctx context.Context, live []string) {
	s := r.s
	me := token(s.cfg.Node)
	r.live = live
	var gained, lost []int
	for p := 0; p < s.Journal.cfg.Partitions; p++ {
		mine := owner(live, p) == me
		if part, ok := r.parts[p]; ok && mine && part.lost() {
			// Its consumer is gone (IN created again, or the server lost
			// it): taken again below, the claim still this member's.
			s.warn.Warn("cluster: a partition's consumer is gone; taking the partition again", zap.Int("partition", p))
			part.halt()
			delete(r.parts, p)
		}
		_, have := r.parts[p]
		switch {
		case mine && !have:
			part, err := r.take(ctx, p)
			if err != nil {
				s.warn.Warn("cluster: cannot take a partition", zap.Int("partition", p), zap.Error(err))
				s.repair(ctx, err)
				continue
			}
			if part == nil {
				continue // still being handed over: again at the next beat
			}
			r.parts[p] = part
			gained = append(gained, p)
		case !mine && have:
			part := r.parts[p]
			delete(r.parts, p)
			lost = append(lost, p)
			r.mu.Lock()
			r.handing[p] = true
			r.mu.Unlock()
			r.releasing.Go(func() { // hands it over once its events are done
				rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				part.release(rctx)
				r.mu.Lock()
				delete(r.handing, p)
				r.mu.Unlock()
			})
		}
	}
	s.owned.Store(int64(len(r.parts)))
	if len(gained)+len(lost) > 0 {
		s.log.Info("cluster: partitions moved", zap.Strings("members", live), zap.Ints("gained", gained),
			zap.Ints("lost", lost), zap.Int("owned", len(r.parts)))
	}
}

// stopTaking stops every partition and OUT consumer: nothing new is taken.
func (r *membership) stopTaking() {
	for _, p := range r.parts {
		p.halt()
	}
	for _, l := range r.leads {
		l.stopTaking()
	}
}

// letGo unpins the partitions, gives up the leases and the membership, so
// that the others take them at once.
func (r *membership) letGo() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The member drained what it took before (Join): the events its
	// partitions still hold wait for an answer it no longer takes (a
	// conversation), and are handed over at once, not waited for — while
	// they were, the leases below stayed here and nobody sent. A handling
	// still running (the drain's bound ran out) is waited for a little.
	for p, part := range r.parts {
		part.release(ctx)
		delete(r.parts, p)
	}
	r.releasing.Wait()
	r.s.owned.Store(0)
	for name, l := range r.leads {
		l.release(ctx)
		delete(r.leads, name)
		r.s.leading.Store(name, false)
	}
	_ = r.s.members.Delete(ctx, token(r.s.cfg.Node))
}
