// Package engine is Herald's core: the Engine that routes inbound events to
// handlers, and the OutboundDispatcher that sends every reply — strictly in
// order per chat, concurrently across chats, under a global bound.
package engine
