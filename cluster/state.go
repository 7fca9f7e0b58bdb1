package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/state"
)

// Buckets of state, for a bot named B (Config.Bot):
//
//	bucket sessions_B  sessions (engine.WithSessionStore)
//	bucket schedule_B  jobs' next runs and delayed sends (engine.WithScheduleStore)
//
// A key's bytes other than letters, digits, "-", "/" and "=" are escaped
// as _XX in the bucket. A per-key TTL is a message TTL, so a bucket has
// LimitMarkerTTL set (nats-server 2.11 or later); a removed key leaves a
// marker that is itself removed after markerTTL.

// markerTTL is how long the marker of a removed or expired key stays.
const markerTTL = time.Minute

// StateStore is a state.Store in a NATS JetStream key-value
// bucket: state that survives restarts and is shared by the processes of
// one bot. A revision is the stream sequence of the key's last write, so
// compare and swap is JetStream's expected last sequence per subject; a
// read goes to the stream's leader, so it sees every write acknowledged
// before it. A TTL is rounded up to a whole second (the server's unit).
// Create it with [NewSessionStore] or [NewScheduleStore]; it is safe for
// concurrent use.
//
// A bucket found missing (the server restarted without it, a new
// cluster) is created again, empty, by the call that finds it so, which
// is then made again once.
type StateStore struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	stream string // the bucket's stream, KV_<bucket>
	subj   string // its subject prefix, $KV.<bucket>.
	assets *assets
}

var _ state.Store = (*StateStore)(nil)

// NewSessionStore creates (or updates) the bucket of the bot's sessions,
// sessions_<Bot>, on nc's server and returns the store, for
// engine.WithSessionStore. Of cfg it uses Bot, Replicas and MaxBytes (a
// full bucket refuses writes: a session's Update then fails).
func NewSessionStore(ctx context.Context, nc *nats.Conn, cfg Config) (*StateStore, error) {
	return openState(ctx, nc, cfg, "sessions")
}

// NewScheduleStore creates (or updates) the bucket of the bot's schedule,
// schedule_<Bot>, on nc's server and returns the store, for
// engine.WithScheduleStore. Of cfg it uses Bot, Replicas and MaxBytes (a
// full bucket refuses new delayed sends: SendAt fails).
func NewScheduleStore(ctx context.Context, nc *nats.Conn, cfg Config) (*StateStore, error) {
	return openState(ctx, nc, cfg, "schedule")
}

func openState(ctx context.Context, nc *nats.Conn, cfg Config, kind string) (*StateStore, error) {
	if cfg.Bot == "" {
		cfg.Bot = DefaultBot
	}
	if !validName(cfg.Bot) {
		return nil, fmt.Errorf("cluster: bot name %q: want letters, digits, - and _", cfg.Bot)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cfg.Replicas = replicas(ctx, nc, cfg.Replicas)
	bucket := kind + "_" + cfg.Bot
	kc := jetstream.KeyValueConfig{
		Bucket:         bucket,
		History:        1,
		Storage:        jetstream.FileStorage,
		Replicas:       cfg.Replicas,
		MaxBytes:       max(cfg.MaxBytes, -1),
		LimitMarkerTTL: markerTTL,
	}
	kv, err := ensureKeyValue(ctx, js, kc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s bucket: %w", kind, err)
	}
	a := &assets{js: js}
	a.addKeyValue(kc)
	return &StateStore{nc: nc, js: js, kv: kv, stream: "KV_" + bucket, subj: "$KV." + bucket + ".", assets: a}, nil
}

// again makes op, and once more after creating the bucket again when op's
// error says it may be missing (see assets).
func (s *StateStore) again(ctx context.Context, op func() error) error {
	err := op()
	if err == nil || !missing(err) {
		return err
	}
	if _, rerr := s.assets.repair(ctx, err); rerr != nil {
		return err
	}
	return op()
}

// stateKey escapes an engine key into a bucket key.
func stateKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '-' || c == '/' || c == '=' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}

// engineKey undoes stateKey; ok is false for a key stateKey cannot make.
func engineKey(k string) (string, bool) {
	if !strings.Contains(k, "_") {
		return k, true
	}
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		if k[i] != '_' {
			b.WriteByte(k[i])
			continue
		}
		var c byte
		if i+2 >= len(k) || !unhex(k[i+1], &c, 16) || !unhex(k[i+2], &c, 1) {
			return "", false
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), true
}

func unhex(h byte, c *byte, weight byte) bool {
	switch {
	case '0' <= h && h <= '9':
		*c += (h - '0') * weight
	case 'A' <= h && h <= 'F':
		*c += (h - 'A' + 10) * weight
	default:
		return false
	}
	return true
}

// ttlOf rounds a TTL up to whole seconds.
func ttlOf(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return 0
	}
	return (ttl + time.Second - 1).Truncate(time.Second)
}

// fail wraps a NATS error, passing ctx's error on unwrapped: one that is
// neither a conflict nor a refusal of the value for what it is wraps
// journal.ErrOutage too — the store cannot be reached, or is full, and a
// handling whose access failed so runs again once the journal records
// again.
func fail(ctx context.Context, op, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if conflict(err) || unrecordable(err) {
		return fmt.Errorf("cluster: %s %q: %w", op, key, err)
	}
	return fmt.Errorf("cluster: %s %q: %w: %w", op, key, journal.ErrOutage, err)
}

// conflict reports whether err is JetStream's refusal of an expected last
// sequence.
func conflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
		errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Get returns key's value and revision, read from the bucket stream's
// leader (see state.Store).
func (s *StateStore) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	var v []byte
	var rev uint64
	err := s.again(ctx, func() (err error) { v, rev, err = s.get(ctx, key); return err })
	return v, rev, err
}

func (s *StateStore) get(ctx context.Context, key string) ([]byte, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	// Not kv.Get: a KV bucket allows direct gets, which any replica
	// answers, one that has not seen the last write too.
	req, _ := json.Marshal(struct {
		LastBySubj string `json:"last_by_subj"`
	}{s.subj + stateKey(key)})
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	m, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+s.stream, req)
	if err != nil {
		return nil, 0, fail(ctx, "get", key, err)
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Seq    uint64 `json:"seq"`
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, 0, fail(ctx, "get", key, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, 0, fmt.Errorf("cluster: %q: %w", key, state.ErrNotFound)
	case resp.Error != nil:
		return nil, 0, fail(ctx, "get", key, resp.Error)
	case resp.Message == nil:
		return nil, 0, fail(ctx, "get", key, jetstream.ErrInvalidJetStreamResponse)
	}
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err != nil {
			return nil, 0, fail(ctx, "get", key, err)
		}
		if h.Get(jetstream.MarkerReasonHeader) != "" || h.Get("KV-Operation") != "" {
			// A delete or purge marker, or one the server left for an
			// expired key.
			return nil, 0, fmt.Errorf("cluster: %q: %w", key, state.ErrNotFound)
		}
	}
	return resp.Message.Data, resp.Message.Seq, nil
}

// defaultTimeout bounds a request made with a context without deadline,
// as the jetstream package's calls are.
const defaultTimeout = 5 * time.Second

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, defaultTimeout)
}

// Create sets key if it has no value (see state.Store).
func (s *StateStore) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	var rev uint64
	err := s.again(ctx, func() (err error) { rev, err = s.create(ctx, key, value, ttl); return err })
	return rev, err
}

func (s *StateStore) create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var opts []jetstream.KVCreateOpt
	if ttl = ttlOf(ttl); ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	rev, err := s.kv.Create(ctx, stateKey(key), value, opts...)
	switch {
	case err == nil:
		return rev, nil
	case conflict(err):
		return 0, fmt.Errorf("cluster: %q exists: %w", key, state.ErrConflict)
	}
	return 0, fail(ctx, "create", key, err)
}

// Update sets key if its revision is still rev (see state.Store).
func (s *StateStore) Update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	var next uint64
	err := s.again(ctx, func() (err error) { next, err = s.update(ctx, key, value, rev, ttl); return err })
	return next, err
}

func (s *StateStore) update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if rev == 0 {
		return 0, fmt.Errorf("cluster: %q: update of revision 0: %w", key, state.ErrConflict)
	}
	// Not kv.Update, which drops a TTL: the same publish, with one.
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(rev)}
	if ttl = ttlOf(ttl); ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	ack, err := s.js.Publish(ctx, s.subj+stateKey(key), value, opts...)
	switch {
	case err == nil:
		return ack.Sequence, nil
	case conflict(err):
		return 0, fmt.Errorf("cluster: %q: revision %d is not the last: %w", key, rev, state.ErrConflict)
	}
	return 0, fail(ctx, "update", key, err)
}

// Delete removes key's value (see state.Store): a purge, whose
// marker goes after markerTTL.
func (s *StateStore) Delete(ctx context.Context, key string, rev uint64) error {
	return s.again(ctx, func() error { return s.delete(ctx, key, rev) })
}

func (s *StateStore) delete(ctx context.Context, key string, rev uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	opts := []jetstream.KVDeleteOpt{jetstream.PurgeTTL(markerTTL)}
	if rev != 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	err := s.kv.Purge(ctx, stateKey(key), opts...)
	switch {
	case err == nil:
		return nil
	case conflict(err):
		return fmt.Errorf("cluster: %q: revision %d is not the last: %w", key, rev, state.ErrConflict)
	}
	return fail(ctx, "delete", key, err)
}

// Keys returns the keys with a value that begin with prefix (see
// state.Store). It reads the whole bucket's keys.
func (s *StateStore) Keys(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	err := s.again(ctx, func() (err error) { keys, err = s.keys(ctx, prefix); return err })
	return keys, err
}

func (s *StateStore) keys(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	l, err := s.kv.ListKeys(lctx)
	if err != nil {
		return nil, fail(ctx, "list", prefix, err)
	}
	seen := map[string]bool{}
	var keys []string
	for k := range l.Keys() { // closed when all are listed, or lctx ends
		key, ok := engineKey(k)
		if ok && strings.HasPrefix(key, prefix) && !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	if err := lctx.Err(); err != nil {
		return nil, fail(ctx, "list", prefix, err)
	}
	return keys, nil
}
