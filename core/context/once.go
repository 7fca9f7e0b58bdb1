package context

import (
	stdctx "context"
	"encoding/json"
	"fmt"
)

// Once runs fn once for the handling of c's event, as one of its effects,
// and returns what fn returned. A run again of the handler gets the
// recorded result back instead of calling fn: a conversation's replay
// (see Context.Next), and, with a journal that keeps records, a run after
// a crash or on another process — within the journal's duplicate window
// (an hour by default), as long as the journal keeps it.
//
// Use it for what a handler must not do twice (charge a card, call
// another service) and for what differs between runs (time.Now, a random
// number), so that the handler does the same things each time it runs.
// name tells the effects of one handling apart, in a replay's check that
// it does what it did: give each call its own. T must marshal to JSON:
// only what survives a round trip is given back. An error fn returns is
// recorded too, by its message, and given back as an error with that
// message.
//
// fn's ctx is the handler's. fn runs at most once per run, but a crash
// between its end and the record may run it again after a restart: give
// an outside service an idempotency key of the event's (c.Event().ID and
// name) where it takes one.
func Once[T any](c *Context, name string, fn func(ctx stdctx.Context) (T, error)) (T, error) {
	var zero T
	data, err := c.x.Once(name, func(ctx stdctx.Context) ([]byte, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("engine: Once %q: its result: %w", name, err)
		}
		return data, nil
	})
	if err != nil {
		return zero, err
	}
	var v T
	if len(data) > 0 {
		if err := json.Unmarshal(data, &v); err != nil {
			return zero, fmt.Errorf("engine: Once %q as recorded: %w", name, err)
		}
	}
	return v, nil
}
