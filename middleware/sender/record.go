package sender

import (
	"context"
	"sync/atomic"
)

// recordKey is the context key under which a sendRecord finds itself.
type recordKey struct{}

// sendRecord carries what the decorators outside Retry need to know about a
// send after it returns: how many attempts it took and whether DeadLetters
// recorded it.
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
// otherwise a new record wrapping ctx, which is also the context to pass on.
func withRecord(ctx context.Context) (context.Context, *sendRecord) {
	if r := recordFrom(ctx); r != nil && !r.retrying.Load() {
		return ctx, r
	}
	r := &sendRecord{Context: ctx}
	r.attempts.Store(1)
	return r, r
}

// attemptsOf returns the attempts recorded in r.
func (r *sendRecord) attemptsOf() int { return int(r.attempts.Load()) }
