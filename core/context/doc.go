// Package context provides Context, the value every Herald handler receives:
// the inbound event, what its matcher found (command, arguments, regex
// groups), a logger, per-event values, and the send methods (Reply, Send and
// friends) that hand messages to the outbound dispatcher and return a Future.
//
// Bot authors rarely import this package: core/engine re-exports Context
// (engine.Context) and the errors handlers usually need, so a handler file
// needs no alias for the standard library's context package. Inside this package the standard library's
// context is imported as stdctx.
package context
