package sender

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/heraldbot/herald/infra/resume"
)

// recordKey is the context key under which a sendRecord finds itself.
type recordKey struct{}

// sendRecord carries what the decorators outside Retry need to know about a
// send after it returns: when it started, how many attempts it took and
// whether DeadLetters recorded it.
//
// It is the context passed down the chain: embedding the parent context lets
// one allocation both carry the record and make it findable with Value.
// Decorators outside Retry (Metrics, Logging, Counters, DeadLetters) call
// withRecord, which reuses a record an outer decorator created; Retry fills
// it in.
type sendRecord struct {
	context.Context

	// attempts is the number of times Retry called the sender below it; 1
	// until a Retry says otherwise.
	attempts atomic.Int32
	// retrying is set while a Retry owns the record. A nested Retry leaves the
	// record to the outer one, and a decorator finding an owned record (a
	// chain inside the platform sender of another chain) creates its own.
	retrying atomic.Bool
	// deadLettered is set by DeadLetters when it stores the send.
	deadLettered atomic.Bool

	// start is when the send began; for a resumed send (see package
	// resume), when its first run did.
	start time.Time
	// resumed is set when this run carries on a send an earlier run paused:
	// the decorators have seen the send already.
	resumed bool
	// owner is the decorator that created the record, and the key under
	// which it saves the record in task when the send pauses; task is the
	// send's resume.Task, or nil.
	owner any
	task  *resume.Task
}

// savedRecord is what a paused send's record keeps for its next run.
type savedRecord struct {
	attempts int32
	start    time.Time
}

// Value returns the record itself for recordKey and asks the parent for any
// other key.
func (r *sendRecord) Value(key any) any {
	if _, ok := key.(recordKey); ok {
		return r
	}
	return r.Context.Value(key)
}

// String names the context for debugging, as the context package's own
// contexts do.
func (r *sendRecord) String() string {
	if s, ok := r.Context.(interface{ String() string }); ok {
		return s.String() + ".WithSendRecord"
	}
	return "context.WithSendRecord"
}

// recordFrom returns the record in ctx, or nil.
func recordFrom(ctx context.Context) *sendRecord {
	r, _ := ctx.Value(recordKey{}).(*sendRecord)
	return r
}

// withRecord returns ctx's record if it has one that no Retry owns yet, and
// otherwise a new record wrapping ctx, which is also the context to pass on;
// owner, the decorator calling, then owns the new record. In a resumed run
// the new record carries on from the one owner saved when the send paused.
func withRecord(ctx context.Context, owner any) (context.Context, *sendRecord) {
	if r := recordFrom(ctx); r != nil && !r.retrying.Load() {
		return ctx, r
	}
	r := &sendRecord{Context: ctx, owner: owner}
	r.attempts.Store(1)
	if t := resume.FromContext(ctx); t != nil {
		r.task = t
		if saved, ok := t.Value(owner).(*savedRecord); ok {
			t.SetValue(owner, nil)
			r.attempts.Store(saved.attempts)
			r.start, r.resumed = saved.start, true
		}
	}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	return r, r
}

// paused reports whether err pauses the send rather than ends it (a
// *resume.WaitError: the send runs again later, see package resume). A
// decorator seeing a pause returns at once, recording nothing; the record's
// owner saves the record for the next run.
func (r *sendRecord) paused(who any, err error) bool {
	if err == nil {
		return false
	}
	if _, ok := resume.DelayOf(err); !ok {
		return false
	}
	if r.task != nil && r.owner == who {
		r.task.SetValue(who, &savedRecord{attempts: r.attempts.Load(), start: r.start})
	}
	return true
}

// attemptsOf returns the attempts recorded in r.
func (r *sendRecord) attemptsOf() int { return int(r.attempts.Load()) }
