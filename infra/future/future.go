// Package future provides Future, a value that is resolved once and can be
// waited for by any number of goroutines.
//
// Herald hands a Future back from every send (ctx.Reply and friends): the send
// happens later, on the outbound dispatcher, and the Future carries its result
// to whoever wants it.
package future

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrNotReady is returned by [Future.Result] while the Future is unresolved.
var ErrNotReady = errors.New("future: not ready")

// Future is the eventual result of an operation: a value of type T and an
// error. It is resolved exactly once; the first call to [Future.Resolve] wins
// and later calls change nothing.
//
// There are three ways to read it:
//   - [Future.Wait] blocks until the Future is resolved or ctx ends. Most
//     callers should use Wait.
//   - [Future.Result] never blocks: it returns [ErrNotReady] while unresolved.
//   - [Future.Done] returns a channel that is closed on resolution, for use in a
//     select with other channels; read the result with Result afterwards.
//
// A Future must be created with [New]; the zero value is not usable. All
// methods are safe for concurrent use by any number of goroutines.
type Future[T any] struct {
	// resolved is set once val and err are, under mu: read without mu, it
	// orders those reads after their writes.
	resolved atomic.Bool
	mu       sync.Mutex
	// done is made by the first who asks for it before the resolution
	// (Done, or a Wait that blocks), and closed by Resolve: most Futures
	// are resolved before anyone waits, or never waited for, and never
	// make it.
	done chan struct{}
	val  T
	err  error
}

// New returns an unresolved Future.
func New[T any]() *Future[T] {
	return &Future[T]{}
}

// Resolved returns a Future already resolved with val and err.
func Resolved[T any](val T, err error) *Future[T] {
	f := &Future[T]{val: val, err: err}
	f.resolved.Store(true)
	return f
}

// closed is the Done channel of a Future resolved before anyone asked for
// one: closed once, shared, never closed again.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Resolve sets the Future's value and error and wakes every waiter. It
// returns true if this call resolved the Future and false if it had already
// been resolved, in which case val and err are discarded.
func (f *Future[T]) Resolve(val T, err error) bool {
	f.mu.Lock()
	if f.resolved.Load() {
		f.mu.Unlock()
		return false
	}
	f.val, f.err = val, err
	f.resolved.Store(true)
	if f.done != nil {
		close(f.done)
	}
	f.mu.Unlock()
	return true
}

// Wait blocks until the Future is resolved and returns its value and error,
// or until ctx ends and returns the zero value and ctx.Err(). When the Future
// is already resolved, Wait returns its result even if ctx has ended.
func (f *Future[T]) Wait(ctx context.Context) (T, error) {
	if f.resolved.Load() {
		return f.val, f.err
	}
	select {
	case <-f.Done():
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Result returns the Future's value and error without blocking. Before the
// Future is resolved it returns the zero value and [ErrNotReady].
func (f *Future[T]) Result() (T, error) {
	if f.resolved.Load() {
		return f.val, f.err
	}
	var zero T
	return zero, ErrNotReady
}

// IsDone reports whether the Future has been resolved.
func (f *Future[T]) IsDone() bool { return f.resolved.Load() }

// MustWait is like [Future.Wait] but panics if Wait returns an error. It is
// meant for tests and programs where a failure is a bug.
func (f *Future[T]) MustWait(ctx context.Context) T {
	val, err := f.Wait(ctx)
	if err != nil {
		panic(err)
	}
	return val
}

// Done returns a channel that is closed when the Future is resolved.
func (f *Future[T]) Done() <-chan struct{} {
	if f.resolved.Load() {
		return closed
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resolved.Load() {
		return closed
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f.done
}
