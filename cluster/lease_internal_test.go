package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// A gateway's fence: its sends and its connection go on only while its
// lease was renewed within two thirds of the TTL, it is connected to NATS,
// and it is neither leaving nor stopped — so a gateway paused past that
// (GC, a stopped VM) sends nothing once it wakes, before it even learns
// that another took the lease.
func TestLeaseFence(t *testing.T) {
	parallel(t, 0)
	nc := connectEmbedded(t)
	s, err := OpenShared(context.Background(), nc, SharedConfig{LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	newLead := func(renewed time.Time) *lead {
		l := &lead{s: s}
		l.conn, l.stopConn = context.WithCancel(context.Background())
		l.renewed.Store(renewed.UnixNano())
		t.Cleanup(l.stopConn)
		return l
	}
	if err := newLead(time.Now()).valid(); err != nil {
		t.Fatalf("a lease just renewed: %v", err)
	}
	if err := newLead(time.Now().Add(-1900 * time.Millisecond)).valid(); err != nil {
		t.Fatalf("a lease renewed within 2/3 of its TTL: %v", err)
	}
	if err := newLead(time.Now().Add(-2100 * time.Millisecond)).valid(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a lease older than 2/3 of its TTL (the gateway was paused): %v; want ErrLeaseLost", err)
	}
	l := newLead(time.Now())
	l.leaving.Store(true)
	if err := l.valid(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a leaving gateway: %v; want ErrLeaseLost", err)
	}
	l = newLead(time.Now())
	l.stopConn()
	if err := l.valid(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a stopped gateway: %v; want ErrLeaseLost", err)
	}
	l = newLead(time.Now())
	nc.Close()
	if err := l.valid(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a gateway cut off from NATS: %v; want ErrLeaseLost", err)
	}
}

// slowKV answers every Update late, as a paused gateway reads the reply
// of a renewal it sent before the pause.
type slowKV struct {
	jetstream.KeyValue
	delay time.Duration
}

func (kv slowKV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	rev, err := kv.KeyValue.Update(ctx, key, value, last)
	time.Sleep(kv.delay)
	return rev, err
}

// oneAdapter is a cluster member with one adapter, for renewLeases.
type oneAdapter struct{ journal.Member }

func (oneAdapter) Adapters() []string { return []string{"tg"} }

// Lead holds the connection of "tg", which makes nothing, until it ends.
func (oneAdapter) Lead(ctx, conn context.Context, _ string) error {
	<-ctx.Done()
	<-conn.Done()
	return nil
}

// sharedMember opens a Shared journal of node "me" on nc with cfg, attaches
// m, and returns the journal and m's membership, whose leads are released
// when the test ends.
func sharedMember(t *testing.T, nc *nats.Conn, cfg SharedConfig, m journal.Member) (*Shared, *membership) {
	t.Helper()
	cfg.Node = "me"
	s, err := OpenShared(context.Background(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Attach(m); err != nil {
		t.Fatal(err)
	}
	r := &membership{s: s, m: m, leads: map[string]*lead{}}
	t.Cleanup(func() {
		for _, l := range r.leads {
			l.release(context.Background())
		}
	})
	return s, r
}

// takeLease has r take the lease of "tg" and returns its lead.
func takeLease(t *testing.T, r *membership) *lead {
	t.Helper()
	r.renewLeases(context.Background(), true)
	l := r.leads["tg"]
	if l == nil {
		t.Fatal("the lease was not taken")
	}
	return l
}

// sendText appends a send of text to chat 1 of "tg" to s.
func sendText(t *testing.T, s *Shared, text string) {
	t.Helper()
	if _, err := s.AppendSend(context.Background(), journal.Send{Request: platform.SendRequest{Platform: "tg", Target: platform.Chat{ID: "1"},
		Message: platform.TextMessage(text)}}); err != nil {
		t.Fatal(err)
	}
}

// A renewal counts from when it was asked for: the lease's TTL runs from
// the server's write, so a reply read late must not make it look fresh.
func TestLeaseRenewalCountsFromTheRequest(t *testing.T) {
	parallel(t, 0)
	nc := connectEmbedded(t)
	ctx := context.Background()
	s, err := OpenShared(ctx, nc, SharedConfig{LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.leases.Create(ctx, token("tg"), []byte("me"))
	if err != nil {
		t.Fatal(err)
	}
	s.leases = slowKV{KeyValue: s.leases, delay: 500 * time.Millisecond}
	l := &lead{s: s, name: "tg", rev: rev}
	l.conn, l.stopConn = context.WithCancel(ctx)
	defer l.stopConn()
	l.renewed.Store(time.Now().Add(-2 * time.Second).UnixNano()) // due for renewal
	r := &membership{s: s, m: oneAdapter{}, leads: map[string]*lead{"tg": l}}
	asked := time.Now()
	r.renewLeases(ctx, false)
	if l.rev == rev {
		t.Fatal("the lease was not renewed")
	}
	if got := time.Unix(0, l.renewed.Load()); got.Sub(asked) >= 250*time.Millisecond {
		t.Fatalf("renewal stamped %v after it was asked for; want when asked (the reply came 500ms late)", got.Sub(asked))
	}
}

// openEmbedded opens a journal with the default Config on an embedded
// server of t's own, and returns it with a context for t's calls.
func openEmbedded(t *testing.T) (context.Context, *Journal) {
	t.Helper()
	nc := connectEmbedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	j, err := Open(ctx, nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, j
}

// connectEmbedded starts a NATS server in the test, its store in a
// directory of the test's, and connects to it; both stop with the test.
func connectEmbedded(t *testing.T) *nats.Conn {
	t.Helper()
	srv, err := embedded.Start(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// makeCounter is a member whose adapter "tg" makes nothing and counts the
// sends handed to it.
type makeCounter struct {
	oneAdapter
	made atomic.Int32
}

func (m *makeCounter) Make(out journal.Outgoing) error {
	if out.Fence != nil && out.Fence() != nil {
		return nil
	}
	m.made.Add(1)
	if out.Record != nil {
		_ = out.Record.Done(context.Background(), nil)
	}
	return nil
}

// A gateway whose lease goes unrenewed past its fence stops taking sends
// from OUT at once — sends a next gateway would otherwise share with it,
// out of order — and leads again, from the consumer reset, once renewed.
func TestUnsureGatewayStopsTaking(t *testing.T) {
	parallel(t, 0)
	ctx := context.Background()
	m := &makeCounter{}
	s, r := sharedMember(t, connectEmbedded(t), SharedConfig{LeaseTTL: 900 * time.Millisecond}, m)
	l := takeLease(t, r)
	sendText(t, s, "while sure")
	waitUntil(t, "the send made", func() bool { return m.made.Load() == 1 })
	// Not renewed: past two thirds of the TTL the gateway stops taking.
	waitUntil(t, "the unsure gateway to stop taking", l.lost)
	sendText(t, s, "while unsure")
	time.Sleep(100 * time.Millisecond) // a send taken would be handed over within it
	if n := m.made.Load(); n != 1 {
		t.Fatalf("%d sends handed over; want the first only (the gateway stopped taking)", n)
	}
	// Renewed (it is still the holder's): it leads again and makes it.
	r.renewLeases(ctx, true)
	waitUntil(t, "the send left to be made", func() bool { return m.made.Load() >= 2 })
	time.Sleep(100 * time.Millisecond)
	if n := m.made.Load(); n != 2 {
		t.Fatalf("%d sends made; want 2 (the one made before is not offered again)", n)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// orderMaker is a member whose adapter "tg" keeps the texts of the sends
// it makes, in order; fenceFirst, if set, runs as the first send's fence
// is checked.
type orderMaker struct {
	oneAdapter
	mu         sync.Mutex
	made       []string
	fenceFirst func()
}

func (m *orderMaker) Make(out journal.Outgoing) error {
	m.mu.Lock()
	first := m.fenceFirst
	m.fenceFirst = nil
	m.mu.Unlock()
	if first != nil {
		first()
	}
	if out.Fence != nil && out.Fence() != nil {
		return nil // left in OUT for the next gateway, unacknowledged
	}
	m.mu.Lock()
	m.made = append(m.made, out.Request.Message.Text)
	m.mu.Unlock()
	if out.Record != nil {
		_ = out.Record.Done(context.Background(), nil)
	}
	return nil
}

func (m *orderMaker) Made() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.made)
}

// A send whose fence fails while the lease is unsure for a moment is not
// overtaken by the chat's next send once the lease is renewed: the fence
// stays closed for the rest of that lead, the gateway stops taking sends,
// and leads again from the consumer reset, which makes both in order and
// soon (not after AckWait).
func TestFencedSendKeepsOrder(t *testing.T) {
	parallel(t, 0)
	ctx := context.Background()
	m := &orderMaker{}
	// A long TTL: the connection's own fence (a timer) stays out of it.
	s, r := sharedMember(t, connectEmbedded(t), SharedConfig{LeaseTTL: time.Minute}, m)
	l := takeLease(t, r)
	m.mu.Lock()
	m.fenceFirst = func() {
		// The renewal is late as the first send is checked, and comes
		// right after.
		renewed := l.renewed.Load()
		l.renewed.Store(time.Now().Add(-time.Hour).UnixNano())
		if l.sure() == nil {
			t.Error("the fence held with the lease unsure")
		}
		l.renewed.Store(renewed)
	}
	m.mu.Unlock()
	sendText(t, s, "1")
	sendText(t, s, "2")
	waitUntil(t, "the gateway to stop taking", l.lost)
	if got := m.Made(); len(got) != 0 {
		t.Fatalf("made %q while the first send waits for the next gateway; want nothing", got)
	}
	r.renewLeases(ctx, true) // leads again
	waitUntil(t, "both sends made", func() bool { return len(m.Made()) >= 2 })
	time.Sleep(100 * time.Millisecond)
	if got := m.Made(); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("made %q; want 1 then 2", got)
	}
}

// interactMaker is a member whose adapter "tg" answers every interaction
// with "done", after refusing the first refuse as its gateway would with
// an unsure lease.
type interactMaker struct {
	oneAdapter
	refuse atomic.Int32
	made   atomic.Int32
}

func (m *interactMaker) Interact(context.Context, string, journal.Interaction) ([]byte, error) {
	if m.refuse.Add(-1) >= 0 {
		return nil, fmt.Errorf("made up: %w", ErrLeaseLost)
	}
	m.made.Add(1)
	return []byte("done"), nil
}

// An interaction no gateway takes — none is there yet, or the one there
// refuses it with its lease unsure — is asked again until one makes it,
// within the caller's context; one made is not asked again.
func TestInteractionAskedAgainUntilTaken(t *testing.T) {
	parallel(t, 0)
	ctx := context.Background()
	m := &interactMaker{}
	m.refuse.Store(2)
	s, r := sharedMember(t, connectEmbedded(t), SharedConfig{}, m)

	// No gateway at all: it fails once the caller's context ends, with a
	// retryable error that says no gateway took it (also when ctx ends as
	// a later try waits for its answer: a loaded machine).
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := s.Interact(short, "tg", journal.Interaction{Op: journal.OpChatAction}); !errors.Is(err, errNoGateway) || platform.IsPermanent(err) {
		t.Fatalf("with no gateway: %v; want a retryable errNoGateway", err)
	}

	type result struct {
		data []byte
		err  error
	}
	got := make(chan result, 1)
	go func() {
		data, err := s.Interact(ctx, "tg", journal.Interaction{Op: journal.OpChatAction})
		got <- result{data, err}
	}()
	time.Sleep(100 * time.Millisecond) // asked while there is no gateway
	r.renewLeases(ctx, true)           // a gateway, which refuses it twice first
	res := <-got
	if res.err != nil || string(res.data) != "done" {
		t.Fatalf("Interact = %q, %v; want done", res.data, res.err)
	}
	if n := m.made.Load(); n != 1 {
		t.Fatalf("made %d times; want once", n)
	}
}

// An interaction whose context ends as a try waits for its answer fails
// with ctx's error and with the refusal of the try before it, so that
// the caller learns no gateway took it then.
func TestInteractionTimeoutSaysWhyBefore(t *testing.T) {
	parallel(t, 0)
	nc := connectEmbedded(t)
	s, _ := sharedMember(t, nc, SharedConfig{}, &interactMaker{})
	// A gateway of its own on the subject: it refuses the first try as
	// busy and never answers the next.
	var tries atomic.Int32
	sub, err := nc.Subscribe(s.gatewaySubject("tg"), func(msg *nats.Msg) {
		if tries.Add(1) > 1 {
			return
		}
		b, err := json.Marshal(encodeError(errGatewayBusy))
		if err != nil {
			t.Error(err)
			return
		}
		reply := nats.NewMsg(msg.Reply)
		reply.Header.Set(hdrError, string(b))
		if err := nc.PublishMsg(reply); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for tries.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err = s.Interact(ctx, "tg", journal.Interaction{Op: journal.OpChatAction})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errGatewayBusy) || platform.IsPermanent(err) {
		t.Fatalf("Interact = %v; want ctx's error and the busy refusal before it, retryable", err)
	}
}
