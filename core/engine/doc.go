// Package engine is Herald's core: the Engine that routes inbound events to
// the handlers whose matchers accept them, and the OutboundDispatcher that
// sends every reply — strictly in order per chat, concurrently across
// chats, under a global bound.
//
// What a handler does with its event — the Context, Once, sessions — is
// package core/context; engine re-exports those names, so a handler file
// imports engine alone. The journal an engine runs on is package
// core/journal's contract (package cluster implements it on NATS
// JetStream); the key-value stores under sessions and the schedule are
// package core/state's.
package engine
