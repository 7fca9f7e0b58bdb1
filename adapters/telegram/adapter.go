package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/platform"
)

// Name is the adapter's [platform.Adapter] name and every event's Platform.
const Name = "telegram"

// Adapter connects Herald to Telegram's Bot API through
// github.com/go-telegram-bot-api/telegram-bot-api/v5. It implements
// [platform.Adapter]: Run receives updates by long polling or through a
// webhook and hands them on as [platform.Event]s, and Sender sends
// messages.
//
// Create one with [New]; the zero value is not usable. An Adapter is safe
// for concurrent use: Sender may be used from any number of goroutines,
// before, during and after Run. Run itself runs once at a time.
type Adapter struct {
	cfg Config
	log *zap.Logger

	running atomic.Bool
	run     atomic.Pointer[runState] // the active Run's delivery, for WebhookHandler

	// Owned by Run (which runs once at a time), kept between runs.
	offset    int // next update ID to ask for
	confirmed int // highest offset a getUpdates call that succeeded sent

	addrMu sync.Mutex
	addr   net.Addr // the webhook listener's address while Run serves it
}

// New returns an adapter for cfg. It checks cfg and does no network I/O:
// the bot's identity (getMe) is fetched by Run, bound to Run's context, so
// New never blocks. An invalid cfg yields an error wrapping
// [ErrInvalidConfig]; it never contains the token.
func New(cfg Config) (*Adapter, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	return &Adapter{cfg: cfg, log: cfg.Logger}, nil
}

// Name returns "telegram".
func (a *Adapter) Name() string { return Name }

// Sender returns the adapter's [platform.Sender]; see [Adapter.Send] for
// what it does. It works without Run.
func (a *Adapter) Sender() platform.Sender { return platform.SenderFunc(a.Send) }

// Run receives updates until ctx ends and calls handle once for each event
// they map to, in the order Telegram delivered them, from one goroutine at
// a time; handle is not called after Run returns.
//
// Run first calls getMe to learn the bot's username (for commands),
// retrying transient failures. Then, in [Polling] mode, it calls
// deleteWebhook (keeping pending updates; getUpdates fails while a webhook
// is set, and choosing Polling mode means the webhook is unwanted) and
// polls getUpdates in its own loop: a failed poll is retried after an
// exponential backoff (0.5 s doubling to 30 s, with jitter), or after
// exactly the retry_after of a 429. Updates are confirmed to Telegram only
// past those handed to handle, so none is skipped or handled twice; when
// ctx ends Run confirms the last batch with one short call (not after
// ErrConflict or ErrUnauthorized: that call would end the long poll of the
// process that won, and those updates go to it again). In [Webhook]
// mode Run listens on Webhook.Listen (if set), registers Webhook.URL with
// setWebhook (if set) and serves [Adapter.WebhookHandler] at Webhook.Path
// until ctx ends, then shuts its server down.
//
// Updates that do not decode are skipped with a log line. Callback queries
// are answered (answerCallbackQuery with no text, so the user's spinner
// stops) by a goroutine of Run's, so the answer never holds up the updates
// behind it; answers still queued when Run returns are dropped.
//
// Run returns nil when ctx ended, within a second even in the middle of a
// long poll. It returns an error wrapping [ErrUnauthorized] when Telegram
// refuses the token, [ErrConflict] when another poller or a webhook is
// active, [ErrAlreadyRunning] when called during another Run, and other
// errors for a permanent failure (a Listen address in use, a webhook URL
// Telegram refuses). Run may be called again after it returned; polling
// then continues after the last update handled.
func (a *Adapter) Run(ctx context.Context, handle func(platform.Event)) error {
	if handle == nil {
		return errors.New("telegram: Run: nil handle func")
	}
	if !a.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer a.running.Store(false)
	err := a.runOnce(ctx, handle)
	if ctx.Err() != nil && (err == nil || errors.Is(err, ctx.Err())) {
		return nil
	}
	return scrub(err, a.cfg.Token)
}

func (a *Adapter) runOnce(ctx context.Context, handle func(platform.Event)) error {
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
	answers := make(chan string, answerQueue)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		a.answerCallbacks(answerCtx, answers)
	}()
	rs := &runState{handle: handle, username: me.UserName, answers: answers, log: a.log, seen: make(map[int]struct{})}
	a.run.Store(rs)
	defer func() {
		a.run.Store(nil)
		rs.close() // after this, handle is never called again
		stopAnswers()
		<-answered
	}()

	a.log.Info("telegram: running", zap.String("mode", string(a.cfg.Mode)), zap.String("bot", me.UserName))
	if a.cfg.Mode == Webhook {
		return a.runWebhook(ctx)
	}
	return a.runPolling(ctx, rs)
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
		a.log.Warn("telegram: request failed; retrying", zap.Error(scrub(err, a.cfg.Token)), zap.Duration("retry_in", wait))
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// Callback answering.
const (
	answerQueue   = 64              // callbacks waiting to be answered
	answerTimeout = 5 * time.Second // bound on one answerCallbackQuery
	seenWindow    = 1024            // update IDs remembered against redelivery
)

// runState is one Run's delivery of updates to handle.
type runState struct {
	handle   func(platform.Event)
	username string
	answers  chan<- string
	log      *zap.Logger

	mu     sync.Mutex // serialises deliveries; guards the fields below
	closed bool
	seen   map[int]struct{} // the last seenWindow update IDs delivered
	ring   [seenWindow]int  // the same IDs; ring[next] is the oldest once full
	next   int
	filled bool
}

// deliver hands u's events to handle unless Run has ended; it reports
// whether u was taken (delivered, or a duplicate of one that was). A
// callback query is queued for answering first.
func (rs *runState) deliver(u *tgbotapi.Update) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return false
	}
	if _, dup := rs.seen[u.UpdateID]; dup {
		rs.log.Debug("telegram: dropping a duplicate update", zap.Int("update_id", u.UpdateID))
		return true
	}
	if rs.filled {
		delete(rs.seen, rs.ring[rs.next])
	}
	rs.seen[u.UpdateID] = struct{}{}
	rs.ring[rs.next] = u.UpdateID
	rs.next = (rs.next + 1) % seenWindow
	rs.filled = rs.filled || rs.next == 0
	if cq := u.CallbackQuery; cq != nil && cq.ID != "" {
		select {
		case rs.answers <- cq.ID:
		default:
			rs.log.Warn("telegram: too many callback queries waiting; not answering one", zap.Int("update_id", u.UpdateID))
		}
	}
	for _, ev := range updateToEvents(u, rs.username, time.Now().UTC()) {
		rs.handle(ev)
	}
	return true
}

func (rs *runState) close() {
	rs.mu.Lock()
	rs.closed = true
	rs.mu.Unlock()
}

// answerCallbacks answers the callback queries sent on ids until ctx ends.
func (a *Adapter) answerCallbacks(ctx context.Context, ids <-chan string) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-ids:
			cctx, cancel := context.WithTimeout(ctx, answerTimeout)
			_, err := a.request(cctx, "answerCallbackQuery", tgbotapi.NewCallback(id, ""))
			cancel()
			if err != nil && ctx.Err() == nil {
				a.log.Warn("telegram: answering a callback query failed", zap.Error(scrub(err, a.cfg.Token)))
			}
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

func (a *Adapter) setAddr(addr net.Addr) {
	a.addrMu.Lock()
	a.addr = addr
	a.addrMu.Unlock()
}
