package sender

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrAlreadyRegistered is wrapped, together with the registry's
// prometheus.AlreadyRegisteredError, by the error [NewMetrics] and
// [Metrics.Register] return when their metrics are already registered.
var ErrAlreadyRegistered = errors.New("sender: metrics already registered")

// Histogram buckets of the send metrics: durations from 5 ms (a fast local
// send) to a minute (one that waited out retries); attempts from 1 to 10.
var (
	durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	attemptBuckets  = []float64{1, 2, 3, 4, 5, 7, 10}
)

// Metrics holds Herald's Prometheus metrics for sends:
//
//	herald_sends_total{platform,outcome}        counter: sends by final outcome
//	herald_send_dead_letters_total{platform}   counter: failed sends kept as dead letters
//	herald_send_duration_seconds{platform}     histogram: a send's whole duration, retries and waits included
//	herald_send_attempts                       histogram: attempts per send (see Retry)
//
// They count what [Counters] counts, under the same names (see SendStats).
//
// The outcome label takes the values listed with [OutcomeOf]: ok, canceled,
// permanent, rate_limited, timeout and error. Durations are bucketed from
// 5 ms to 60 s (.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60),
// attempts at 1, 2, 3, 4, 5, 7 and 10. [Measure] records
// into them; [Metrics.Register] adds collectors of others (the engine's
// dispatcher statistics) to the same registry.
//
// Create Metrics with [NewMetrics]; the zero value is not usable. A Metrics
// is safe for concurrent use.
type Metrics struct {
	reg         prometheus.Registerer // nil: nothing is registered
	sends       *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	attempts    prometheus.Histogram

	mu     sync.Mutex                                 // serialises additions to series
	series atomic.Pointer[map[string]*platformSeries] // copy on write: reads take no lock
}

// platformSeries holds one platform's children of the vectors, so that a
// send looks them up with one map read instead of hashing label values.
type platformSeries struct {
	sends       [len(outcomes)]prometheus.Counter
	deadLetters prometheus.Counter
	duration    prometheus.Observer
}

// NewMetrics creates the send metrics and registers them with reg.
//
// If any of them is already registered with reg (NewMetrics was called twice
// with one registry), NewMetrics registers none and returns an error
// wrapping [ErrAlreadyRegistered] and the registry's
// prometheus.AlreadyRegisteredError; other registration errors are wrapped
// as they are. It never panics.
//
// A nil reg registers nothing: the metrics are kept but not exported. Pass
// prometheus.DefaultRegisterer to publish on the default registry.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reg: reg,
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_sends_total",
			Help: "Sends through the sender middleware, by platform and final outcome (ok, canceled, permanent, rate_limited, timeout, error).",
		}, []string{"platform", "outcome"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_send_dead_letters_total",
			Help: "Failed sends kept as dead letters, by platform.",
		}, []string{"platform"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_send_duration_seconds",
			Help:    "Duration of a send, retries and rate-limit waits included, by platform.",
			Buckets: durationBuckets,
		}, []string{"platform"}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_send_attempts",
			Help:    "Attempts a send took, the first included.",
			Buckets: attemptBuckets,
		}),
	}
	empty := map[string]*platformSeries{}
	m.series.Store(&empty)
	if reg == nil {
		return m, nil
	}
	cs := []prometheus.Collector{m.sends, m.deadLetters, m.duration, m.attempts}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, registerError("send metrics", err)
		}
	}
	return m, nil
}

// Register registers c with the registry m was created with, or does
// nothing if there is none (a nil reg given to NewMetrics, or a nil m).
// Registering a collector whose metrics are already registered returns an
// error wrapping [ErrAlreadyRegistered]. The engine registers its
// dispatchers' statistics through it.
func (m *Metrics) Register(c prometheus.Collector) error {
	if m == nil || m.reg == nil {
		return nil
	}
	if err := m.reg.Register(c); err != nil {
		return registerError("collector", err)
	}
	return nil
}

func registerError(what string, err error) error {
	if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
		return fmt.Errorf("sender: register %s: %w: %w", what, ErrAlreadyRegistered, err)
	}
	return fmt.Errorf("sender: register %s: %w", what, err)
}

// Measure returns a decorator that records every send in m (see
// [Observe]): one increment of herald_sends_total with the send's platform
// and [OutcomeOf] its final error, one of herald_send_dead_letters_total if
// a DeadLetters decorator below kept it, its duration, and its attempts.
// Put it outermost, as [Default] does, so the duration covers retries and
// waits. A nil m returns the sender unchanged.
func Measure(m *Metrics) SenderDecorator { return Observe(m.observer()) }

// observer returns Measure's observer function, nil for a nil m.
func (m *Metrics) observer() func(context.Context, Outcome) {
	if m == nil {
		return nil
	}
	return m.record
}

func (m *Metrics) record(_ context.Context, o Outcome) {
	ps := m.seriesFor(o.Request.Platform)
	ps.sends[outcomeIndex(o.Err)].Inc()
	if o.DeadLettered {
		ps.deadLetters.Inc()
	}
	ps.duration.Observe(o.Duration.Seconds())
	m.attempts.Observe(float64(o.Attempts))
}

// seriesFor returns the platform's series, creating them on first use.
func (m *Metrics) seriesFor(name string) *platformSeries {
	if ps := (*m.series.Load())[name]; ps != nil {
		return ps
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	if ps := old[name]; ps != nil {
		return ps
	}
	ps := &platformSeries{duration: m.duration.WithLabelValues(name), deadLetters: m.deadLetters.WithLabelValues(name)}
	for i, o := range outcomes {
		ps.sends[i] = m.sends.WithLabelValues(name, o)
	}
	next := make(map[string]*platformSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[name] = ps
	m.series.Store(&next)
	return ps
}
