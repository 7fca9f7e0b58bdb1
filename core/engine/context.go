package engine

import (
	"context"
	"time"

	hctx "github.com/heraldbot/herald/core/context"
	"github.com/heraldbot/herald/core/state"
)

// The handler's side of Herald — the Context and what a handler does
// through it — is package core/context; these are its names, so that a
// handler file imports package engine alone. Their methods are documented
// there: go doc github.com/heraldbot/herald/core/context Context.

// Context is what a handler receives for one event: its methods (Reply,
// Prompt, Next, Answer, Edit, Download, …) are documented in package
// github.com/heraldbot/herald/core/context, whose Context it is.
type Context = hctx.Context

// UserError is an error whose Text may be shown to the user by the error
// hook (see UserError in package github.com/heraldbot/herald/core/context).
type UserError = hctx.UserError

// ReplyTexts are the words ReplySuccess and ReplyError add (see ReplyTexts
// in package github.com/heraldbot/herald/core/context, and WithReplyTexts).
type ReplyTexts = hctx.ReplyTexts

// NewUserError returns a *UserError with the given user-facing text and
// cause (which may be nil).
func NewUserError(text string, cause error) error { return hctx.NewUserError(text, cause) }

// Once runs fn once for the handling of c's event, as one of its effects,
// and returns what fn returned; a run again of the handler (a
// conversation's replay, a run after a crash) gets the recorded result
// back. See Once in package github.com/heraldbot/herald/core/context.
func Once[T any](c *Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	return hctx.Once(c, name, fn)
}

// SessionKey names a piece of state of type T kept for each chat or each
// user across events: NewChatSession and NewUserSession make one. Its
// methods (Get, Update, Delete in a handler; Of and IDs outside) are
// documented in package github.com/heraldbot/herald/core/context.
type SessionKey[T any] = hctx.SessionKey[T]

// Session is a SessionKey's state for one chat or user, for code outside
// handlers (a job, a broadcast): SessionKey.Of returns it. Its methods
// (Get, Update, Delete) are documented in package
// github.com/heraldbot/herald/core/context.
type Session[T any] = hctx.Session[T]

// NewChatSession returns the key of a state of type T kept per chat (per
// platform and chat ID), which expires ttl after its last update (0:
// never).
func NewChatSession[T any](name string, ttl time.Duration) *SessionKey[T] {
	return hctx.NewChatSession[T](name, ttl)
}

// NewUserSession returns the key of a state of type T kept per user (per
// platform and user ID), shared by all the chats the user writes in,
// which expires ttl after its last update (0: never).
func NewUserSession[T any](name string, ttl time.Duration) *SessionKey[T] {
	return hctx.NewUserSession[T](name, ttl)
}

// SessionStore returns the store the engine keeps sessions in
// (WithSessionStore's, or a memory store of its own), so that
// SessionKey.Of and SessionKey.IDs take the engine.
func (e *Engine) SessionStore() state.Store { return e.state.sessions }

// The errors of the handler's Context, for errors.Is; see package
// core/context.
var (
	ErrNoChat        = hctx.ErrNoChat
	ErrNoUser        = hctx.ErrNoUser
	ErrPromptNotSent = hctx.ErrPromptNotSent
	ErrWaiting       = hctx.ErrWaiting
	ErrDiverged      = hctx.ErrDiverged
	ErrCancelled     = hctx.ErrCancelled
)
