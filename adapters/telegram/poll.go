package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/infra/backoff"
	"github.com/heraldbot/herald/platform"
)

// pollLimit is the most updates one getUpdates call asks for.
const pollLimit = 100

// errNoProgress is the poll loop's error for an answer in which no update
// could be delivered or skipped (malformed updates without an ID): polling
// again at once would get the same answer.
var errNoProgress = errors.New("telegram: getUpdates: no update in the answer could be decoded or skipped")

// confirmTimeout bounds the getUpdates call that confirms the last batch
// when Run stops, if its Inbound has no Stop: when the adapter runs
// without an engine.
const confirmTimeout = 500 * time.Millisecond

// conflictTolerance is how many 409 Conflict answers to getUpdates within
// conflictWindow end the poll loop with ErrConflict. One is no proof of a
// second poller for good: a process that was paused while it held the bot
// (a stopped container, a gateway whose lease passed to another process)
// sends one more getUpdates when it resumes, before it learns that it must
// stop, and that ends the long poll of the process that polls now. Two
// processes that both go on polling end each other's polls in turn, and
// reach the count within seconds.
const (
	conflictTolerance = 3
	conflictWindow    = time.Minute
)

// emptyPollFloor is the least time from the start of a long poll that
// brought no update to the start of the next: a server that ignores
// getUpdates' timeout and answers at once would otherwise be polled in a
// tight loop.
const emptyPollFloor = 500 * time.Millisecond

func (a *Adapter) runPolling(ctx context.Context, rs *runState) error {
	err := a.retrying(ctx, func(ctx context.Context) error {
		_, err := a.makeRequest(ctx, "deleteWebhook", nil)
		return err
	})
	if err != nil {
		return err
	}
	if err := a.poll(ctx, rs); err != nil {
		// Not confirmed: confirming is a getUpdates call, which after
		// ErrConflict would end the long poll of the process that won
		// (with a 409 of its own), and after ErrUnauthorized would fail
		// anyway. The updates handled since the last poll are delivered
		// again to whoever polls next.
		return err
	}
	a.confirm(rs.stop)
	return nil
}

// poll runs the getUpdates loop until ctx ends (nil) or a call fails for
// good (the error).
//
// An offset counts as confirmed (a.confirmed) once a getUpdates call that
// sent it was answered. Telegram takes the offset when the call arrives,
// but a call in flight, or one aborted when ctx ends, may not have
// arrived, and the adapter cannot know that it did. So a long poll is
// only ever sent with an offset already confirmed: after a batch was
// handed on, the next call has timeout 0 and is answered at once, with
// the updates that came meanwhile or with none; only then does the loop
// wait in a long poll, which the end of ctx may abort without leaving
// anything unconfirmed. At any moment the updates taken but not known to
// be confirmed are at most those of the batch being handed on and, for
// one round trip, those just handed on; the final call of runPolling
// confirms them when ctx ends.
func (a *Adapter) poll(ctx context.Context, rs *runState) error {
	attempt := 0              // getUpdates failures in a row
	refusals := 0             // refusals of lastRefused in a row
	lastRefused := -1         // the update handle refused last
	var conflicts []time.Time // the 409 answers of the last conflictWindow
	for {
		if ctx.Err() != nil {
			return nil
		}
		sent := a.offset
		timeout := a.cfg.PollTimeout
		if sent != a.confirmed {
			timeout = 0 // confirm at once; see above
		}
		began := time.Now()
		raws, err := a.getUpdates(ctx, sent, pollLimit, timeout)
		if err == nil {
			a.confirmed = sent
			progressed, refused := a.deliverBatch(ctx, rs, raws)
			if refused != nil {
				attempt = 0
				// a.offset is the refused update's ID: the next poll
				// gets it again, with those after it.
				if a.offset != lastRefused {
					lastRefused, refusals = a.offset, 0
				}
				wait := refusedDelay(refusals)
				refusals++
				a.limited.Warn("telegram: an update was refused; asking for it again",
					zap.Int("update_id", a.offset), zap.Error(a.red.Error(refused)), zap.Duration("retry_in", wait))
				if !backoff.Sleep(ctx, wait) {
					return nil
				}
				continue
			}
			if progressed {
				attempt = 0
				continue
			}
			if len(raws) == 0 {
				attempt = 0
				// A long poll that brought nothing before its timeout: the
				// server does not wait as asked. Keep a floor between polls.
				if wait := emptyPollFloor - time.Since(began); timeout > 0 && wait > 0 {
					a.limited.Debug("telegram: getUpdates answered with no update long before its timeout; waiting before the next poll",
						zap.Duration("poll_timeout", timeout), zap.Duration("retry_in", wait))
					if !backoff.Sleep(ctx, wait) {
						return nil
					}
				}
				continue
			}
			err = errNoProgress
		}
		if ctx.Err() != nil {
			return nil
		}
		wait, fatal := runFailure(err, attempt, rand.Float64())
		if errors.Is(fatal, ErrConflict) {
			now := time.Now()
			conflicts = append(slices.DeleteFunc(conflicts, func(at time.Time) bool { return now.Sub(at) >= conflictWindow }), now)
			if len(conflicts) < conflictTolerance {
				fatal, wait = nil, failureDelay(attempt, rand.Float64())
				a.limited.Warn("telegram: getUpdates answered 409 Conflict: another process polled with this token (one paused a moment ago, or a second instance); retrying, and stopping if it goes on",
					zap.Error(a.red.Error(err)), zap.Int("conflicts", len(conflicts)), zap.Duration("retry_in", wait))
				attempt++
				if !backoff.Sleep(ctx, wait) {
					return nil
				}
				continue
			}
		}
		if fatal != nil {
			return fatal
		}
		attempt++
		a.limited.Warn("telegram: getUpdates failed; retrying", zap.Error(a.red.Error(err)), zap.Duration("retry_in", wait))
		if !backoff.Sleep(ctx, wait) {
			return nil
		}
	}
}

// Waits before asking again for an update handle refused.
const (
	minRefusedBackoff = time.Second
	maxRefusedBackoff = 16 * time.Second
)

// refusedDelay returns the wait before asking again for an update handle
// refused n times in a row before (0 for the first refusal):
// minRefusedBackoff·2^n capped at maxRefusedBackoff. There is no jitter:
// one process polls a bot, so there is no herd to spread.
func refusedDelay(n int) time.Duration {
	return backoff.Exponential(n, minRefusedBackoff, maxRefusedBackoff)
}

// getUpdates calls getUpdates and returns the updates undecoded, so that
// one malformed update does not make the whole batch fail to decode.
func (a *Adapter) getUpdates(ctx context.Context, offset, limit int, timeout time.Duration) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+pollGrace)
	defer cancel()
	params := tgbotapi.Params{}
	params.AddNonZero("offset", offset)
	params.AddNonZero("limit", limit)
	params.AddNonZero("timeout", int(timeout/time.Second))
	if types := a.allowedUpdates(); types != nil { // never nil; AddInterface would send a nil slice as "null"
		if err := params.AddInterface("allowed_updates", types); err != nil {
			return nil, err
		}
	}
	raw, err := a.makeRequest(ctx, "getUpdates", params)
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, classify("getUpdates", err, 0)
	}
	return raws, nil
}

// deliverBatch decodes and delivers the updates of one getUpdates answer in
// order, setting a.offset past each update taken by rs (a duplicate of
// one taken before included) and past each malformed update (skipped
// with a log line).
//
// It trusts getUpdates: the answer holds the updates not yet confirmed,
// so the offset becomes the last one's ID plus one even when that is lower
// than the offset sent. Telegram starts update IDs afresh, at a random and
// possibly lower value, after a bot received no update for about a week
// (go-telegram-bot-api issue #156); an adapter that skipped IDs below its
// offset as "already handled" would never hand on another update. True
// repeats are caught by rs's ledger of recent IDs instead.
//
// When handle refuses an event, deliverBatch stops there and returns the
// refusal, with a.offset set to that update's ID, so that it is neither
// confirmed nor skipped. It stops early, too, when ctx ends or Run is
// closing. It reports whether the offset moved, that is, whether the next
// poll gets something new.
func (a *Adapter) deliverBatch(ctx context.Context, rs *runState, raws []json.RawMessage) (progressed bool, refused error) {
	start := a.offset
	// The updates that decode go to rs together, in runs between the
	// malformed ones, which are skipped in their places.
	run := make([]*update, 0, len(raws))
	flush := func() (stop bool, err error) {
		if len(run) == 0 {
			return false, nil
		}
		if ctx.Err() != nil {
			return true, nil
		}
		n, err := rs.deliverAll(run)
		for _, u := range run[:n] {
			a.offset = u.UpdateID + 1
		}
		switch {
		case errors.Is(err, errRunEnded):
			return true, nil
		case err != nil:
			a.offset = run[n].UpdateID
			return true, err
		}
		run = run[:0]
		return false, nil
	}
	prev := a.offset
	for _, raw := range raws {
		u, err := decodeUpdate(raw)
		if err != nil {
			if stop, err := flush(); stop {
				return err == nil || a.offset != start, err
			}
			id := updateIDOf(raw)
			fields := []zap.Field{zap.Int("update_id", id), zap.Int("bytes", len(raw))}
			if !errors.Is(err, errNoUpdateID) {
				fields = append(fields, zap.Error(err))
			}
			a.stats.malformed.Add(1)
			a.limited.Warn("telegram: skipping a malformed update", fields...)
			if id > 0 {
				a.offset = id + 1
				prev = a.offset
			}
			continue
		}
		if u.UpdateID+1 < prev {
			a.limited.Info("telegram: update IDs went back; Telegram starts them afresh after a week without updates",
				zap.Int("update_id", u.UpdateID), zap.Int("offset", prev))
		}
		prev = u.UpdateID + 1
		run = append(run, u)
	}
	if stop, err := flush(); stop {
		return err == nil || a.offset != start, err
	}
	return a.offset != start, nil
}

// updateIDOf reads the update_id of an update that did not decode, or
// returns 0.
func updateIDOf(raw json.RawMessage) int {
	var head struct {
		UpdateID json.Number `json:"update_id"`
	}
	if json.Unmarshal(raw, &head) != nil {
		return 0
	}
	id, err := strconv.Atoi(head.UpdateID.String())
	if err != nil {
		return 0
	}
	return id
}

// confirm tells Telegram that the updates taken since the last answered
// poll were handled, with one short getUpdates call, so that the next Run
// (of this or another process) does not get them again. It is called once
// the Run stopped polling: the call is bounded by stop (Inbound.Stop), what
// is left of the engine's shutdown timeout, or confirmTimeout when Run is
// used without an engine. It is best effort.
func (a *Adapter) confirm(stop context.Context) {
	if a.offset == a.confirmed {
		return
	}
	cctx, cancel := platform.Inbound{Stop: stop}.StopContext(confirmTimeout)
	defer cancel()
	if _, err := a.getUpdates(cctx, a.offset, 1, 0); err != nil {
		a.log.Warn("telegram: confirming handled updates failed; they may be delivered again",
			zap.Int("offset", a.offset), zap.Error(a.red.Error(err)))
		return
	}
	a.confirmed = a.offset
}
