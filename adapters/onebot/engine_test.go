package onebot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/count"
	"github.com/heraldbot/herald/plugins/echo"
	"github.com/heraldbot/herald/plugins/help"
	"github.com/heraldbot/herald/plugins/ping"
)

// The tests in this file run the adapter the way a bot does: a real
// engine.Engine with the real plugins and the default sender chain in front
// of it, in reverse mode, against a fake OneBot implementation (the peers of
// peer_test.go) that answers the send actions.

// obSelf is the bot account of the engine tests.
const obSelf = 10001

// obWait bounds every wait of the engine tests; a correct run takes
// milliseconds.
const obWait = 10 * time.Second

// obEngine is an Engine running the adapter in reverse mode.
type obEngine struct {
	t   *testing.T
	h   *harness // the adapter, for the peer helpers
	e   *engine.Engine
	url string // the reverse endpoint

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	runErr   error
}

// startObEngine starts an Engine with the adapter, the ping, echo, count and
// help plugins and opts, and serves the adapter's reverse endpoint. At
// cleanup it stops the engine and requires Run to return nil.
func startObEngine(t *testing.T, opts ...engine.Option) *obEngine {
	t.Helper()
	return startObEngineWith(t, Config{}, opts...)
}

// startObEngineWith is startObEngine with the adapter configured by cfg.
func startObEngineWith(t *testing.T, cfg Config, opts ...engine.Option) *obEngine {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The tests here are of order, drops and failures, not of pacing: QQ's
	// budget (DefaultLimits, one message a second) is off.
	unlimited := engine.WithRateLimit(a.Name(), sender.RateLimitConfig{Off: true})
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(a), unlimited}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(ping.New(), echo.New(), count.New(), help.New()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &obEngine{t: t, h: &harness{t: t, a: a}, e: e, cancel: cancel, done: make(chan error, 1)}
	go func() { b.done <- e.Run(ctx) }()
	t.Cleanup(func() {
		if err := b.stop(); err != nil {
			t.Errorf("Run = %v; want nil", err)
		}
	})
	waitFor(t, "the adapter to run", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.acceptingLocked()
	})
	b.url = b.h.reverseServer()
	return b
}

// stop cancels Run and returns its error; later calls return the same.
func (b *obEngine) stop() error {
	b.stopOnce.Do(func() {
		b.cancel()
		select {
		case b.runErr = <-b.done:
		case <-time.After(obWait):
			b.runErr = fmt.Errorf("Run did not return within %v", obWait)
		}
	})
	return b.runErr
}

// waitUntil polls cond until it holds, failing with what after obWait.
func (b *obEngine) waitUntil(what string, cond func() error) {
	b.t.Helper()
	deadline := time.Now().Add(obWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(pause)
	}
}

// delivered returns nil once the engine has seen n sends succeed: the
// adapter has read the implementation's "ok" answers, not just been sent
// them.
func (b *obEngine) delivered(n int) error {
	if d := b.e.Stats().Sends.Delivered; d != uint64(n) {
		return fmt.Errorf("%d of %d replies delivered", d, n)
	}
	return nil
}

// obAnswer says how the fake implementation answers one send action.
type obAnswer struct {
	Drop    bool   // half-close the connection instead of answering
	Ignore  bool   // never answer
	Status  string // "ok" when empty
	RetCode int
}

// obAction is a send action as the fake implementation received it.
type obAction struct {
	Chat string // "group:<id>" or "private:<id>"
	Text string
	N    int // how many send actions this connection received before
}

// obImpl is a fake OneBot implementation: each connection's responder
// answers the adapter's send actions as policy says, and the messages it
// answered "ok" to count as delivered. It never answers an action twice and
// never after dropping the connection, so a delivered message is one the
// adapter was told was sent.
type obImpl struct {
	t *testing.T

	mu        sync.Mutex
	policy    func(obAction) obAnswer
	delivered map[string][]string // texts by chat, in the order answered
	received  map[string]int      // send actions by chat, answered or not
	msgID     int
	events    int64
	dropped   chan struct{} // closed when a responder dropped its connection
	wg        sync.WaitGroup
}

func newObImpl(t *testing.T, policy func(obAction) obAnswer) *obImpl {
	if policy == nil {
		policy = func(obAction) obAnswer { return obAnswer{} }
	}
	im := &obImpl{t: t, policy: policy, delivered: make(map[string][]string), received: make(map[string]int),
		dropped: make(chan struct{})}
	t.Cleanup(im.wg.Wait) // after the peers' cleanups close the connections
	return im
}

// connect dials the engine's reverse endpoint as obSelf, waits until the
// adapter has registered the connection and starts its responder.
func (im *obImpl) connect(b *obEngine) *peer {
	im.t.Helper()
	p := b.h.connect(b.url, obSelf)
	im.wg.Go(func() { im.respond(p) })
	return p
}

// respond answers p's actions until its connection ends.
func (im *obImpl) respond(p *peer) {
	n := 0
	for {
		var a gotAction
		select {
		case a = <-p.actions:
		case <-p.done:
			return
		}
		act, err := decodeObAction(a)
		if err != nil {
			im.t.Errorf("fake implementation: %v", err)
			continue
		}
		act.N = n
		n++
		im.mu.Lock()
		im.received[act.Chat]++
		policy := im.policy
		im.mu.Unlock()
		ans := policy(act)
		if ans.Drop {
			// Half-close: the adapter reads every answer written so far,
			// then EOF, as when the network drops after them; no answer
			// is lost in a reset.
			if tc, ok := p.ws.UnderlyingConn().(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			} else {
				im.t.Errorf("fake implementation: not a TCP connection")
			}
			close(im.dropped)
			<-p.done // the adapter closes its side
			return
		}
		if ans.Ignore {
			continue
		}
		status := orDefault(ans.Status, "ok")
		im.mu.Lock()
		data := any(nil)
		if status == "ok" {
			im.msgID++
			data = map[string]any{"message_id": im.msgID}
			im.delivered[act.Chat] = append(im.delivered[act.Chat], act.Text)
		}
		im.mu.Unlock()
		frame, _ := json.Marshal(map[string]any{"status": status, "retcode": ans.RetCode, "data": data, "echo": a.Echo})
		p.wmu.Lock()
		err = p.ws.WriteMessage(websocket.TextMessage, frame)
		p.wmu.Unlock()
		if err != nil {
			return // the connection is going; the adapter fails the action
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func decodeObAction(a gotAction) (obAction, error) {
	var kind, idKey string
	switch a.Action {
	case "send_group_msg":
		kind, idKey = "group", "group_id"
	case "send_private_msg":
		kind, idKey = "private", "user_id"
	default:
		return obAction{}, fmt.Errorf("unexpected action %q", a.Action)
	}
	var id int64
	var msg Message
	if err := json.Unmarshal(a.Params[idKey], &id); err != nil {
		return obAction{}, fmt.Errorf("%s: %s = %s: %w", a.Action, idKey, a.Params[idKey], err)
	}
	if err := json.Unmarshal(a.Params["message"], &msg); err != nil {
		return obAction{}, fmt.Errorf("%s: message = %s: %w", a.Action, a.Params["message"], err)
	}
	return obAction{Chat: kind + ":" + strconv.FormatInt(id, 10), Text: msg.Text()}, nil
}

// answerAll makes the implementation answer "ok" to every action from now
// on.
func (im *obImpl) answerAll() {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.policy = func(obAction) obAnswer { return obAnswer{} }
}

// say makes user send text in a group (group > 0) or privately (group 0).
func (im *obImpl) say(p *peer, group, user int64, text string) {
	im.t.Helper()
	im.mu.Lock()
	im.events++
	id := im.events
	im.mu.Unlock()
	if group != 0 {
		p.sendJSON(groupMsg(obSelf, group, user, id, text))
	} else {
		p.sendJSON(privateMsg(obSelf, user, id, text))
	}
}

// deliveredTo returns the texts delivered to chat, in order.
func (im *obImpl) deliveredTo(chat string) []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	return slices.Clone(im.delivered[chat])
}

// deliveredCount returns how many messages were delivered to every chat.
func (im *obImpl) deliveredCount() int {
	im.mu.Lock()
	defer im.mu.Unlock()
	n := 0
	for _, texts := range im.delivered {
		n += len(texts)
	}
	return n
}

func (im *obImpl) receivedBy(chat string) int {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.received[chat]
}

// obChat is a chat of the engine tests: a group (group > 0) or a private
// chat with user.
type obChat struct{ group, user int64 }

func (c obChat) key() string {
	if c.group != 0 {
		return "group:" + strconv.FormatInt(c.group, 10)
	}
	return "private:" + strconv.FormatInt(c.user, 10)
}

// target is the chat's ID in the engine's requests (and dead letters).
func (c obChat) target() string {
	if c.group != 0 {
		return ChatID(obSelf, c.group)
	}
	return ChatID(obSelf, c.user)
}

func obChats(privates, groups int) []obChat {
	var cs []obChat
	for i := range privates {
		cs = append(cs, obChat{user: int64(200 + i)})
	}
	for i := range groups {
		cs = append(cs, obChat{group: int64(500 + i), user: int64(300 + i)})
	}
	return cs
}

func obNumbered(n int, prefix ...string) []string {
	out := slices.Clone(prefix)
	for i := 1; i <= n; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// TestEngineOneBot runs the real engine, plugins and sender chain over the
// adapter in reverse mode, against a fake implementation.
func TestEngineOneBot(t *testing.T) {
	t.Parallel()
	// Private and group chats each send /ping and /count 5: the replies go
	// out through send_private_msg and send_group_msg to the right chat,
	// each exactly once and in order.
	t.Run("replies in order", func(t *testing.T) {
		b := startObEngine(t)
		im := newObImpl(t, nil)
		p := im.connect(b)
		chats := obChats(4, 4)
		for _, c := range chats {
			im.say(p, c.group, c.user, "/ping")
			im.say(p, c.group, c.user, "/count 5")
		}
		b.waitUntil("every reply", func() error { return b.delivered(6 * len(chats)) })
		if err := b.stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		for _, c := range chats {
			got := im.deliveredTo(c.key())
			if len(got) != 6 || !strings.HasPrefix(got[0], "pong") || !slices.Equal(got[1:], obNumbered(5)) {
				t.Errorf("%s got %q; want exactly pong, 1 … 5", c.key(), got)
			}
		}
		if st := b.e.Stats(); st.Sends.Delivered != uint64(6*len(chats)) || st.Sends.Retries != 0 || st.DeadLetters != 0 {
			t.Errorf("stats = %+v; want %d delivered, no retries, no dead letters", st.Sends, 6*len(chats))
		}
	})

	// A "failed" response with retcode 1403 is permanent: the send is not
	// retried and ends in the dead letters; other chats are unaffected.
	t.Run("retcode 1403 dead letter", func(t *testing.T) {
		b := startObEngine(t)
		forbidden, fine := obChat{group: 777, user: 42}, obChat{user: 43}
		im := newObImpl(t, func(a obAction) obAnswer {
			if a.Chat == forbidden.key() {
				return obAnswer{Status: "failed", RetCode: 1403}
			}
			return obAnswer{}
		})
		p := im.connect(b)
		im.say(p, forbidden.group, forbidden.user, "/echo let me in")
		im.say(p, fine.group, fine.user, "/echo hello")
		b.waitUntil("the dead letter and the other reply", func() error {
			if n := len(b.e.DeadLetters()); n != 1 {
				return fmt.Errorf("%d dead letters", n)
			}
			return b.delivered(1)
		})
		if err := b.stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		dl := b.e.DeadLetters()[0]
		if dl.Request.Target.ID != forbidden.target() || dl.Request.Message.Text != "let me in" || dl.Attempts != 1 {
			t.Errorf("dead letter = %+v; want the reply to %s after one attempt", dl, forbidden.target())
		}
		var ae *ActionError
		if !platform.IsPermanent(dl.Err) || !errors.As(dl.Err, &ae) || ae.RetCode != 1403 || ae.Action != "send_group_msg" {
			t.Errorf("dead letter error = %v; want a permanent send_group_msg retcode 1403", dl.Err)
		}
		if n := im.receivedBy(forbidden.key()); n != 1 {
			t.Errorf("%s: %d send actions; want 1 (no retry)", forbidden.key(), n)
		}
		if got := im.deliveredTo(fine.key()); !slices.Equal(got, []string{"hello"}) {
			t.Errorf("%s got %q; want hello", fine.key(), got)
		}
	})

	// An action the implementation never answers outlasts the default
	// chain's per-attempt timeout, which is shorter than ActionTimeout:
	// the attempt ends with its context's deadline after the action was
	// written, so the message may have been delivered. By default it is
	// retried (at least once: the implementation sees every attempt); with
	// AvoidDuplicates it goes to the dead letters after one attempt (at
	// most once). Either way the dead letter matches
	// platform.ErrMaybeDelivered.
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprint("unanswered, AvoidDuplicates=", avoid), func(t *testing.T) {
			const attempts = 3
			b := startObEngineWith(t, Config{ActionTimeout: time.Hour, AvoidDuplicates: avoid},
				engine.WithSenderConfig(sender.DefaultConfig{
					Timeout: 500 * time.Millisecond, // written well before it ends, even on a slow machine
					Retry:   sender.RetryConfig{MaxAttempts: attempts, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond},
				}))
			silent := obChat{user: 42}
			im := newObImpl(t, func(obAction) obAnswer { return obAnswer{Ignore: true} })
			p := im.connect(b)
			im.say(p, silent.group, silent.user, "/echo once")
			b.waitUntil("the dead letter", func() error {
				if n := len(b.e.DeadLetters()); n != 1 {
					return fmt.Errorf("%d dead letters", n)
				}
				return nil
			})
			dl := b.e.DeadLetters()[0]
			want := attempts
			if avoid {
				want = 1
			}
			if !errors.Is(dl.Err, platform.ErrMaybeDelivered) || !errors.Is(dl.Err, context.DeadlineExceeded) ||
				platform.IsPermanent(dl.Err) != avoid || dl.Attempts != want {
				t.Errorf("dead letter after %d attempts: %v (permanent %v); want %d attempts, maybe delivered, a deadline, permanent %v",
					dl.Attempts, dl.Err, platform.IsPermanent(dl.Err), want, avoid)
			}
			b.waitUntil("the implementation to read every attempt", func() error {
				if n := im.receivedBy(silent.key()); n != want {
					return fmt.Errorf("%d send actions received; want %d", n, want)
				}
				return nil
			})
			if err := b.stop(); err != nil {
				t.Fatalf("Run = %v", err)
			}
			if n := im.receivedBy(silent.key()); n != want {
				t.Errorf("the implementation received %d send actions; want %d", n, want)
			}
		})
	}

	// The connection drops in the middle of a flood of replies. With the
	// implementation back soon, every reply is delivered or kept as a dead
	// letter (and then replayed): counted, none lost, none twice. With no
	// implementation to retry to, every reply after the drop is a dead
	// letter, and a replay after it reconnects delivers them, in order.
	for _, tc := range []struct {
		name      string
		retry     sender.RetryConfig
		reconnect bool // as soon as the adapter saw the drop, not after the sends gave up
	}{
		{"drop then reconnect", sender.RetryConfig{MaxAttempts: 8, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}, true},
		{"drop then dead letters", sender.RetryConfig{MaxAttempts: 2, BaseBackoff: time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startObEngine(t, engine.WithSenderConfig(sender.DefaultConfig{Retry: tc.retry}))
			const n, dropAt = 20, 25
			chats := obChats(3, 3)
			// Nothing is answered until every event is written, so the drop
			// cannot cut them off.
			allSent := make(chan struct{})
			im := newObImpl(t, func(a obAction) obAnswer {
				if a.N == 0 {
					<-allSent
				}
				return obAnswer{Drop: a.N == dropAt}
			})
			release := sync.OnceFunc(func() { close(allSent) })
			t.Cleanup(release) // before the responders are waited for
			p := im.connect(b)
			for _, c := range chats {
				im.say(p, c.group, c.user, "/count "+strconv.Itoa(n))
			}
			release()
			select {
			case <-im.dropped:
			case <-time.After(obWait):
				t.Fatalf("no drop: %d replies delivered", im.deliveredCount())
			}
			total := n * len(chats)
			settled := func() error {
				if d, dl := b.e.Stats().Sends.Delivered, len(b.e.DeadLetters()); int(d)+dl != total {
					return fmt.Errorf("%d delivered + %d dead letters of %d replies", d, dl, total)
				}
				return nil
			}
			waitFor(t, "the adapter to see the drop", func() bool { return len(b.h.a.Bots()) == 0 })
			if tc.reconnect {
				im.answerAll()
				im.connect(b)
				b.waitUntil("every reply delivered or dead", settled)
			} else {
				b.waitUntil("every reply delivered or dead", settled)
				if d := im.deliveredCount(); d != dropAt {
					t.Errorf("%d replies delivered with no connection to retry to; want the %d before the drop", d, dropAt)
				}
				im.answerAll()
				im.connect(b)
			}
			before := im.deliveredCount()
			dead := b.e.DeadLetters()
			if d := b.e.Stats().Sends.Delivered; d != uint64(before) {
				t.Errorf("the engine counts %d replies delivered, the implementation answered %d", d, before)
			}
			// What was delivered so far came in order, and with the dead
			// letters makes up every reply exactly once.
			for _, c := range chats {
				got := im.deliveredTo(c.key())
				all := slices.Clone(got)
				for _, dl := range dead {
					if dl.Request.Target.ID == c.target() {
						all = append(all, dl.Request.Message.Text)
						if !errors.Is(dl.Err, ErrConnectionLost) && !errors.Is(dl.Err, ErrNotConnected) {
							t.Errorf("%s: dead letter error %v; want connection lost or not connected", c.key(), dl.Err)
						}
					}
				}
				if !obIncreasing(got) {
					t.Errorf("%s: delivered out of order: %q", c.key(), got)
				}
				slices.SortFunc(all, func(x, y string) int { return obAtoi(x) - obAtoi(y) })
				if !slices.Equal(all, obNumbered(n)) {
					t.Errorf("%s: delivered %q and dead letters make %q; want 1 … %d once each", c.key(), got, all, n)
				}
			}

			replayed, err := b.e.ReplayDeadLetters(context.Background())
			if replayed != len(dead) || err != nil {
				t.Fatalf("ReplayDeadLetters = %d, %v; want %d, nil", replayed, err, len(dead))
			}
			b.waitUntil("the replays", func() error { return b.delivered(total) })
			if err := b.stop(); err != nil {
				t.Fatalf("Run = %v", err)
			}
			for _, c := range chats {
				got := im.deliveredTo(c.key())
				sorted := slices.Clone(got)
				slices.SortFunc(sorted, func(x, y string) int { return obAtoi(x) - obAtoi(y) })
				if !slices.Equal(sorted, obNumbered(n)) {
					t.Errorf("%s: delivered %q; want 1 … %d exactly once", c.key(), got, n)
				}
				if !tc.reconnect && !slices.Equal(got, obNumbered(n)) {
					t.Errorf("%s: delivered %q; want 1 … %d in order (only the replay after the drop)", c.key(), got, n)
				}
			}
			st := b.e.Stats()
			if st.DeadLetters != 0 || st.Sends.Delivered != uint64(total) || st.Sends.DeadLettered != uint64(len(dead)) {
				t.Errorf("stats = %+v; want %d delivered, %d dead-lettered then replayed", st, total, len(dead))
			}
			t.Logf("%d delivered before the replay, %d dead letters replayed, %d retries", before, len(dead), st.Sends.Retries)
		})
	}
}

func obIncreasing(texts []string) bool {
	for i := 1; i < len(texts); i++ {
		if obAtoi(texts[i]) <= obAtoi(texts[i-1]) {
			return false
		}
	}
	return true
}

func obAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}
