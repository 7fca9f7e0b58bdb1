package engine

import (
	"context"
	"encoding/json"
	"errors"
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
func Once[T any](c *Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	s := sum("once", name)
	fx, pos, err := c.take(fxOnce, s, "once "+name)
	switch {
	case err != nil:
		return zero, err
	case fx != nil:
		sv, _ := fx.v.(stateValue)
		return decodeOnce[T](sv.val, name)
	}
	st := c.ev
	e := st.e
	id := c.effectID(pos)
	if id != "" && st.recovered {
		data, ok, err := e.journal.Effect(context.WithoutCancel(st.ctx), "once:"+id)
		switch {
		case err != nil:
			return zero, fmt.Errorf("engine: Once %q: %w", name, e.js.failed("effect", err))
		case ok:
			st.record(pos, effect{kind: fxOnce, sum: s, what: "once " + name, v: stateValue{val: data}})
			return decodeOnce[T](data, name)
		}
	}
	v, ferr := fn(st.ctx)
	rec := onceRecord{E: ""}
	if ferr != nil {
		rec.E = ferr.Error()
	} else if rec.V, err = json.Marshal(v); err != nil {
		return zero, fmt.Errorf("engine: Once %q: its result: %w", name, err)
	}
	data, _ := json.Marshal(rec) // a RawMessage and a string
	if id != "" {
		if err := e.journal.RecordEffect(context.WithoutCancel(st.ctx), "once:"+id, data); err != nil {
			e.js.failed("effect", err) // the result stands; a run after a crash runs fn again
		} else {
			e.js.ok()
		}
	}
	st.record(pos, effect{kind: fxOnce, sum: s, what: "once " + name, v: stateValue{val: data}})
	return decodeOnce[T](data, name)
}

// onceRecord is a Once result as recorded: its value as JSON, or its
// error's message.
type onceRecord struct {
	V json.RawMessage `json:"v,omitempty"`
	E string          `json:"e,omitempty"`
}

// decodeOnce returns the result data records.
func decodeOnce[T any](data []byte, name string) (T, error) {
	var zero T
	var rec onceRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return zero, fmt.Errorf("engine: Once %q as recorded: %w", name, err)
	}
	if rec.E != "" {
		return zero, errors.New(rec.E)
	}
	var v T
	if len(rec.V) > 0 {
		if err := json.Unmarshal(rec.V, &v); err != nil {
			return zero, fmt.Errorf("engine: Once %q as recorded: %w", name, err)
		}
	}
	return v, nil
}
