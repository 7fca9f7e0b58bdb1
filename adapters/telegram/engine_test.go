package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/count"
	"github.com/heraldbot/herald/plugins/echo"
	"github.com/heraldbot/herald/plugins/help"
	"github.com/heraldbot/herald/plugins/ping"
)

// The tests in this file run the adapter the way a bot does: a real
// engine.Engine with the real plugins and the default sender chain (retry,
// rate limits, dead letters) in front of the adapter, against the fake Bot
// API of telegramtest.

// tgEngine is an Engine running the adapter against a fake server.
type tgEngine struct {
	srv  *telegramtest.Server
	e    *engine.Engine
	logs *observer.ObservedLogs

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	runErr   error
	stopTook time.Duration

	mu   sync.Mutex
	reqs map[int64]int // send requests per chat, refused ones included
}

// startTgEngine starts a fake server and an Engine with the adapter and the
// ping, echo, count and help plugins; register, if not nil, adds handlers
// before Run. At cleanup it stops the engine, requiring Run to return nil,
// and checks that no log line of the engine or the adapter holds the token.
func startTgEngine(t *testing.T, register func(*engine.Engine), opts ...engine.Option) *tgEngine {
	t.Helper()
	b := &tgEngine{srv: telegramtest.NewServer(), done: make(chan error, 1), reqs: make(map[int64]int)}
	t.Cleanup(b.srv.Close)
	// Injected first, so it sees every request before any fault answers it.
	b.srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
		if r.Method == "sendMessage" {
			b.mu.Lock()
			b.reqs[r.ChatID]++
			b.mu.Unlock()
		}
		return nil
	})

	core, logs := observer.New(zap.DebugLevel)
	b.logs = logs
	log := zap.New(core)
	a, err := New(Config{Token: testToken, APIEndpoint: b.srv.Endpoint(), Logger: log.Named("telegram")})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(append([]engine.Option{engine.WithAdapter(a), engine.WithLogger(log.Named("engine"))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Use(ping.New(), echo.New(), count.New(), help.New()); err != nil {
		t.Fatal(err)
	}
	if register != nil {
		register(e)
	}
	b.e = e
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { b.done <- e.Run(ctx) }()
	t.Cleanup(func() {
		if err := b.stop(t); err != nil {
			t.Errorf("Run = %v; want nil", err)
		}
		assertNoTokenInLogs(t, logs)
		assertNoNullParams(t, b.srv)
		for _, name := range []string{"engine", "telegram"} {
			if logs.FilterLoggerName(name).Len() == 0 {
				t.Errorf("logger %q logged nothing: the token check proved nothing for it", name)
			}
		}
	})
	return b
}

// stop cancels Run and waits for it, failing the test if it takes longer
// than waitPeriod; later calls return the first call's result.
func (b *tgEngine) stop(t *testing.T) error {
	t.Helper()
	b.stopOnce.Do(func() {
		began := time.Now()
		b.cancel()
		select {
		case b.runErr = <-b.done:
			b.stopTook = time.Since(began)
		case <-time.After(waitPeriod):
			b.runErr = fmt.Errorf("Run did not return within %v", waitPeriod)
		}
	})
	return b.runErr
}

// requests returns how many sendMessage requests for chat the server got.
func (b *tgEngine) requests(chat int64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reqs[chat]
}

// say makes a user send text in chat: the user with the chat's ID in a
// private chat, ann in a group.
func (b *tgEngine) say(chat int64, text string) {
	from := ann
	if chat > 0 {
		from = tgbotapi.User{ID: chat, FirstName: "User" + strconv.FormatInt(chat, 10)}
	}
	b.srv.SendUserMessage(chat, from, text)
}

// waitTexts waits until chat got at least len(want) messages and fails
// unless their texts are exactly want so far.
func (b *tgEngine) waitTexts(t *testing.T, ctx context.Context, chat int64, want []string) []telegramtest.SentMessage {
	t.Helper()
	sent, err := b.srv.WaitSent(ctx, chat, len(want))
	if err != nil {
		t.Fatalf("chat %d: %v; got %q, want %q", chat, err, tgTexts(sent), want)
	}
	if got := tgTexts(sent); !slices.Equal(got, want) {
		t.Fatalf("chat %d got %q; want %q", chat, got, want)
	}
	return sent
}

func tgTexts(ms []telegramtest.SentMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

// tgNumbered returns "1" … "n" after prefix.
func tgNumbered(n int, prefix ...string) []string {
	out := append([]string(nil), prefix...)
	for i := 1; i <= n; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// tgNotFaster fails if the times at, in order, outpaced a token bucket
// of rate r per second and burst that was at most full at start: the k-th
// send (counting from 1) cannot have been accepted before
// start + (k-burst)/r, give or take one token: Telegram's accept times
// come after the token was taken, but a reservation given back (a send
// that must wait for its chat's budget returns the global token it took)
// restores tokens as x/time/rate reckons them, which may let one send
// through up to a token's interval early.
func tgNotFaster(t *testing.T, what string, start time.Time, at []time.Time, r float64, burst int) {
	t.Helper()
	for i, ts := range at {
		k := i + 1
		if k <= burst {
			continue
		}
		earliest := start.Add(time.Duration(float64(k-burst-1)/r*float64(time.Second)) - time.Millisecond)
		if ts.Before(earliest) {
			t.Errorf("%s: send %d accepted %v after the start; a limit of %v/s with burst %d allows it no sooner than %v",
				what, k, ts.Sub(start), r, burst, earliest.Sub(start))
		}
	}
}

func tgTimes(ms []telegramtest.SentMessage) []time.Time {
	out := make([]time.Time, len(ms))
	for i, m := range ms {
		out[i] = m.At
	}
	return out
}

// TestEngineTelegram runs the real engine, plugins and sender chain over the
// adapter against the fake Bot API.
func TestEngineTelegram(t *testing.T) {
	t.Parallel()
	// 30 chats (a third of them groups) each send /count 10 and /echo: every
	// reply arrives exactly once, in order per chat, and never faster than
	// the rate limits allow, per chat and overall.
	t.Run("flood", func(t *testing.T) {
		t.Parallel()
		lim := sender.RateLimitConfig{Global: 400, GlobalBurst: 20, PerChat: 25, PerChatBurst: 3, PerGroup: 25, PerGroupBurst: 3}
		b := startTgEngine(t, nil, engine.WithRateLimit(DefaultName, lim))
		const chats, n = 30, 10
		ids := make([]int64, chats)
		for i := range ids {
			ids[i] = int64(1000 + i)
			if i%3 == 2 {
				ids[i] = -ids[i]
			}
		}
		start := time.Now()
		for i, id := range ids {
			b.say(id, "/count "+strconv.Itoa(n))
			b.say(id, "/echo hi "+strconv.Itoa(i))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		want := make([][]string, chats)
		for i, id := range ids {
			want[i] = append(tgNumbered(n), "hi "+strconv.Itoa(i))
			b.waitTexts(t, ctx, id, want[i])
		}
		if err := b.stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
		// Run has returned: nothing more can arrive.
		var all []time.Time
		for i, id := range ids {
			sent := b.srv.Sent(id)
			if got := tgTexts(sent); !slices.Equal(got, want[i]) {
				t.Errorf("chat %d got %q; want exactly %q", id, got, want[i])
			}
			tgNotFaster(t, fmt.Sprintf("chat %d", id), start, tgTimes(sent), float64(lim.PerChat), lim.PerChatBurst)
			all = append(all, tgTimes(sent)...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].Before(all[j]) })
		tgNotFaster(t, "all chats", start, all, float64(lim.Global), lim.GlobalBurst)
		if got := len(b.srv.AllSent()); got != chats*(n+1) {
			t.Errorf("server accepted %d messages; want %d", got, chats*(n+1))
		}
		st := b.e.Stats()
		if st.Sends.Delivered != chats*(n+1) || st.Sends.Retries != 0 || st.DeadLetters != 0 || st.Outbound.Rejected != 0 || st.Dropped != 0 {
			t.Errorf("stats = %+v; want %d delivered, no retries, dead letters, rejections or drops", st, chats*(n+1))
		}
		t.Logf("%d replies to %d chats in %v", chats*(n+1), chats, all[len(all)-1].Sub(start).Round(time.Millisecond))
	})

	// With Telegram's own limits: 1/s per chat and 20/min per group, each
	// with a burst of 3.
	t.Run("TelegramLimits", func(t *testing.T) {
		t.Parallel()
		lim := sender.TelegramLimits()
		b := startTgEngine(t, nil, engine.WithRateLimit(DefaultName, lim))
		const private, group = 501, -502
		start := time.Now()
		b.say(private, "/count 5")
		b.say(group, "/count 4")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.waitTexts(t, ctx, private, tgNumbered(5))
		b.waitTexts(t, ctx, group, tgNumbered(4))
		if err := b.stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
		ps, gs := b.srv.Sent(private), b.srv.Sent(group)
		if len(ps) != 5 || len(gs) != 4 {
			t.Fatalf("sent %q and %q; want 5 and 4 messages", tgTexts(ps), tgTexts(gs))
		}
		tgNotFaster(t, "private chat", start, tgTimes(ps), float64(lim.PerChat), lim.PerChatBurst)
		tgNotFaster(t, "group", start, tgTimes(gs), float64(lim.PerGroup), lim.PerGroupBurst)
	})

	// A 429 with retry_after pauses the chat for exactly that long: the
	// first attempt is refused, the next one comes after the time and
	// succeeds, and the replies queued behind it follow in order without
	// another 429. Other chats are not held up.
	//
	// The 429 answers the chat's first send whenever it comes (a
	// FloodWait started by the test would end on the wall clock, and an
	// engine slow to start on a loaded machine would then see no 429 at
	// all), and the wait is long enough that the other chat's three
	// replies, sent at the same time, come well before it ends.
	t.Run("429 retry_after", func(t *testing.T) {
		t.Parallel()
		b := startTgEngine(t, nil)
		const flooded, other = 601, 602
		const wait = 3 * time.Second
		var (
			mu      sync.Mutex
			refused time.Time // when the 429 was answered
		)
		b.srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
			if r.Method != "sendMessage" || r.ChatID != flooded {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if !refused.IsZero() {
				return nil
			}
			refused = time.Now()
			return &telegramtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: int(wait / time.Second)}
		})
		b.say(flooded, "/echo first")
		b.say(flooded, "/count 3")
		b.say(other, "/count 3")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		others := b.waitTexts(t, ctx, other, tgNumbered(3))
		fs := b.waitTexts(t, ctx, flooded, tgNumbered(3, "first"))
		if err := b.stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
		mu.Lock()
		floodStart := refused
		mu.Unlock()
		if first := fs[0].At; first.Before(floodStart.Add(wait)) {
			t.Errorf("chat %d: a message was accepted %v after the 429; want at least %v", flooded, first.Sub(floodStart), wait)
		}
		if last := others[len(others)-1].At; !last.Before(fs[0].At) {
			t.Errorf("chat %d was held up by chat %d's flood wait: its last reply came %v after the 429",
				other, flooded, last.Sub(floodStart))
		}
		if got := b.requests(flooded); got != 5 {
			t.Errorf("chat %d: %d sendMessage requests; want 5 (one refused with 429, then 4 accepted)", flooded, got)
		}
		if got := len(b.srv.Sent(flooded)) + len(b.srv.Sent(other)); got != 7 {
			t.Errorf("%d messages accepted; want 7", got)
		}
		if st := b.e.Stats(); st.Sends.Delivered != 7 || st.Sends.Retries != 1 || st.DeadLetters != 0 {
			t.Errorf("stats = %+v; want 7 delivered, 1 retried, no dead letters", st.Sends)
		}
	})

	// A 500 is retried, and the reply is delivered once, before the
	// replies behind it.
	t.Run("500 then success", func(t *testing.T) {
		t.Parallel()
		b := startTgEngine(t, nil,
			engine.WithSenderConfig(sender.DefaultConfig{Retry: sender.RetryConfig{BaseBackoff: 20 * time.Millisecond}}))
		const chat = 701
		b.srv.Inject(telegramtest.Fault{Method: "sendMessage", ChatID: chat, Status: 500, Times: 1, Description: "Internal Server Error"})
		b.say(chat, "/ping")
		b.say(chat, "/echo after")
		ctx := waitCtx(t)
		if _, err := b.srv.WaitSent(ctx, chat, 2); err != nil {
			t.Fatal(err)
		}
		if err := b.stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
		sent := b.srv.Sent(chat)
		if got := tgTexts(sent); len(got) != 2 || !strings.HasPrefix(got[0], "pong") || got[1] != "after" {
			t.Fatalf("chat got %q; want exactly pong, after", got)
		}
		if got := b.requests(chat); got != 3 {
			t.Errorf("%d sendMessage requests; want 3 (one 500, then 2 accepted)", got)
		}
		if st := b.e.Stats(); st.Sends.Delivered != 2 || st.Sends.Retries != 1 || st.Sends.Attempts != 3 || st.DeadLetters != 0 {
			t.Errorf("stats = %+v; want 2 delivered in 3 attempts, 1 retried, no dead letters", st.Sends)
		}
	})

	// A 403 (the user blocked the bot) is permanent: not retried, kept as a
	// dead letter with the error; other chats are unaffected; after the
	// user unblocks the bot, a replay delivers it.
	t.Run("403 dead letter and replay", func(t *testing.T) {
		t.Parallel()
		b := startTgEngine(t, nil)
		const blocked, other = 801, 802
		unblock := b.srv.Block(blocked)
		b.say(blocked, "/echo are you there")
		b.say(other, "/echo hello")
		ctx := waitCtx(t)
		b.waitTexts(t, ctx, other, []string{"hello"})
		succeedsSoon(t, func() error {
			if n := len(b.e.DeadLetters()); n != 1 {
				return fmt.Errorf("%d dead letters; want 1", n)
			}
			return nil
		})
		dl := b.e.DeadLetters()[0]
		if dl.Request.Target.ID != strconv.Itoa(blocked) || dl.Request.Message.Text != "are you there" || dl.Attempts != 1 {
			t.Errorf("dead letter = %+v; want the reply to chat %d after 1 attempt", dl, blocked)
		}
		var apiErr *APIError
		if !platform.IsPermanent(dl.Err) || !errors.As(dl.Err, &apiErr) || apiErr.Code != 403 || !errors.Is(dl.Err, platform.ErrBlocked) {
			t.Errorf("dead letter error = %v; want a permanent 403, platform.ErrBlocked", dl.Err)
		}
		if got := b.requests(blocked); got != 1 || len(b.srv.Sent(blocked)) != 0 {
			t.Errorf("chat %d: %d requests, %d accepted; want 1 refused request", blocked, got, len(b.srv.Sent(blocked)))
		}

		unblock()
		n, err := b.e.ReplayDeadLetters(ctx)
		if n != 1 || err != nil {
			t.Fatalf("ReplayDeadLetters = %d, %v; want 1, nil", n, err)
		}
		b.waitTexts(t, ctx, blocked, []string{"are you there"})
		if err := b.stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if len(b.srv.Sent(blocked)) != 1 || len(b.srv.Sent(other)) != 1 {
			t.Errorf("sent %q and %q; want one message each", tgTexts(b.srv.Sent(blocked)), tgTexts(b.srv.Sent(other)))
		}
		if st := b.e.Stats(); st.DeadLetters != 0 || st.Sends.DeadLettered != 1 || st.Sends.Delivered != 2 {
			t.Errorf("stats = %+v; want 1 dead-lettered then replayed, 2 delivered, none kept", st)
		}
	})

	// An inline button press reaches a handler registered with OnEvent,
	// with the button's data, and the adapter answers the callback query.
	t.Run("callback", func(t *testing.T) {
		t.Parallel()
		var (
			mu      sync.Mutex
			presses []platform.Event
		)
		b := startTgEngine(t, func(e *engine.Engine) {
			e.OnCommand("buttons", func(c *engine.Context) error {
				c.Reply(platform.OutboundMessage{Text: "Choose", Buttons: [][]platform.Button{
					{{Text: "Yes", Data: "yes"}, {Text: "No", Data: "no"}},
				}})
				return nil
			})
			e.OnEvent(platform.EventCallback, func(c *engine.Context) error {
				mu.Lock()
				presses = append(presses, c.Event())
				mu.Unlock()
				c.ReplyText("you pressed " + c.Event().Text)
				return nil
			})
		})
		const chat = 901
		b.say(chat, "/buttons")
		ctx := waitCtx(t)
		sent := b.waitTexts(t, ctx, chat, []string{"Choose"})
		kb := sent[0].Keyboard
		if len(kb) != 1 || len(kb[0]) != 2 || kb[0][0].CallbackData == nil || *kb[0][0].CallbackData != "yes" {
			t.Fatalf("keyboard = %+v; want Yes and No buttons", kb)
		}
		id := b.srv.PushCallback(chat, tgbotapi.User{ID: chat, FirstName: "Presser"}, sent[0].MessageID, "yes")
		b.waitTexts(t, ctx, chat, []string{"Choose", "you pressed yes"})
		err := b.srv.WaitUntil(ctx, func() bool {
			return slices.ContainsFunc(b.srv.CallbackAnswers(), func(a telegramtest.CallbackAnswer) bool { return a.CallbackQueryID == id })
		})
		if err != nil {
			t.Fatalf("callback query %s not answered: %v (answers %+v)", id, err, b.srv.CallbackAnswers())
		}
		if err := b.stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(presses) != 1 {
			t.Fatalf("handler saw %d presses; want 1", len(presses))
		}
		ev := presses[0]
		if ev.Kind != platform.EventCallback || ev.Text != "yes" || ev.Chat.ID != strconv.Itoa(chat) ||
			ev.MessageID != strconv.Itoa(sent[0].MessageID) || ev.From.Name == "" {
			t.Errorf("callback event = %+v; want data yes under message %d in chat %d", ev, sent[0].MessageID, chat)
		}
		if n := len(b.srv.CallbackAnswers()); n != 1 {
			t.Errorf("%d callback answers; want 1", n)
		}
	})
}

// TestEngineTelegramShutdownDuringLongPoll stops the engine while the
// adapter waits in a 30 s long poll: Run returns at once (within a second,
// which stopBound relaxes for a loaded machine), with no goroutine left
// behind.
func TestEngineTelegramShutdownDuringLongPoll(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	// Registered first, so it runs after every other cleanup (the server's
	// Close included).
	t.Cleanup(func() { verifyNoLeaks(t, ignore) })
	b := startTgEngine(t, nil)
	const chat = 1001
	b.say(chat, "/ping")
	ctx := waitCtx(t)
	if _, err := b.srv.WaitSent(ctx, chat, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.srv.WaitUntil(ctx, func() bool { return b.srv.WaitingPolls() > 0 && b.srv.Pending() == 0 }); err != nil {
		t.Fatalf("adapter not in a long poll: %v", err)
	}
	if err := b.stop(t); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	if b.stopTook > stopBound {
		t.Errorf("Run returned %v after its context ended; want within a second (%v on a loaded machine), not after the long poll", b.stopTook, stopBound)
	}
	if n := len(b.srv.Sent(chat)); n != 1 {
		t.Errorf("chat got %d replies; want 1", n)
	}
	if st := b.e.Stats(); st.Received != 1 || st.Outbound.Running != 0 || st.Outbound.Queued != 0 {
		t.Errorf("stats = %+v; want 1 event and nothing pending", st)
	}
}

// TestEngineTelegramBacklogOverQueue starts the engine with a group's
// backlog larger than its inbound queue: the engine refuses the overflow,
// the adapter leaves it unconfirmed and asks for it again, and every
// message is handled exactly once, in order. The handler holds the first
// message until the adapter has logged a refusal, so the queue overflows
// however fast the handler would otherwise drain it.
func TestEngineTelegramBacklogOverQueue(t *testing.T) {
	t.Parallel()
	const group, n = -77, 30
	var (
		mu      sync.Mutex
		handled []string
	)
	all := make(chan struct{})
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	b := startTgEngine(t, func(e *engine.Engine) {
		e.OnEvent(platform.EventMessage, func(c *engine.Context) error {
			<-gate
			time.Sleep(time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if handled = append(handled, c.Event().Text); len(handled) == n {
				close(all)
			}
			return nil
		})
	}, engine.WithInboundQueueSize(8))
	t.Cleanup(open) // before the engine is stopped, should the test fail first
	for i := 1; i <= n; i++ {
		b.say(group, strconv.Itoa(i))
	}
	succeedsSoon(t, func() error {
		if logged(b.logs, "an update was refused") == 0 {
			return errors.New("no update refused yet")
		}
		return nil
	})
	open()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("handled %d of %d: %q", len(handled), n, handled)
	}
	ctx := waitCtx(t)
	if err := b.srv.WaitUntil(ctx, func() bool { return b.srv.Pending() == 0 }); err != nil {
		t.Fatalf("%d updates left unconfirmed: %v", b.srv.Pending(), err)
	}
	if err := b.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := tgNumbered(n); !slices.Equal(handled, want) {
		t.Fatalf("handled %q; want %q", handled, want)
	}
	if st := b.e.Stats(); st.Dropped == 0 || st.Received != n {
		t.Errorf("stats = %+v; want some refusals and %d events received", st, n)
	}
}
