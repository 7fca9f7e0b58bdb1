package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// fast are TTLs short enough for tests, and long enough that a loaded
// machine's stall does not make a live member look gone. AckWait stays at
// its default (2 min): a partition or a gateway that moves hands back at
// once what it held (see puller), so no test waits on it.
var fast = cluster.SharedConfig{
	Heartbeat: 200 * time.Millisecond, MemberTTL: 2 * time.Second,
	PinnedTTL: 2 * time.Second, LeaseTTL: 3 * time.Second,
	Config: cluster.Config{Partitions: 8},
}

// member is one process of a bot in a test: an engine on a Shared journal.
type member struct {
	name string
	nc   *nats.Conn
	j    *cluster.Shared
	e    *engine.Engine
	done chan error
}

func startMember(t *testing.T, s *embedded.Server, mem *memory.Adapter, name string) *member {
	t.Helper()
	return startMemberWith(t, s, name, func(*cluster.Shared) platform.Adapter { return mem })
}

// startMemberWith starts a member whose adapter adapter returns, given
// the member's journal.
func startMemberWith(t *testing.T, s *embedded.Server, name string, adapter func(*cluster.Shared) platform.Adapter) *member {
	t.Helper()
	return startMemberOn(t, func() (*nats.Conn, error) { return s.Connect() }, name, adapter)
}

// startMemberOn starts a member on the connection connect makes.
func startMemberOn(t *testing.T, connect func() (*nats.Conn, error), name string, adapter func(*cluster.Shared) platform.Adapter, opts ...engine.Option) *member {
	t.Helper()
	return startMemberConfig(t, connect, fast, name, adapter, opts...)
}

// startMemberConfig starts a member with the journal's configuration cfg.
func startMemberConfig(t *testing.T, connect func() (*nats.Conn, error), cfg cluster.SharedConfig, name string, adapter func(*cluster.Shared) platform.Adapter, opts ...engine.Option) *member {
	t.Helper()
	nc, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Node = name
	cfg.Logger = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)).Named(name)
	j, err := cluster.OpenShared(ctxFor(t), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(adapter(j)), engine.WithJournal(j), engine.WithShutdownTimeout(10 * time.Second),
		engine.WithLogger(cfg.Logger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.OnCommand("count", func(c *engine.Context) error {
		n, _ := strconv.Atoi(c.RawArgs())
		for i := range n {
			c.ReplyText(strconv.Itoa(i + 1))
		}
		return nil
	})
	e.OnCommand("who", func(c *engine.Context) error {
		res, err := c.ReplyText("asked").Wait(c.Context())
		if err != nil {
			return err
		}
		c.ReplyText(name + " " + res.MessageID) // the gateway's result reached the handler's process
		return nil
	})
	m := &member{name: name, nc: nc, j: j, e: e, done: make(chan error, 1)}
	go func() { m.done <- e.Run(context.Background()) }()
	t.Cleanup(func() { m.stop(t) })
	return m
}

func (m *member) stop(t *testing.T) {
	select {
	case <-m.done:
		return
	default:
	}
	if err := m.e.Shutdown(ctxFor(t)); err != nil {
		t.Errorf("%s: Shutdown: %v", m.name, err)
	}
	<-m.done
	m.done <- nil
	m.nc.Close()
}

// waitSpread waits until every member owns partitions, all 8 are owned,
// and one member is the gateway, and returns the gateway.
func waitSpread(t *testing.T, members []*member) *member {
	t.Helper()
	var gw *member
	waitFor(t, "the partitions to spread", func() bool {
		total, leaders := 0, 0
		for _, m := range members {
			st := m.j.Stats()
			if st.Partitions == 0 {
				return false
			}
			total += st.Partitions
			leaders += len(st.Leading)
			if len(st.Leading) > 0 {
				gw = m
			}
		}
		return total == 8 && leaders == 1
	})
	return gw
}

// waitFor waits until cond holds; diag tells more when it never does.
func waitFor(t *testing.T, what string, cond func() bool, diag ...func()) {
	t.Helper()
	ctx := ctxFor(t)
	for !cond() {
		select {
		case <-ctx.Done():
			for _, d := range diag {
				d()
			}
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Three members share the partitions and one gateway: every reply arrives
// once, in order per chat, and a handler's Future gets the gateway's
// result wherever the handler ran.
func TestSharedThreeMembers(t *testing.T) {
	parallel(t, 4*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	members := []*member{startMember(t, srv.s, mem, "a"), startMember(t, srv.s, mem, "b"), startMember(t, srv.s, mem, "c")}
	waitSpread(t, members)
	const chats, n = 20, 5
	for c := range chats {
		chat := memory.Private(fmt.Sprint(100 + c))
		mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User(chat.ID, "u"), Text: "/count " + strconv.Itoa(n)})
		mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User(chat.ID, "u"), Text: "/who"})
	}
	want := []string{"1", "2", "3", "4", "5", "asked"}
	handledBy := map[string]bool{}
	for c := range chats {
		id := fmt.Sprint(100 + c)
		sent, err := mem.WaitSent(ctxFor(t), id, n+2)
		if err != nil {
			t.Fatalf("chat %s: %v: %q", id, err, mem.Texts(id))
		}
		got := mem.Texts(id)
		if !slices.Equal(got[:n+1], want) || len(got) != n+2 {
			t.Fatalf("chat %s got %q; want %q then who", id, got, want)
		}
		var who, msgID string
		fmt.Sscan(got[n+1], &who, &msgID)
		if msgID != sent[n].MessageID {
			t.Fatalf("chat %s: the handler on %s saw message %q; the gateway sent %q", id, who, msgID, sent[n].MessageID)
		}
		handledBy[who] = true
	}
	if len(handledBy) < 2 {
		t.Fatalf("every chat was handled by %v; want the work spread", handledBy)
	}

	// The members' collectors tell the same: 8 partitions, one gateway.
	reg := prometheus.NewPedanticRegistry()
	for _, m := range members {
		if err := reg.Register(m.j.Collector()); err != nil {
			t.Fatal(err)
		}
	}
	// Once the partitions are settled: on a loaded machine a member may
	// miss a heartbeat, and they move for a moment.
	var sums map[string]float64
	var series map[string]int
	waitFor(t, "the collectors to count 8 partitions and 1 gateway, each member its gauge", func() bool {
		sums, series = map[string]float64{}, map[string]int{}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				sums[f.GetName()] += m.GetGauge().GetValue() + m.GetCounter().GetValue()
				series[f.GetName()]++
			}
		}
		return sums["herald_cluster_partitions"] == 8 && sums["herald_cluster_leading"] == 1 && series["herald_cluster_leading"] == len(members)
	}, func() { t.Logf("collected %v in %v series", sums, series) })
}

// A member that dies (its connection cut, nothing handed over) loses
// nothing: the others take its partitions, and the lease if it was the
// gateway, and the replies arrive, in order per chat.
func TestSharedMemberDies(t *testing.T) {
	parallel(t, 9*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	members := []*member{startMember(t, srv.s, mem, "a"), startMember(t, srv.s, mem, "b"), startMember(t, srv.s, mem, "c")}
	gw := waitSpread(t, members) // a gateway too: it is the member that dies
	const chats, n = 20, 30
	mem.SlowNext("", 0)
	var wg sync.WaitGroup
	for c := range chats {
		chat := memory.Private(fmt.Sprint(200 + c))
		mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User(chat.ID, "u"), Text: "/count " + strconv.Itoa(n)})
	}
	waitFor(t, "some replies", func() bool { return len(mem.Texts("200")) >= 3 })
	// The gateway dies: its connection is cut, its engine stopped hard.
	gw.nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	_ = gw.e.Shutdown(ctx)
	cancel()
	wg.Wait()
	for c := range chats {
		id := fmt.Sprint(200 + c)
		waitFor(t, "chat "+id+"'s replies", func() bool { return len(dedupStrings(mem.Texts(id))) >= n }, func() {
			for _, m := range members {
				t.Logf("%s: %+v %+v", m.name, m.j.Stats(), m.e.Stats())
			}
			t.Logf("chat %s: %q", id, mem.Texts(id))
		})
		got := mem.Texts(id)
		d := dedupStrings(got)
		for i, s := range d {
			if s != strconv.Itoa(i+1) {
				t.Fatalf("chat %s got %q; want 1..%d in order", id, got, n)
			}
		}
		if len(got)-n > 1 {
			t.Fatalf("chat %s got %d replies twice for one death: %q", id, len(got)-n, got)
		}
	}
}

func dedupStrings(ss []string) []string {
	var out []string
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// A partition handed over while its member still handles an event of it
// waits for that handling: the chat's next event is handled after it,
// however long it takes (here past the pin's TTL), by the new owner.
func TestSharedHandoverWaitsForHandler(t *testing.T) {
	parallel(t, 7*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	release := make(chan struct{})
	const chats = 16
	// Counted, not a WaitGroup: a handler run again (a member wrongly
	// thought gone) must fail the test, not panic the package.
	var started atomic.Int64
	allStarted := make(chan struct{})
	slow := func(e *engine.Engine) {
		e.OnCommand("slow", func(c *engine.Context) error {
			if started.Add(1) == chats {
				close(allStarted)
			}
			<-release
			c.ReplyText("slow")
			return nil
		})
		e.OnCommand("after", func(c *engine.Context) error {
			c.ReplyText("after")
			return nil
		})
	}
	a := startMember(t, srv.s, mem, "a")
	slow(a.e)
	waitFor(t, "a to own every partition", func() bool { return a.j.Stats().Partitions == 8 && len(a.j.Stats().Leading) == 1 })
	for c := range chats {
		chat := memory.Private(fmt.Sprint(300 + c))
		mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User(chat.ID, "u"), Text: "/slow"})
	}
	<-allStarted
	b := startMember(t, srv.s, mem, "b")
	slow(b.e)
	waitFor(t, "a to give partitions up", func() bool { return a.j.Stats().Partitions < 8 })
	for c := range chats {
		chat := memory.Private(fmt.Sprint(300 + c))
		mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User(chat.ID, "u"), Text: "/after"})
	}
	time.Sleep(2 * fast.PinnedTTL) // b waits for the claims, not for the pins
	for c := range chats {
		if got := mem.Texts(fmt.Sprint(300 + c)); len(got) != 0 {
			t.Fatalf("chat %d got %q while its first event was still handled", 300+c, got)
		}
	}
	close(release)
	for c := range chats {
		id := fmt.Sprint(300 + c)
		if _, err := mem.WaitSent(ctxFor(t), id, 2); err != nil {
			t.Fatalf("chat %s: %v: %q", id, err, mem.Texts(id))
		}
		if got := mem.Texts(id); !slices.Equal(got, []string{"slow", "after"}) {
			t.Fatalf("chat %s got %q; want slow, then after", id, got)
		}
	}
	waitFor(t, "b to own its partitions", func() bool { return b.j.Stats().Partitions > 0 })
	if n := started.Load(); n != chats {
		t.Fatalf("/slow ran %d times for %d chats", n, chats)
	}
}

// A member that leaves with conversations waiting for their users hands
// their partitions and its lease over at once: it drained what it was
// running, and what waits for an answer it no longer takes is the next
// owner's. (It waited five seconds for them before, holding its lease:
// nobody sent meanwhile.) The other member resumes each conversation with
// its user's answer, asking nothing twice.
func TestSharedLeaveWithConversationsWaiting(t *testing.T) {
	parallel(t, 5*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	a := startMember(t, srv.s, mem, "a")
	askName(a.e)
	waitFor(t, "a to lead", func() bool { return len(a.j.Stats().Leading) == 1 })
	b := startMember(t, srv.s, mem, "b")
	askName(b.e)
	// The gateway leaves: a, which started first — or b, when a's lease
	// lapsed on a loaded machine and b took it.
	gw := waitSpread(t, []*member{a, b})
	const chats = 16
	chat := func(c int) platform.Chat { return memory.Private(fmt.Sprint(500 + c)) }
	askAll(t, mem, chats, chat)
	if gw.j.Stats().Partitions == 0 {
		t.Fatalf("%s, the gateway, owns no partition", gw.name)
	}
	start := time.Now()
	gw.stop(t)
	// Generous for a loaded machine: the leave takes milliseconds.
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("%s took %v to leave; its conversations were waited for", gw.name, took)
	}
	answerNames(t, ctxFor(t), mem, chats, chat)
}

// askName registers /ask, a conversation: it asks the user's name, and
// greets them by it.
func askName(e *engine.Engine) {
	e.OnCommand("ask", func(c *engine.Context) error {
		a, err := c.Prompt(c.Context(), platform.TextMessage("name?"))
		if err != nil {
			return err
		}
		c.ReplyText("hi " + a.Text)
		return nil
	})
}

// say emits text from the user of chat's own, as the adapter takes an
// event in.
func say(mem *memory.Adapter, chat platform.Chat, text string) {
	mem.Emit(platform.Event{Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User(chat.ID, "u"), Text: text})
}

// askAll says /ask in each of the chats, and waits for askName's question
// in each.
func askAll(t *testing.T, mem *memory.Adapter, chats int, chat func(int) platform.Chat) {
	t.Helper()
	for c := range chats {
		say(mem, chat(c), "/ask")
	}
	for c := range chats {
		if _, err := mem.WaitSent(ctxFor(t), chat(c).ID, 1); err != nil {
			t.Fatalf("chat %s: %v", chat(c).ID, err)
		}
	}
}

// answerNames answers askName's question in each of the chats, and checks
// that each got the question once, then its greeting, before ctx ends.
func answerNames(t *testing.T, ctx context.Context, mem *memory.Adapter, chats int, chat func(int) platform.Chat) {
	t.Helper()
	for c := range chats {
		say(mem, chat(c), "Ann")
	}
	for c := range chats {
		id := chat(c).ID
		if _, err := mem.WaitSent(ctx, id, 2); err != nil {
			t.Fatalf("chat %s: %v: %q", id, err, mem.Texts(id))
		}
		if got := mem.Texts(id); !slices.Equal(got, []string{"name?", "hi Ann"}) {
			t.Fatalf("chat %s got %q; want the question once, then the greeting", id, got)
		}
	}
}

// convChats is how many chats the conversations' tests ask in.
const convChats = 16

// aloneWithConversations starts member a alone on a server of its own,
// owning every partition and leading, with askName's conversation waiting
// in convChats chats numbered from base, which chat names.
func aloneWithConversations(t *testing.T, base int) (srv *server, mem *memory.Adapter, a *member, chat func(int) platform.Chat) {
	t.Helper()
	srv = startServer(t, t.TempDir(), embedded.Config{})
	mem = memory.New()
	a = startMember(t, srv.s, mem, "a")
	askName(a.e)
	waitFor(t, "a to own every partition", func() bool { return a.j.Stats().Partitions == 8 && len(a.j.Stats().Leading) == 1 })
	chat = func(c int) platform.Chat { return memory.Private(fmt.Sprint(base + c)) }
	askAll(t, mem, convChats, chat)
	return srv, mem, a, chat
}

// A partition that moves to a member joining, while conversations of its
// chats wait for their users, is handed over at once: what waits for an
// answer that its member no longer pulls is not waited for (it was, 30
// seconds, the partition's chats answered by no one meanwhile). The new
// owner resumes each conversation with its user's answer.
func TestSharedRebalanceWithConversationsWaiting(t *testing.T) {
	parallel(t, 4*time.Second)
	srv, mem, a, chat := aloneWithConversations(t, 700)
	joined := time.Now()
	b := startMember(t, srv.s, mem, "b")
	askName(b.e)
	waitSpread(t, []*member{a, b})
	// Far below the 30 s a partition's hand-over waited for them.
	if took := time.Since(joined); took > 15*time.Second {
		t.Errorf("the partitions took %v to spread", took)
	}
	answerNames(t, ctxFor(t), mem, convChats, chat)
	if b.j.Stats().Takeovers == 0 {
		t.Error("b took no partition over unfinished")
	}
}

// A dead letter that two processes of the bot hold (the one that made it,
// and one that started after it and found it in the journal) is sent once
// when both replay their letters: the second replay's send is one the
// journal saw, and goes nowhere.
func TestSharedDeadLetterReplayedOnce(t *testing.T) {
	parallel(t, 3*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	a := startMember(t, srv.s, mem, "a")
	waitFor(t, "a to lead", func() bool { return len(a.j.Stats().Leading) == 1 })
	chat := memory.Private("600")
	a.e.DeadLetterStore().Add(sender.DeadLetter{
		Request:  platform.SendRequest{Platform: mem.Name(), Target: chat, Message: platform.TextMessage("letter")},
		Attempts: 3, Err: errors.New("timeout"), At: time.Now(),
	})
	b := startMember(t, srv.s, mem, "b")
	waitSpread(t, []*member{a, b})
	if got := b.e.DeadLetters(); len(got) != 1 || got[0].Request.Message.Text != "letter" {
		t.Fatalf("b restored %+v; want the letter a kept", got)
	}
	if n, err := a.e.ReplayDeadLetters(ctxFor(t)); n != 1 || err != nil {
		t.Fatalf("a replayed %d: %v", n, err)
	}
	if _, err := mem.WaitSent(ctxFor(t), chat.ID, 1); err != nil {
		t.Fatal(err)
	}
	if n, err := b.e.ReplayDeadLetters(ctxFor(t)); n != 1 || err != nil {
		t.Fatalf("b replayed %d: %v", n, err)
	}
	// Made after b's replay: a second "letter" would come before it.
	if _, err := b.e.Send(mem.Name(), chat, platform.TextMessage("after")).Wait(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	if got := mem.Texts(chat.ID); !slices.Equal(got, []string{"letter", "after"}) {
		t.Fatalf("the chat got %q; want the letter once, then the message sent after the replays", got)
	}
	for _, m := range []*member{a, b} {
		if got := m.e.DeadLetters(); len(got) != 0 {
			t.Errorf("%s still holds %+v", m.name, got)
		}
	}
}

// A conversation handed over with its partition while it waited is the
// new owner's alone: when its wait ends on the member that handed it over
// (here its deadline, sooner there), that member drops it rather than
// running it again — which would have told the user it timed out while
// the new owner still waits for the answer.
func TestSharedHandedOverWaitNotRunAgain(t *testing.T) {
	parallel(t, 6*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	ask := func(e *engine.Engine) {
		e.OnCommand("ask", func(c *engine.Context) error {
			a, err := c.Prompt(c.Context(), platform.TextMessage("name?"))
			if err != nil {
				c.ReplyText("timed out")
				return nil
			}
			c.ReplyText("hi " + a.Text)
			return nil
		})
	}
	const wait = 3 * time.Second
	a := startMemberOn(t, func() (*nats.Conn, error) { return srv.s.Connect() }, "a",
		func(*cluster.Shared) platform.Adapter { return mem }, engine.WithConversationWait(wait))
	ask(a.e)
	waitFor(t, "a to own every partition", func() bool { return a.j.Stats().Partitions == 8 && len(a.j.Stats().Leading) == 1 })
	const chats = 16
	chat := func(c int) platform.Chat { return memory.Private(fmt.Sprint(800 + c)) }
	asked := time.Now()
	askAll(t, mem, chats, chat)
	b := startMember(t, srv.s, mem, "b") // waits an hour
	ask(b.e)
	waitSpread(t, []*member{a, b})
	time.Sleep(time.Until(asked.Add(wait + time.Second))) // a's waits ended
	// The chats a kept timed out there; those handed to b wait on: each
	// gets its greeting when its user answers.
	for c := range chats {
		say(mem, chat(c), "Ann")
	}
	greeted := 0
	for c := range chats {
		id := chat(c).ID
		if _, err := mem.WaitSent(ctxFor(t), id, 2); err != nil {
			t.Fatalf("chat %s: %v: %q", id, err, mem.Texts(id))
		}
		switch got := mem.Texts(id); {
		case slices.Equal(got, []string{"name?", "hi Ann"}):
			greeted++
		case !slices.Equal(got, []string{"name?", "timed out"}):
			t.Fatalf("chat %s got %q; want the question, then its greeting (b) or its time-out (a)", id, got)
		}
	}
	if greeted == 0 || b.j.Stats().Takeovers == 0 {
		t.Fatalf("%d chats greeted, %d partitions taken over unfinished: the waits handed over timed out on a", greeted, b.j.Stats().Takeovers)
	}
	waitFor(t, "a to count its handed-over events out", func() bool { return a.e.Stats().Journal.Events == 0 })
}

// A partition that went to another member while a conversation of it
// waited, and came back (that member left), brings the conversation back
// as its event, run again: the wait left from before it went is dropped
// when the user's answer comes, and the one run again takes it. Each chat
// gets its greeting once, and the member holds nothing after.
func TestSharedPartitionBackWithConversationsWaiting(t *testing.T) {
	parallel(t, 5*time.Second)
	srv, mem, a, chat := aloneWithConversations(t, 900)
	b := startMember(t, srv.s, mem, "b")
	askName(b.e)
	waitSpread(t, []*member{a, b})
	b.stop(t)
	waitFor(t, "a to own every partition again", func() bool { return a.j.Stats().Partitions == 8 })
	answerNames(t, ctxFor(t), mem, convChats, chat)
	waitFor(t, "a to hold no event", func() bool { return a.e.Stats().Journal.Events == 0 })
}

// A member that is its account's gateway hears the outcomes of its own
// handlers' sends without a message on its results subject: a Future gets
// the platform's result, and a failure the error a member elsewhere would
// hear (permanent still, its text kept).
func TestSharedGatewayHearsItsOwnSends(t *testing.T) {
	parallel(t, time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	watch, err := srv.s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	var heard atomic.Int64
	sub, err := watch.Subscribe("herald.*.result.>", func(*nats.Msg) { heard.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	mem := memory.New()
	m := startMember(t, srv.s, mem, "a")
	m.e.OnCommand("fail", func(c *engine.Context) error {
		_, err := c.ReplyText("refused").Wait(c.Context())
		c.ReplyText(fmt.Sprintf("permanent=%v %v", platform.IsPermanent(err), err))
		return nil
	})
	waitSpread(t, []*member{m})
	chat := memory.Private("7")
	mem.Emit(platform.Event{ID: "1", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User("7", "u"), Text: "/who"})
	sent, err := mem.WaitSent(ctxFor(t), chat.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a " + sent[0].MessageID; sent[1].Message.Text != want {
		t.Fatalf("the handler heard %q; want %q", sent[1].Message.Text, want)
	}
	mem.FailNext(chat.ID, platform.Permanent(errors.New("blocked by the user")))
	mem.Emit(platform.Event{ID: "2", Platform: mem.Name(), Kind: platform.EventMessage, Chat: chat, From: memory.User("7", "u"), Text: "/fail"})
	if sent, err = mem.WaitSent(ctxFor(t), chat.ID, 3); err != nil {
		t.Fatal(err)
	}
	if got := sent[2].Message.Text; !strings.HasPrefix(got, "permanent=true ") || !strings.Contains(got, "blocked by the user") {
		t.Fatalf("the handler heard %q; want the permanent failure", got)
	}
	if n := heard.Load(); n != 0 {
		t.Fatalf("%d messages on the results subjects; want none", n)
	}
}

// A batch of events (an adapter's poll: HandleEvents) is recorded in a
// shared journal with one wait: each event handled once, by its
// partition's member, in order per chat; an event given twice in the batch,
// or again in a later batch, is a duplicate, counted as skipped.
func TestSharedBatchRecorded(t *testing.T) {
	parallel(t, 3*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	members := []*member{startMember(t, srv.s, mem, "a"), startMember(t, srv.s, mem, "b")}
	waitSpread(t, members)
	const chats, n = 12, 3
	var evs []platform.Event
	for k := range n {
		for c := range chats {
			chat := memory.Private(fmt.Sprint(300 + c))
			evs = append(evs, platform.Event{ID: fmt.Sprintf("b%d-%d", c, k), Platform: mem.Name(), Kind: platform.EventMessage,
				Chat: chat, From: memory.User(chat.ID, "u"), Text: "/count " + strconv.Itoa(k+1)})
		}
	}
	evs = append(evs, evs[0]) // the same event twice in one batch
	if n, err := members[0].e.HandleEvents(evs); err != nil || n != len(evs) {
		t.Fatalf("HandleEvents: %d taken, %v; want %d", n, err, len(evs))
	}
	if n, err := members[1].e.HandleEvents(evs[:2]); err != nil || n != 2 { // the platform gives two again
		t.Fatalf("given again: %d taken, %v; want 2", n, err)
	}
	want := []string{"1", "1", "2", "1", "2", "3"}
	for c := range chats {
		id := fmt.Sprint(300 + c)
		if _, err := mem.WaitSent(ctxFor(t), id, len(want)); err != nil {
			t.Fatalf("chat %s: %v: %q", id, err, mem.Texts(id))
		}
	}
	var skipped uint64
	for _, m := range members {
		skipped += m.j.Stats().Skipped
	}
	if skipped != 3 {
		t.Errorf("%d events skipped; want 3", skipped)
	}
	time.Sleep(200 * time.Millisecond) // nothing more comes
	for c := range chats {
		id := fmt.Sprint(300 + c)
		if got := mem.Texts(id); !slices.Equal(got, want) {
			t.Errorf("chat %s got %q; want %q", id, got, want)
		}
	}
}

// An event written in a batch after one that was refused is not taken
// (the platform gives it again), but its record is its partition's to
// handle: given again, it is a duplicate by its ID — and an event without
// an ID, which nothing would tell apart, is not written past the refused
// one (the batch goes one by one). Each is handled once. (Found by a
// review: the event without an ID was handled twice.)
func TestSharedBatchAfterARefusedEvent(t *testing.T) {
	parallel(t, 2*time.Second)
	srv := startServer(t, t.TempDir(), embedded.Config{})
	mem := memory.New()
	cfg := fast
	cfg.MaxRecord = 4096
	m := startMemberConfig(t, func() (*nats.Conn, error) { return srv.s.Connect() }, cfg, "a",
		func(*cluster.Shared) platform.Adapter { return mem })
	waitSpread(t, []*member{m})
	for _, id := range []string{"", "b1"} {
		t.Run("id="+id, func(t *testing.T) {
			big, next := memory.Private("big"+id), memory.Private("next"+id)
			evs := []platform.Event{
				{ID: "big" + id, Platform: mem.Name(), Kind: platform.EventMessage, Chat: big, From: memory.User(big.ID, "u"),
					Text: "/count 1 " + strings.Repeat("x", 8000)}, // over MaxRecord: refused for good
				{ID: id, Platform: mem.Name(), Kind: platform.EventMessage, Chat: next, From: memory.User(next.ID, "u"), Text: "/count 1"},
			}
			if n, err := m.e.HandleEvents(evs); n != 0 || !platform.IsPermanent(err) {
				t.Fatalf("HandleEvents: %d taken, %v; want none, a permanent refusal", n, err)
			}
			if n, err := m.e.HandleEvents(evs[1:]); n != 1 || err != nil { // the platform gives the rest again
				t.Fatalf("given again: %d taken, %v; want 1", n, err)
			}
			if _, err := mem.WaitSent(ctxFor(t), next.ID, 1); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // a second handling would reply by now
			if got := mem.Texts(next.ID); !slices.Equal(got, []string{"1"}) {
				t.Errorf("chat %s got %q; want one reply", next.ID, got)
			}
		})
	}
}
