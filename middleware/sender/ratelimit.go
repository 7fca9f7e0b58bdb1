package sender

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldbot/herald/platform"
)

// DefaultIdleTTL is how long a chat's limiters are kept unused before
// [RateLimit] drops them, when RateLimitConfig.IdleTTL is zero.
const DefaultIdleTTL = 10 * time.Minute

// RateLimitConfig configures [RateLimit]. Limits are token buckets from
// golang.org/x/time/rate: a limit is a steady rate in sends per second (use
// rate.Every for "one per interval") and its burst is how many sends may go
// at once after a quiet spell. Over any span of time t, at most
// burst + limit·t sends pass a limiter.
//
// The zero value sets no limit; to the engine it means "not set", and the
// engine then applies the budget the adapter publishes. Off says "no
// limit" explicitly: the engine then applies none at all.
type RateLimitConfig struct {
	// Off turns rate limiting off, whatever else is set: RateLimit returns
	// the sender unchanged, and the engine applies no limit to the
	// adapter, not even the budget it publishes.
	Off bool

	// Global limits all sends of one platform (one SendRequest.Platform)
	// through the decorated sender. Zero, a negative value or rate.Inf means
	// no global limit.
	Global rate.Limit
	// GlobalBurst is the global limiter's burst. Zero or negative means 1.
	GlobalBurst int

	// PerChat limits the sends to each chat (each SendRequest.Platform and
	// Target.ID pair). Zero, a negative value or rate.Inf means no per-chat
	// limit.
	PerChat rate.Limit
	// PerChatBurst is each chat limiter's burst. Zero or negative means 1.
	PerChatBurst int

	// PerGroup additionally limits the sends to each chat whose Target.Type
	// is platform.ChatGroup; such a send takes both a per-chat and a
	// per-group token. Zero, a negative value or rate.Inf means no per-group
	// limit.
	PerGroup rate.Limit
	// PerGroupBurst is each group limiter's burst. Zero or negative means 1.
	PerGroupBurst int

	// IdleTTL is how long a chat's limiters (and pause) are kept after the
	// chat's last send; then they are dropped, so memory follows the chats
	// active within IdleTTL, not every chat ever seen. Zero or negative means
	// DefaultIdleTTL (10 minutes). It is raised, if needed, to the time a
	// chat's empty buckets take to refill, so dropping a limiter never lets
	// a chat send more than keeping it would have.
	IdleTTL time.Duration

	// GlobalPause makes a retry-after from any chat pause every send of that
	// platform, for platforms whose rate-limit replies mean the bot as a
	// whole is over budget. When false (the default) a retry-after pauses
	// only its own chat, unless the request had an empty Target.ID, which
	// pauses the whole platform.
	GlobalPause bool
}

// TelegramLimits returns the budget Telegram publishes for bots: about 30
// messages per second overall (burst 3), one message per second to a chat
// (burst 3), and 20 messages per minute to a group: a burst of 3, then 17
// a minute, so that no 60 seconds hold more than 20 (a bucket lets its
// burst and a minute's refill through in one minute). Telegram's limits
// are approximate; a 429 it still sends pauses the chat (see [RateLimit])
// and is retried by [Retry].
func TelegramLimits() RateLimitConfig {
	return RateLimitConfig{
		Global:        30,
		GlobalBurst:   3,
		PerChat:       1,
		PerChatBurst:  3,
		PerGroup:      17.0 / 60, // with the burst, 20 in any minute
		PerGroupBurst: 3,
	}
}

// LimitsOf returns the RateLimitConfig of a platform's published budget
// (see [platform.LimitedAdapter]); zero rates stay unlimited.
func LimitsOf(l platform.Limits) RateLimitConfig {
	lim := func(perSecond float64) rate.Limit {
		if perSecond <= 0 {
			return 0
		}
		return rate.Limit(perSecond)
	}
	return RateLimitConfig{
		Global: lim(l.PerSecond), GlobalBurst: l.Burst,
		PerChat: lim(l.PerChatPerSecond), PerChatBurst: l.PerChatBurst,
		PerGroup: lim(l.PerGroupPerSecond), PerGroupBurst: l.PerGroupBurst,
	}
}

// RateLimit returns a decorator that delays sends to stay within cfg's limits.
//
// A send waits, in this order, for: its chat (and its platform) to stop
// being paused; per-chat tokens and, for a group, per-group tokens; then
// global tokens, taken last so the global budget is spent as close to the
// actual send as possible. Each wait is bounded by the send's context: if the
// context ends, the send returns at once with an error wrapping ctx.Err(),
// and if a wait cannot finish before the context's deadline it is not
// started: the send fails at once with an error that wraps
// [ErrWouldExceedDeadline] and carries the wait as a retry-after
// ([platform.RetryAfterOf]). In both cases the tokens the send reserved and
// was still waiting for are given back.
//
// A send takes req.Message.Cost() tokens of each kind ([platform.OutboundMessage]
// Cost): one, or one per attachment of an album, which a platform counts
// as that many messages. A cost above a limiter's burst is reserved in
// several reservations of at most the burst each, so the send waits until
// the bucket has refilled that many tokens.
//
// Waits go through the send's [platform.Progress]: for a send the engine's
// dispatcher resumes, a wait pauses the send instead of sleeping, and the
// resumed send keeps the tokens it reserved (see "Waiting without a
// worker" in the package documentation).
//
// When the sender below returns an error carrying a retry-after, RateLimit
// pauses the chat for that long, so the sends queued behind it wait instead
// of earning more rate-limit replies; see RateLimitConfig.GlobalPause for
// when the whole platform is paused instead.
//
// Each Sender the decorator wraps has its own limiters, and a global limiter
// per platform name. Chat limiters unused for IdleTTL are dropped by a sweep
// that runs inside sends, at most once per IdleTTL/2; there is no background
// goroutine.
//
// With no limit set, or Off, RateLimit returns the sender unchanged.
func RateLimit(cfg RateLimitConfig) SenderDecorator {
	cfg = cfg.withDefaults()
	return func(next platform.Sender) platform.Sender {
		if cfg.Off || cfg.Global == 0 && cfg.PerChat == 0 && cfg.PerGroup == 0 {
			return next
		}
		return &rateLimiter{
			next:      next,
			cfg:       cfg,
			platforms: make(map[string]*platformState),
			chats:     make(map[chatKey]*chatState),
		}
	}
}

func (c RateLimitConfig) withDefaults() RateLimitConfig {
	norm := func(l rate.Limit, b int) (rate.Limit, int) {
		if l <= 0 || l == rate.Inf || math.IsNaN(float64(l)) {
			return 0, 0
		}
		return l, max(b, 1)
	}
	c.Global, c.GlobalBurst = norm(c.Global, c.GlobalBurst)
	c.PerChat, c.PerChatBurst = norm(c.PerChat, c.PerChatBurst)
	c.PerGroup, c.PerGroupBurst = norm(c.PerGroup, c.PerGroupBurst)
	if c.IdleTTL <= 0 {
		c.IdleTTL = DefaultIdleTTL
	}
	refill := func(l rate.Limit, b int) time.Duration {
		if l == 0 {
			return 0
		}
		return time.Duration(math.Ceil(float64(b) / float64(l) * float64(time.Second)))
	}
	c.IdleTTL = max(c.IdleTTL, refill(c.PerChat, c.PerChatBurst), refill(c.PerGroup, c.PerGroupBurst))
	return c
}

// chatKey identifies a chat: its platform and its ID.
type chatKey struct{ platform, chat string }

// platformState is the global state of one platform.
type platformState struct {
	limiter     *rate.Limiter // nil: no global limit
	pausedUntil time.Time     // guarded by rateLimiter.mu
}

// chatState is the state of one chat. Its fields are guarded by
// rateLimiter.mu; the limiters are safe for concurrent use on their own.
type chatState struct {
	chat        *rate.Limiter // nil: no per-chat limit
	group       *rate.Limiter // nil: not a group, or no per-group limit
	pausedUntil time.Time
	lastUsed    time.Time
	users       int // sends holding this state; it is not evicted while > 0
}

type rateLimiter struct {
	next platform.Sender
	cfg  RateLimitConfig // with its defaults

	mu        sync.Mutex
	platforms map[string]*platformState
	chats     map[chatKey]*chatState
	nextSweep time.Time
}

// lease is what one send took from acquire.
type lease struct {
	p                   *platformState
	c                   *chatState
	global, chat, group *rate.Limiter
}

func (l *rateLimiter) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	ctx, p := platform.SendProgress(ctx)
	w := waiter{p: p, l: l}
	if h := takeHeld(p, l); h != nil {
		// A later run of a paused send: the tokens it reserved are ours,
		// or it had spent them already when the sender below paused it.
		w.held = *h
	}
	if err := ctx.Err(); err != nil && !w.held.spent {
		w.held.cancel()
		return platform.SendResult{}, fmt.Errorf("sender: rate limit: %w", err)
	}
	// A send whose tokens were spent before it paused below goes on even
	// after its context ended: the sender below then reports the end as
	// it would have in place (Telegram, that parts were delivered).
	key := chatKey{req.Platform, req.Target.ID}
	ls := l.acquire(key, req.Target.Type == platform.ChatGroup)
	defer l.release(ls.c)

	if !w.held.spent {
		if !w.held.chatTaken {
			if err := l.waitPause(ctx, ls, &w); err != nil {
				return platform.SendResult{}, err
			}
		}
		if err := w.waitTokens(ctx, ls, req.Message.Cost()); err != nil {
			return platform.SendResult{}, err
		}
	}
	res, err := l.next.Send(ctx, req)
	if _, paused := platform.PauseOf(err); paused {
		// Paused below, with this send's tokens spent: the next run goes
		// straight on.
		saveHeld(p, &heldTokens{owner: l, spent: true})
		return res, err
	}
	if err != nil {
		if d, ok := platform.RetryAfterOf(err); ok && d > 0 {
			l.pause(key, ls, d)
		}
	}
	return res, err
}

// acquire finds or creates the platform's and the chat's state and marks the
// chat state in use. It runs the idle sweep when one is due.
func (l *rateLimiter) acquire(key chatKey, group bool) lease {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !now.Before(l.nextSweep) {
		l.sweepLocked(now)
	}
	p := l.platforms[key.platform]
	if p == nil {
		p = &platformState{}
		if l.cfg.Global != 0 {
			p.limiter = rate.NewLimiter(l.cfg.Global, l.cfg.GlobalBurst)
		}
		l.platforms[key.platform] = p
	}
	c := l.chats[key]
	if c == nil {
		c = &chatState{}
		if l.cfg.PerChat != 0 {
			c.chat = rate.NewLimiter(l.cfg.PerChat, l.cfg.PerChatBurst)
		}
		l.chats[key] = c
	}
	if group && c.group == nil && l.cfg.PerGroup != 0 {
		c.group = rate.NewLimiter(l.cfg.PerGroup, l.cfg.PerGroupBurst)
	}
	c.users++
	ls := lease{p: p, c: c, global: p.limiter, chat: c.chat}
	if group {
		ls.group = c.group
	}
	return ls
}

// release marks the end of one send's use of c.
func (l *rateLimiter) release(c *chatState) {
	now := time.Now()
	l.mu.Lock()
	c.users--
	c.lastUsed = now
	l.mu.Unlock()
}

// sweepLocked drops the chats that have been idle for IdleTTL, are not in
// use and are not paused, and schedules the next sweep IdleTTL/2 later, so a
// chat's state lives at most 1.5·IdleTTL after its last send and the sweep's
// cost is spread over the sends in between. l.mu must be held.
func (l *rateLimiter) sweepLocked(now time.Time) {
	for k, c := range l.chats {
		if c.users == 0 && now.Sub(c.lastUsed) >= l.cfg.IdleTTL && !c.pausedUntil.After(now) {
			delete(l.chats, k)
		}
	}
	l.nextSweep = now.Add(l.cfg.IdleTTL / 2)
}

// pause stops the chat's sends (and, by RateLimitConfig.GlobalPause's rule,
// the platform's) for d from now. A longer pause already in force stays.
func (l *rateLimiter) pause(key chatKey, ls lease, d time.Duration) {
	until := time.Now().Add(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	if until.After(ls.c.pausedUntil) {
		ls.c.pausedUntil = until
	}
	if (key.chat == "" || l.cfg.GlobalPause) && until.After(ls.p.pausedUntil) {
		ls.p.pausedUntil = until
	}
}

// waitPause waits until neither the chat nor its platform is paused.
func (l *rateLimiter) waitPause(ctx context.Context, ls lease, w *waiter) error {
	for {
		l.mu.Lock()
		until := ls.c.pausedUntil
		if ls.p.pausedUntil.After(until) {
			until = ls.p.pausedUntil
		}
		l.mu.Unlock()
		d := time.Until(until)
		if d <= 0 {
			return nil
		}
		if err := w.wait(ctx, d, "paused"); err != nil {
			return err
		}
		// A pause may have been extended while we waited: look again.
	}
}

// waiter waits for one send, through its Progress: in place, or, for a
// send that is resumed, by pausing it with the tokens it reserved saved in
// the Progress.
type waiter struct {
	p    *platform.Progress
	l    *rateLimiter
	held heldTokens
}

// heldTokens are the reservations a send has made so far at one limiter.
// A Progress holds those of a paused send (its value under heldKey): one
// per limiter the send passes, linked. The scheduler that owns the
// Progress releases them once the send's outcome is final
// (platform.Progress.Release).
type heldTokens struct {
	owner      *rateLimiter
	chatTaken  bool // the chat and group tokens are reserved
	rc, rg, rp reservation
	spent      bool        // the tokens were used by a call to the sender below
	next       *heldTokens // another limiter's, in the same Progress
}

// cancel gives back the reserved tokens not yet used.
func (h *heldTokens) cancel() { cancelReservations(h.rc, h.rg, h.rp) }

// Release gives back every reservation held in the list h starts
// (platform.Releaser).
func (h *heldTokens) Release() {
	for ; h != nil; h = h.next {
		h.cancel()
	}
}

// heldKey keys the tokens a send holds in its Progress.
type heldKey struct{}

// takeHeld removes and returns what l holds in p, or nil.
func takeHeld(p *platform.Progress, l *rateLimiter) *heldTokens {
	head, _ := p.Value(heldKey{}).(*heldTokens)
	for link := &head; *link != nil; link = &(*link).next {
		if h := *link; h.owner == l {
			*link = h.next
			h.next = nil
			if head == nil {
				p.SetValue(heldKey{}, nil)
			} else {
				p.SetValue(heldKey{}, head)
			}
			return h
		}
	}
	return nil
}

// saveHeld keeps h in p for the send's next run.
func saveHeld(p *platform.Progress, h *heldTokens) {
	h.next, _ = p.Value(heldKey{}).(*heldTokens)
	p.SetValue(heldKey{}, h)
}

// waitTokens takes n chat tokens (and group tokens) and then n global
// tokens, waiting for each as the limiters say, and gives back reserved
// tokens it was still waiting for when it stops early. A resumed send
// takes the tokens it reserved before it paused.
func (w *waiter) waitTokens(ctx context.Context, ls lease, n int) error {
	h := &w.held
	now := time.Now()
	if !h.chatTaken {
		if ls.chat != nil {
			h.rc = reserve(ls.chat, now, n)
		}
		if ls.group != nil {
			h.rg = reserve(ls.group, now, n)
		}
		h.chatTaken = true
	}
	var d time.Duration
	if h.rc != nil {
		d = h.rc.DelayFrom(now)
	}
	if h.rg != nil {
		d = max(d, h.rg.DelayFrom(now))
	}
	if d > 0 {
		if err := w.wait(ctx, d, "chat limit"); err != nil {
			return err
		}
	}
	if ls.global == nil {
		return nil
	}
	now = time.Now()
	if h.rp == nil {
		h.rp = reserve(ls.global, now, n)
	}
	if d = h.rp.DelayFrom(now); d > 0 {
		return w.wait(ctx, d, "global limit")
	}
	return nil
}

// wait waits d for what (a pause, or tokens) with Progress.Wait. It returns
// a context's error or ErrWouldExceedDeadline, through waitError, having
// given back the held tokens; or, for a send that is resumed, the pause,
// having saved the held tokens for its next run.
func (w *waiter) wait(ctx context.Context, d time.Duration, what string) error {
	err := w.p.Wait(ctx, d)
	if err == nil {
		return nil
	}
	if _, paused := platform.PauseOf(err); paused {
		if w.held.chatTaken {
			saved := w.held
			saved.owner = w.l
			saveHeld(w.p, &saved)
		}
		return err
	}
	w.held.cancel()
	return waitError(what, d, err)
}

func cancelReservations(rs ...reservation) {
	now := time.Now()
	for _, r := range rs {
		r.CancelAt(now)
	}
}

// reservation is n tokens reserved at one limiter for one send: one
// rate.Reservation per burst's worth of them, since ReserveN refuses more
// than the burst at once. nil holds none.
type reservation []*rate.Reservation

// reserve reserves n (at least 1) tokens of lim at now.
func reserve(lim *rate.Limiter, now time.Time, n int) reservation {
	n = max(n, 1)
	b := max(lim.Burst(), 1)
	r := make(reservation, 0, (n+b-1)/b)
	for ; n > 0; n -= b {
		r = append(r, lim.ReserveN(now, min(n, b)))
	}
	return r
}

// DelayFrom is how long after now the last of the tokens may be used.
func (r reservation) DelayFrom(now time.Time) time.Duration {
	if len(r) == 0 {
		return 0
	}
	return r[len(r)-1].DelayFrom(now)
}

// CancelAt gives the tokens back, the latest reserved first.
func (r reservation) CancelAt(now time.Time) {
	for i := len(r) - 1; i >= 0; i-- {
		r[i].CancelAt(now)
	}
}

// waitError wraps the error of a rate-limit wait of d: a context's error as
// it is, ErrWouldExceedDeadline inside a retry-after of d, so Retry and
// callers can see how long the wait would have been.
func waitError(what string, d time.Duration, err error) error {
	if errors.Is(err, ErrWouldExceedDeadline) {
		return fmt.Errorf("sender: rate limit: %s: %w", what, platform.NewRetryAfter(d, err))
	}
	return fmt.Errorf("sender: rate limit: %s: %w", what, err)
}
