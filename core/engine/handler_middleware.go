package engine

// Middleware wraps a [Handler] in another that adds behaviour (logging,
// timing, access checks, a per-user cooldown, …) and calls the wrapped one
// — or does not, to stop the event there — as net/http middleware wraps a
// Handler. It is called once, when a handler is registered; the Handler it
// returns runs for every event the matcher accepts and must be safe for
// concurrent use. Its error and panics are the handler's: logged, counted
// and passed to WithOnError.
type Middleware func(next Handler) Handler

// chain wraps h in mws, the first listed outermost; nil ones are skipped.
func chain(h Handler, mws ...[]Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		for j := len(mws[i]) - 1; j >= 0; j-- {
			if mw := mws[i][j]; mw != nil {
				h = mw(h)
			}
		}
	}
	return h
}

// WithMiddleware adds mws around every handler, fallback included, the
// first listed outermost, outside each matcher's own Wrap. Repeated use
// appends: middleware of an earlier WithMiddleware is outside a later
// one's.
func WithMiddleware(mws ...Middleware) Option {
	return optionFunc(func(o *options) { o.handlerMiddleware = append(o.handlerMiddleware, mws...) })
}

// Wrap adds mws around this matcher's handler, the first listed outermost,
// inside the engine's WithMiddleware. Repeated use appends.
func Wrap(mws ...Middleware) MatcherOption {
	return matcherOptionFunc(func(m *matcher) { m.middleware = append(m.middleware, mws...) })
}
