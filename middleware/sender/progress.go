package sender

import (
	"context"
	"errors"

	"github.com/heraldbot/herald/platform"
)

// sendState is what the layers of this package keep of one send across
// its runs, in its platform.Progress (Progress.Value). It is made only
// when a layer has something to keep across runs or layers: a send that
// succeeds at its first attempt, unpaused, has none.
type sendState struct {
	inAttempt    bool  // Retry: an attempt is under way across runs (a layer below paused it)
	lastErr      error // Retry: the error of the last attempt that failed, kept across a pause
	deadLettered bool  // DeadLetters kept the failed send
	journaled    bool  // a journal keeps the send until its outcome is final (MarkJournaled)
}

// stateKey keys a send's sendState in its Progress.
type stateKey struct{}

// stateOf returns the sendState p holds, made if need be.
func stateOf(p *platform.Progress) *sendState {
	if st, ok := p.Value(stateKey{}).(*sendState); ok {
		return st
	}
	st := new(sendState)
	p.SetValue(stateKey{}, st)
	return st
}

// peekState returns the sendState p holds, or a zero one (none is kept).
func peekState(p *platform.Progress) sendState {
	if st, ok := p.Value(stateKey{}).(*sendState); ok {
		return *st
	}
	return sendState{}
}

// MarkJournaled records in p that a journal keeps the send until its
// outcome is final: a send cancelled before then (a forced shutdown) is
// taken up again at the next start (see [KeptForNextStart]), so
// [DeadLetters] does not keep it. The engine calls it for the sends its
// journal records.
func MarkJournaled(p *platform.Progress) { stateOf(p).journaled = true }

// KeptForNextStart reports whether a journaled send (see [MarkJournaled])
// that ended with err, its context ctx, stays in its journal to be made
// at the next start: a forced shutdown cancelled it (ctx and err both say
// so), and err is not permanent — a send its adapter says must not be
// made again (its request may have arrived, and the adapter avoids
// duplicates) is a dead letter instead. The engine and [DeadLetters] both
// decide by it, so a send is kept by exactly one of them.
func KeptForNextStart(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) && !platform.IsPermanent(err)
}
