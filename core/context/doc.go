// Package context names the handler's Context for code that imports it
// from here: Context, UserError and the send errors are those of package
// core/engine, where the Context is made and where its documentation is.
// Handler files import core/engine alone and write *engine.Context.
package context
