package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/internal/httpserve"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/platform"
)

var _ platform.Adapter = (*Adapter)(nil)

// DefaultName is the adapter's [platform.Adapter] name, and every event's Platform,
// unless [Config.Name] gives another.
const DefaultName = "telegram"

// Adapter connects Herald to Telegram's Bot API through
// github.com/go-telegram-bot-api/telegram-bot-api/v5. It implements
// [platform.Adapter]: Run receives updates by long polling or through a
// webhook and hands them on as [platform.Event]s, confirming to Telegram
// only the updates taken, and Sender sends messages.
//
// Create one with [New]; the zero value is not usable. An Adapter is safe
// for concurrent use: Sender and WebhookHandler may be used from any
// number of goroutines, before, during and after a run. Runs go one at a
// time (a second call returns
// [ErrAlreadyRunning]); the next run continues where the last one
// stopped.
type Adapter struct {
	cfg     Config
	log     *zap.Logger
	limited *ratelog.Logger  // for lines that could repeat per update, request or send
	red     *redact.Redactor // keeps the token and the webhook's secret out of logs and errors

	running  atomic.Bool
	noDrafts atomic.Bool              // Telegram refused a message draft: streams edit instead
	run      atomic.Pointer[runState] // the active Run's delivery, for WebhookHandler
	// receiving is set while a listening Run serves the webhook (receive.go);
	// username is what the last getMe said.
	receiving atomic.Bool
	username  atomic.Pointer[string]

	answers sync.Pool // *answerBuf: Bot API answers being read (see post)
	urls    urlCache  // methods' URLs (see post)

	taken   *ledger       // updates handed on, kept between runs
	presses *pressTracker // button presses handed on, and their answers
	stats   counters

	// The webhook's bounds, and how long a press waits for an answer
	// before the run answers it (autoAnswerAfter); tests may change them
	// before a run.
	web          httpserve.Limits
	budget       *byteBudget // bytes of large webhook bodies read at once
	autoAnswer   time.Duration
	autoCheckout time.Duration // how long a pre-checkout query waits, likewise

	// Owned by Run (which runs once at a time), kept between runs.
	offset    int // next update ID to ask for
	confirmed int // the offset the last getUpdates call that succeeded sent

	addrMu sync.Mutex
	addr   net.Addr          // the webhook listener's address while Run serves it
	server *httpserve.Server // and its server
}

// New returns an adapter for cfg. It checks cfg and does no network I/O:
// the bot's identity (getMe) is fetched by Run, bound to Run's context, so
// New never blocks. An invalid cfg yields an error wrapping
// [ErrInvalidConfig]; it never contains the token.
func New(cfg Config) (*Adapter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Adapter{
		cfg: cfg, log: cfg.Logger, limited: ratelog.New(cfg.Logger, 0), red: redact.New(cfg.Token, cfg.Webhook.SecretToken),
		taken: newLedger(), presses: newPressTracker(),
		web: webhookLimits, budget: newByteBudget(webhookBodyBudget), autoAnswer: autoAnswerAfter, autoCheckout: autoCheckoutAfter,
	}, nil
}

// Name returns the adapter's name: [Config.Name], DefaultName ("telegram")
// unless configured.
func (a *Adapter) Name() string { return a.cfg.Name }

// Limits returns the budget Telegram publishes for bots, unless
// [Config.Limits] sets another: about 30 messages a second overall, one a
// second to a chat and 20 a minute to a group, in bursts of 3 (in a group,
// 3 at once and 17 a minute after, so that no minute holds more than 20).
// The engine rate-limits the adapter's sends by it unless configured
// otherwise (engine.WithRateLimit); it equals sender.TelegramLimits().
func (a *Adapter) Limits() platform.Limits {
	if l := a.cfg.Limits; l != nil {
		return *l
	}
	return platform.Limits{
		PerSecond: 30, Burst: 3,
		PerChatPerSecond: 1, PerChatBurst: 3,
		PerGroupPerSecond: 17.0 / 60, PerGroupBurst: 3, // 20 in any minute
	}
}

// Sender returns the adapter's [platform.Sender]; see [Adapter.Send] for
// what it does. It works without Run.
func (a *Adapter) Sender() platform.Sender { return platform.SenderFunc(a.Send) }

// Run receives updates until in.Receiving closes or ctx ends and calls
// in.Handle once for each event they map to, in the order Telegram
// delivered them, from one goroutine at a time; Handle is not called after
// Run returns. An update is confirmed to Telegram only once Handle took
// every event of it (returned nil), so an update Handle refuses (returns an
// error, as the engine does when a chat's inbound queue is full or it is
// stopping) is delivered again later, and no update is lost or handed on
// twice, within a run or across runs of one Adapter. Sends need no Run:
// once in.Receiving closes, Run confirms what it took and returns.
//
// Listening only (in.Listen: another process leads the bot), Run serves
// the webhook on Webhook.Listen and never calls Telegram, or returns nil at
// once without a Listen address: see [Adapter.Receives].
//
// Run first calls getMe to learn the bot's username (for
// commands), retrying transient failures.
//
// In [Polling] mode it then calls deleteWebhook (keeping pending updates;
// getUpdates fails while a webhook is set, and choosing Polling mode means
// the webhook is unwanted) and polls getUpdates in its own loop: a failed
// poll is retried after an exponential backoff (0.5 s doubling to 30 s,
// with jitter), or after exactly the retry_after of a 429. The offset sent
// with each poll confirms the updates handed on before it. When handle
// refuses an event, the rest of the batch waits: the offset stays at that
// update, Run waits (1 s, doubling to 16 s while the same update
// is refused) and polls again, and Telegram returns that update and those
// after it. Updates are confirmed as the run goes: after a batch was
// handed on, the next getUpdates has timeout 0, so it is answered at once
// and the batch is known to be confirmed before Run waits in a
// long poll (an offset counts as confirmed once a call that sent it was
// answered; a long poll aborted when ctx ends might not have arrived).
// When it stops, Run confirms what is left, the updates taken since the
// last answered poll, with one short call bounded by in.Stop: what is left
// of the engine's shutdown timeout, or half a second without one (not
// after ErrConflict or
// ErrUnauthorized: that call would end the long poll of the process that
// won, and those updates go to it again). A long poll that brings nothing
// long before its timeout (a server that ignores it) is followed by the
// next no sooner than 0.5 s after it began.
//
// In [Webhook] mode it listens on Webhook.Listen (if set), registers
// Webhook.URL with setWebhook (if set, with Webhook.MaxConnections) and
// serves [Adapter.WebhookHandler] at Webhook.Path until ctx ends, then
// shuts its server down. A refused update is answered 503, so Telegram
// sends it again.
//
// Either way, the events of an update taken before handle refused a later
// one of it (an update with several new members) are not handed on again,
// and an update delivered again after it was taken (a webhook request
// Telegram repeated after a timeout) is dropped: Run remembers the
// last 1024 update IDs taken. Updates that do not decode are skipped with
// a log line. Button presses (callback queries) are left for the engine
// to answer (see [Adapter.AnswerCallback]: the handler's answer, or an
// empty one once the handling ended); one nothing answered within 10 s of
// its arrival is answered empty by a goroutine of Run's, so the
// user's button stops spinning before Telegram would refuse a late answer.
//
// Run returns nil when it was told to stop, within a second even in the
// middle of a long poll, plus the confirming call if one is needed. It
// returns an error wrapping [ErrUnauthorized]
// when Telegram refuses the token, [ErrConflict] when another poller or a
// webhook is active, [ErrAlreadyRunning] when called during another Run,
// and other errors for a permanent failure (a Listen address in use, a
// webhook URL Telegram refuses). It may be called again after it returned;
// polling then continues after the last update taken.
func (a *Adapter) Run(ctx context.Context, in platform.Inbound) error {
	if in.Handle == nil {
		return errors.New("telegram: Run: nil Handle func")
	}
	if in.Listen {
		if !a.Receives() {
			return nil
		}
		return a.receive(ctx, in)
	}
	if !a.running.CompareAndSwap(false, true) {
		return fmt.Errorf("telegram: Run: %w", ErrAlreadyRunning)
	}
	defer a.running.Store(false)
	rctx, cancel := in.Receive(ctx) // sends need no Run: it stops with its intake
	defer cancel()
	err := a.runOnce(rctx, in)
	if rctx.Err() != nil && (err == nil || errors.Is(err, rctx.Err())) {
		return nil
	}
	return a.red.Error(err)
}

func (a *Adapter) runOnce(ctx context.Context, in platform.Inbound) error {
	var me tgbotapi.User
	err := a.retrying(ctx, func(ctx context.Context) error {
		raw, err := a.makeRequest(ctx, "getMe", nil)
		if err == nil {
			err = json.Unmarshal(raw, &me)
		}
		return err
	})
	if err != nil {
		return err
	}

	answerCtx, stopAnswers := context.WithCancel(ctx)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		a.answerLate(answerCtx)
	}()
	a.username.Store(&me.UserName)
	defer func() {
		stopAnswers()
		<-answered
	}()
	a.log.Info("telegram: running", zap.String("mode", string(a.cfg.Mode)), zap.String("bot", me.UserName))
	if a.cfg.Mode == Webhook && a.receiving.Load() {
		// A listening Run serves the webhook in this process: register it only.
		return a.runWebhook(ctx, false)
	}
	rs := a.newRunState(in, me.UserName)
	rs.stop = in.Stop
	a.run.Store(rs)
	defer func() {
		a.run.Store(nil)
		rs.close() // after this, handle is never called again
	}()
	if a.cfg.Mode == Webhook {
		return a.runWebhook(ctx, true)
	}
	return a.runPolling(ctx, rs)
}

// newRunState returns the delivery of a run, leading or listening, to
// in's Handle while in takes events.
func (a *Adapter) newRunState(in platform.Inbound, username string) *runState {
	return &runState{name: a.cfg.Name, handle: in.Handle, handleAll: in.HandleAll, taking: in.Taking, username: username, presses: a.presses, log: a.log, limited: a.limited, taken: a.taken, stats: &a.stats}
}

// retrying calls fn until it succeeds, retrying transient failures as
// [runFailure] says. It returns nil, ctx's error, or the fatal error.
func (a *Adapter) retrying(ctx context.Context, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		wait, fatal := runFailure(err, attempt, rand.Float64())
		if fatal != nil {
			return fatal
		}
		a.limited.Warn("telegram: request failed; retrying", zap.Error(a.red.Error(err)), zap.Duration("retry_in", wait))
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// WebhookAddr returns the address Run's webhook server listens on, or nil
// when Run is not serving one (Polling mode, no Webhook.Listen, or Run not
// running). With Listen ":0" it tells which port was chosen.
func (a *Adapter) WebhookAddr() net.Addr {
	a.addrMu.Lock()
	defer a.addrMu.Unlock()
	return a.addr
}

func (a *Adapter) setAddr(addr net.Addr, srv *httpserve.Server) {
	a.addrMu.Lock()
	a.addr, a.server = addr, srv
	a.addrMu.Unlock()
}

// allowedUpdates returns the allowed_updates to send: Config.AllowedUpdates,
// or UpdateTypes when it is nil.
func (a *Adapter) allowedUpdates() []string {
	if a.cfg.AllowedUpdates == nil {
		return UpdateTypes
	}
	return a.cfg.AllowedUpdates
}
