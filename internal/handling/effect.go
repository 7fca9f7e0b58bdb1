package handling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Once runs fn once for c's handling, as one of its effects, and returns
// what it returned: the JSON of a value, or an error, which is recorded
// by its message. A run again of the handler gets the recorded result
// back instead of calling fn — a replay, and, with a journal that keeps
// records, a run after a crash or on another process. See core/context's
// Once.
func (c *Ctx) Once(name string, fn func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	s := sum("once", name)
	what := "once " + name
	fx, pos, err := c.take(fxOnce, s, what)
	switch {
	case err != nil:
		return nil, err
	case fx != nil:
		sv, _ := fx.v.(stateValue)
		return decodeOnce(sv.val, name)
	}
	r := c.run
	env := r.env
	id := c.effectID(pos)
	if id != "" && r.recovered {
		data, ok, err := env.Effect(context.WithoutCancel(r.ctx), "once:"+id)
		switch {
		case IsOutage(err):
			r.outage(pos, err)
			return nil, fmt.Errorf("engine: Once %q: %w", name, err)
		case err != nil:
			return nil, fmt.Errorf("engine: Once %q: %w", name, err)
		case ok:
			if was := onceName(data); was != "" && was != name {
				// A run before the restart ran another Once at this place.
				err := fmt.Errorf("%w: after a restart it asked for Once %q where it had asked for Once %q", ErrDiverged, name, was)
				h := r.h
				h.mu.Lock()
				if r.diverged == nil {
					r.diverged = fmt.Errorf("%w (effect %d)", err, pos+1)
				}
				h.mu.Unlock()
				return nil, err
			}
			r.record(pos, effect{kind: fxOnce, sum: s, what: what, v: stateValue{val: data}})
			return decodeOnce(data, name)
		}
	}
	v, ferr := fn(r.ctx)
	rec := onceRecord{N: name}
	if ferr != nil {
		rec.E = ferr.Error()
	} else {
		rec.V = v
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("engine: Once %q: its result: %w", name, err)
	}
	if id != "" {
		// A record refused for what it is leaves the result standing: a
		// run after a crash runs fn again. One an outage refused is made
		// before the run again after it. The engine logs both.
		if err := env.RecordEffect(context.WithoutCancel(r.ctx), "once:"+id, data); IsOutage(err) {
			r.record(pos, effect{kind: fxOnce, sum: s, what: what, v: stateValue{val: data}})
			r.keepUnrecorded(pos, "once:"+id, data, err)
			return decodeOnce(data, name)
		}
	}
	r.record(pos, effect{kind: fxOnce, sum: s, what: what, v: stateValue{val: data}})
	return decodeOnce(data, name)
}

// onceRecord is a Once result as recorded: its value as JSON, or its
// error's message, and the Once's name.
type onceRecord struct {
	V json.RawMessage `json:"v,omitempty"`
	E string          `json:"e,omitempty"`
	N string          `json:"n,omitempty"`
}

// onceName returns the name of the Once whose result data records, ""
// when unknown.
func onceName(data []byte) string {
	var rec onceRecord
	if json.Unmarshal(data, &rec) != nil {
		return ""
	}
	return rec.N
}

// decodeOnce returns the value's JSON, or the error, data records.
func decodeOnce(data []byte, name string) ([]byte, error) {
	var rec onceRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("engine: Once %q as recorded: %w", name, err)
	}
	if rec.E != "" {
		return nil, errors.New(rec.E)
	}
	return rec.V, nil
}

// State makes an access op of a session's value key an effect of c's
// handling: a replay gets the JSON the access gave before; do makes it
// live, given the effect's id (for a store that keeps the ids of the
// writes made, so that a write run again after a crash is not made
// twice; "" for none) and returning the JSON of the value.
func (c *Ctx) State(op, key string, do func(id string) ([]byte, error)) ([]byte, error) {
	s := sum(op, key)
	what := op + " " + key
	fx, pos, err := c.take(fxState, s, what)
	switch {
	case err != nil:
		return nil, err
	case fx != nil:
		sv, _ := fx.v.(stateValue)
		return sv.val, sv.err
	}
	r := c.run
	id := c.effectID(pos)
	if id != "" && r.recovered {
		// Run again after a crash or by another process: what the access
		// gave the run before, if the journal recorded it.
		data, ok, err := r.env.Effect(context.WithoutCancel(r.ctx), "state:"+id)
		if IsOutage(err) {
			r.outage(pos, err)
			return nil, err
		}
		if err == nil && ok {
			r.record(pos, effect{kind: fxState, sum: s, what: what, v: stateValue{val: data}})
			return data, nil
		}
	}
	v, err := do(id)
	if IsOutage(err) {
		// The store cannot be reached now: the run again after the
		// outage makes the access.
		r.outage(pos, err)
		return nil, err
	}
	if err == nil && id != "" {
		// An error leaves the value standing: a run after a crash reads
		// the store again (an update it made is known by its id there).
		// One an outage refused is made before the run again after it.
		if err := r.env.RecordEffect(context.WithoutCancel(r.ctx), "state:"+id, v); IsOutage(err) {
			r.record(pos, effect{kind: fxState, sum: s, what: what, v: stateValue{val: v}})
			r.keepUnrecorded(pos, "state:"+id, v, err)
			return v, nil
		}
	}
	r.record(pos, effect{kind: fxState, sum: s, what: what, v: stateValue{val: v, err: err}})
	return v, err
}
