package telegram

import (
	"context"
	"encoding/json"
	"errors"
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
// this one included, are still to send: pause, or, when the send's
// deadline leaves less room than left pauses and partReserve for each
// part, an equal share of what room there is (zero when there is none).
func paceFor(ctx context.Context, pause time.Duration, left int) time.Duration {
	deadline, ok := sendDeadline(ctx)
	if !ok {
		return pause
	}
	n := time.Duration(max(left, 1))
	spare := time.Until(deadline) - n*partReserve
	return max(0, min(pause, spare/n))
}

// sendDeadline returns the deadline of ctx's send: the end of its life for
// a send the dispatcher resumes (see platform.Progress), whose runs each
// have a deadline of their own; ctx's otherwise.
func sendDeadline(ctx context.Context) (time.Time, bool) {
	if p := platform.ProgressOf(ctx); p != nil && p.Resumable() {
		return p.Deadline, !p.Deadline.IsZero()
	}
	return ctx.Deadline()
}

// partsProgress is how far the sending of a message's parts has got.
// Between the runs of a send the dispatcher resumes, it is kept in the
// send's platform.Progress (Platform, as partsState): instead of sleeping
// through the pause before a part or the wait before a part's retry, Send
// saves it and returns the Progress's pause, so the dispatcher's worker
// serves other chats meanwhile, and the next run carries on — after a
// restart too, when a journal keeps the Progress.
type partsProgress struct {
	parts   []part
	dest    destination
	pause   time.Duration    // the pacing pause before each later part
	last    tgbotapi.Message // the last part delivered
	next    int              // the part to send next
	attempt int              // its attempt, counting from 1
	waited  bool             // the wait before this attempt is over
}

// partsState is partsProgress as platform.Progress keeps it: what cannot
// be planned again from the request.
type partsState struct {
	Next     int    `json:"next"`
	Attempt  int    `json:"attempt"`
	Waited   bool   `json:"waited,omitempty"`
	Last     int    `json:"last,omitempty"`
	ChatID   string `json:"chat_id,omitempty"` // a supergroup the group became
	Migrated bool   `json:"migrated,omitempty"`
}

// resumedParts returns, and takes out of ctx's Progress, the progress a
// paused send saved, its parts planned again from req; nil if there is
// none (or it does not fit req).
func (a *Adapter) resumedParts(ctx context.Context, req platform.SendRequest) *partsProgress {
	p := platform.ProgressOf(ctx)
	if p == nil || len(p.Platform) == 0 {
		return nil
	}
	var st partsState
	err := json.Unmarshal(p.Platform, &st)
	p.Platform = nil
	if err != nil {
		return nil
	}
	parts, err := planParts(req.Message)
	if err != nil || st.Next < 1 || st.Next >= len(parts) {
		return nil
	}
	dest, err := destinationOf(req.Target)
	if err != nil {
		return nil
	}
	dest.migrated = st.Migrated
	if st.ChatID != "" {
		dest.chatID = st.ChatID
		if dest.chat, err = parseChat(dest.chatID); err != nil {
			return nil
		}
	}
	return &partsProgress{
		parts: parts, dest: dest, pause: partPause(req.Target),
		last: tgbotapi.Message{MessageID: st.Last}, next: st.Next, attempt: max(st.Attempt, 1), waited: st.Waited,
	}
}

// waitBefore waits d before the attempt at carries on from, through ctx's
// Progress (in place without one): for a send the dispatcher resumes, by
// saving at (with its wait marked over) and returning the pause for the
// caller to return. A nil error means the wait is over and the attempt
// goes ahead.
func (a *Adapter) waitBefore(ctx context.Context, at partsProgress, d time.Duration) error {
	p := platform.ProgressOf(ctx)
	if p == nil {
		if !backoff.Sleep(ctx, d) {
			return ctx.Err()
		}
		return nil
	}
	err := p.Wait(ctx, d)
	if _, paused := platform.PauseOf(err); paused {
		st := partsState{Next: at.next, Attempt: at.attempt, Waited: true, Last: at.last.MessageID, Migrated: at.dest.migrated}
		if at.dest.migrated {
			st.ChatID = at.dest.chatID
		}
		p.Platform, _ = json.Marshal(st) // cannot fail for these fields
	}
	return err
}

// sendLaterPart sends part pr.next (≥ 1) of pr.parts to pr.dest, once the
// parts before it were delivered. Those must not be sent again, so the
// caller must never retry the whole message: sendLaterPart paces the part
// (see [paceFor]) and retries it itself, and its errors are all
// [platform.Permanent], naming the part and saying that the earlier ones
// were delivered, and match platform.ErrMaybeDelivered — except a pause
// (see [partsProgress]), after which the next run carries on. It waits
// out a 429's retry_after exactly (up to maxPartRetryAfter; it gives up at
// once if the wait would outlast the send's deadline) and backs off after
// a 5xx or network failure, for maxPartAttempts attempts in all; a
// permanent error, the end of ctx, or, with Config.AvoidDuplicates, a
// failure after which the part may have been delivered ends it at once.
func (a *Adapter) sendLaterPart(ctx context.Context, pr *partsProgress) (tgbotapi.Message, error) {
	i, n, p := pr.next, len(pr.parts), pr.parts[pr.next]
	fail := func(err error) (tgbotapi.Message, error) {
		delivered := "part 1 was"
		if i > 1 {
			delivered = fmt.Sprintf("parts 1 to %d were", i)
		}
		return tgbotapi.Message{}, platform.Permanent(platform.MaybeDelivered(fmt.Errorf(
			"telegram: part %d of %d failed; %s delivered and must not be sent again: %w", i+1, n, delivered, err)))
	}
	waited := func(err error) (tgbotapi.Message, error) {
		if _, ok := platform.PauseOf(err); ok {
			return tgbotapi.Message{}, err
		}
		return fail(err)
	}
	if !pr.waited {
		if err := a.waitBefore(ctx, *pr, paceFor(ctx, pr.pause, n-i)); err != nil {
			return waited(err)
		}
	}
	for ; ; pr.attempt++ {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		msg, err := a.sendPartTo(ctx, &pr.dest, p)
		if err == nil {
			return msg, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return fail(fmt.Errorf("%w (after: %w)", cerr, err))
		}
		if platform.IsPermanent(err) || pr.attempt >= maxPartAttempts {
			return fail(err)
		}
		if a.cfg.AvoidDuplicates && errors.Is(err, platform.ErrMaybeDelivered) {
			// The part may have been delivered: sending it again could
			// deliver it twice.
			return fail(err)
		}
		wait, ok := platform.RetryAfterOf(err)
		if !ok {
			wait = backoff.EqualJitter(backoff.Exponential(pr.attempt-1, minPartBackoff, maxPartBackoff), rand.Float64())
		} else if wait > maxPartRetryAfter {
			return fail(fmt.Errorf("retry_after %v is over %v: %w", wait, maxPartRetryAfter, err))
		}
		if deadline, ok := sendDeadline(ctx); ok && time.Until(deadline) < wait {
			return fail(fmt.Errorf("waiting %v would outlast the deadline: %w", wait, err))
		}
		a.limited.Warn("telegram: a part of a long message failed; retrying it",
			zap.Int("part", i+1), zap.Int("parts", n), zap.String("chat_id", pr.dest.chatID),
			zap.Error(a.red.Error(err)), zap.Duration("retry_in", wait))
		retry := *pr
		retry.attempt++
		if werr := a.waitBefore(ctx, retry, wait); werr != nil {
			if _, ok := platform.PauseOf(werr); ok {
				return tgbotapi.Message{}, werr
			}
			return fail(fmt.Errorf("%w (after: %w)", werr, err))
		}
	}
}
