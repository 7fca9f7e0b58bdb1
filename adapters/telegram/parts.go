package telegram

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/platform"
)

// The pacing and retries of the parts of a message after the first.
const (
	// privatePause is the pause before each later part in a private chat:
	// Telegram asks bots to send no more than about one message per second
	// to a chat.
	privatePause = time.Second
	// groupPause is the pause in a group or channel: Telegram allows a bot
	// 20 messages a minute in a group, one every 3 s.
	groupPause = 3 * time.Second
	// partReserve is the time kept back for each part still to send when a
	// deadline leaves too little room for the whole pauses.
	partReserve = 500 * time.Millisecond

	// maxPartAttempts is the most attempts a later part gets, counting the
	// first.
	maxPartAttempts = 4
	// minPartBackoff and maxPartBackoff bound the backoff after a
	// transient failure of a later part: 0.5 s doubling to 4 s, jittered.
	minPartBackoff = 500 * time.Millisecond
	maxPartBackoff = 4 * time.Second
	// maxPartRetryAfter is the longest retry_after a later part waits for.
	maxPartRetryAfter = time.Minute
)

// partPause returns the pause before each part after the first for a
// message to target: groupPause for groups and channels (a Target.Type
// saying so, or, without one, a negative chat ID or an @username), else
// privatePause.
func partPause(target platform.Chat) time.Duration {
	switch target.Type {
	case platform.ChatPrivate:
		return privatePause
	case platform.ChatGroup, platform.ChatChannel:
		return groupPause
	}
	if strings.HasPrefix(target.ID, "-") || strings.HasPrefix(target.ID, "@") {
		return groupPause
	}
	return privatePause
}

// paceFor returns how long to pause before a later part when left parts,
// this one included, are still to send: pause, or, when ctx's deadline
// leaves less room than left pauses and partReserve for each part, an
// equal share of what room there is (zero when there is none).
func paceFor(ctx context.Context, pause time.Duration, left int) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok {
		return pause
	}
	n := time.Duration(max(left, 1))
	spare := time.Until(deadline) - n*partReserve
	return max(0, min(pause, spare/n))
}

// sendLaterPart sends part number i (counting from 0, i ≥ 1) of n to dest,
// once parts 0 to i-1 were delivered. Those must not be sent again, so the
// caller must never retry the whole message: sendLaterPart paces the part
// (see [paceFor]) and retries it itself, and its errors are all
// [platform.Permanent], naming the part and saying that the earlier ones
// were delivered. It waits out a 429's retry_after exactly (up to
// maxPartRetryAfter; it gives up at once if the wait would outlast ctx's
// deadline) and backs off after a 5xx or network failure, for
// maxPartAttempts attempts in all; a permanent error, or the end of ctx,
// ends it at once.
func (a *Adapter) sendLaterPart(ctx context.Context, dest *destination, p part, i, n int, pause time.Duration) (tgbotapi.Message, error) {
	fail := func(err error) (tgbotapi.Message, error) {
		delivered := "part 1 was"
		if i > 1 {
			delivered = fmt.Sprintf("parts 1 to %d were", i)
		}
		return tgbotapi.Message{}, platform.Permanent(fmt.Errorf(
			"telegram: part %d of %d failed; %s delivered and must not be sent again: %w", i+1, n, delivered, err))
	}
	if !backoff.Sleep(ctx, paceFor(ctx, pause, n-i)) {
		return fail(ctx.Err())
	}
	for attempt := 1; ; attempt++ {
		msg, err := a.sendPartTo(ctx, dest, p)
		if err == nil {
			return msg, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return fail(fmt.Errorf("%w (after: %w)", cerr, err))
		}
		if platform.IsPermanent(err) || attempt == maxPartAttempts {
			return fail(err)
		}
		wait, ok := platform.RetryAfterOf(err)
		if !ok {
			wait = backoff.EqualJitter(backoff.Exponential(attempt-1, minPartBackoff, maxPartBackoff), rand.Float64())
		} else if wait > maxPartRetryAfter {
			return fail(fmt.Errorf("retry_after %v is over %v: %w", wait, maxPartRetryAfter, err))
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fail(fmt.Errorf("waiting %v would outlast the deadline: %w", wait, err))
		}
		a.log.Warn("telegram: a part of a long message failed; retrying it",
			zap.Int("part", i+1), zap.Int("parts", n), zap.String("chat_id", dest.chatID),
			zap.Error(scrub(err, a.cfg.Token)), zap.Duration("retry_in", wait))
		if !backoff.Sleep(ctx, wait) {
			return fail(fmt.Errorf("%w (after: %w)", ctx.Err(), err))
		}
	}
}
