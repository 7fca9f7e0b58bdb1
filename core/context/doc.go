// Package context is the handler's side of Herald: the Context a handler
// is given for one event, and what it does through it — replies and other
// sends, conversation steps (Next, Prompt), answers to button presses and
// inline queries, chat actions, downloads, side effects run once (Once)
// and state kept per chat or per user (SessionKey).
//
// Bot authors import package core/engine alone: it re-exports these names
// (engine.Context, engine.Once, engine.NewChatSession, …), so a handler
// file needs no alias for the standard library's context, which this
// package imports as stdctx. Package engine makes every Context.
//
// # Effects and replays
//
// What a handler does through its Context — sends, waits, answers, Once
// results, session reads and writes — are the effects of its event's
// handling, recorded in one log by their place in it. A handler that
// waits (Next returns ErrWaiting) holds nothing while it waits: it runs
// again, from the top, when its user's next event comes, and that run gets
// back every effect the runs before it made instead of making it again.
// With a journal that keeps records, a run after a crash or on another
// process does the same. So a handler must do the same things in the same
// order each time it runs up to its wait; see Context.Next.
package context
