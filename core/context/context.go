package context

import "github.com/heraldbot/herald/core/engine"

// Context is the handler's Context, [engine.Context].
type Context = engine.Context

// UserError is an error whose text a handler may show the user,
// [engine.UserError].
type UserError = engine.UserError

// NewUserError is [engine.NewUserError].
func NewUserError(text string, cause error) error { return engine.NewUserError(text, cause) }

// The errors of the handler's Context, for errors.Is; see package engine.
var (
	ErrNoSender      = engine.ErrNoSender
	ErrSendPanicked  = engine.ErrSendPanicked
	ErrSendAborted   = engine.ErrSendAborted
	ErrNoChat        = engine.ErrNoChat
	ErrPromptNotSent = engine.ErrPromptNotSent
)
