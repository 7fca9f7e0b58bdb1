package sender

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// QueueStats is a snapshot of an outbound dispatcher's statistics, as
// [Metrics.WatchQueue] exports them. The counters only grow; the gauges are
// the state at the moment of the snapshot.
type QueueStats struct {
	Submitted uint64 // tasks the dispatcher accepted
	Rejected  uint64 // tasks it refused (queue full, closed)
	Completed uint64 // tasks that ran and returned nil
	Failed    uint64 // tasks that ran and returned an error
	Panicked  uint64 // tasks that panicked

	Queued  int // tasks waiting in chat queues
	Running int // tasks running now
	Waiting int // tasks paused between runs, holding no worker (a send waiting out a backoff or a rate limit)
	Chats   int // chats with a task queued, running or waiting
}

// WatchQueue registers, with the registry m was created with, a collector
// that calls stats at every scrape and exports the result as
//
//	herald_dispatcher_submitted_total{dispatcher}  counter
//	herald_dispatcher_rejected_total{dispatcher}   counter
//	herald_dispatcher_completed_total{dispatcher}  counter
//	herald_dispatcher_failed_total{dispatcher}     counter
//	herald_dispatcher_panicked_total{dispatcher}   counter
//	herald_dispatcher_queued{dispatcher}           gauge
//	herald_dispatcher_running{dispatcher}          gauge
//	herald_dispatcher_waiting{dispatcher}          gauge
//	herald_dispatcher_chats{dispatcher}            gauge
//
// where the dispatcher label is name. stats must be safe to call from the
// scraping goroutine at any time and should be cheap.
//
// Watching a second queue under another name is fine; watching one name
// twice returns an error wrapping [ErrAlreadyRegistered]. A nil stats
// returns an error. If m was created with a nil registerer, WatchQueue
// registers nothing and returns nil.
func (m *Metrics) WatchQueue(name string, stats func() QueueStats) error {
	if stats == nil {
		return errors.New("sender: WatchQueue: nil stats function")
	}
	if m == nil || m.reg == nil {
		return nil
	}
	if err := m.reg.Register(newQueueCollector(name, stats)); err != nil {
		return registerError("dispatcher metrics "+name, err)
	}
	return nil
}

// queueMetric describes one exported value of QueueStats.
type queueMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(QueueStats) float64
}

type queueCollector struct {
	stats   func() QueueStats
	metrics []queueMetric
}

func newQueueCollector(name string, stats func() QueueStats) *queueCollector {
	labels := prometheus.Labels{"dispatcher": name}
	m := func(fq, help string, kind prometheus.ValueType, value func(QueueStats) float64) queueMetric {
		return queueMetric{desc: prometheus.NewDesc(fq, help, nil, labels), kind: kind, value: value}
	}
	return &queueCollector{stats: stats, metrics: []queueMetric{
		m("herald_dispatcher_submitted_total", "Tasks the outbound dispatcher accepted.", prometheus.CounterValue,
			func(s QueueStats) float64 { return float64(s.Submitted) }),
		m("herald_dispatcher_rejected_total", "Tasks the outbound dispatcher refused.", prometheus.CounterValue,
			func(s QueueStats) float64 { return float64(s.Rejected) }),
		m("herald_dispatcher_completed_total", "Tasks that ran and returned no error.", prometheus.CounterValue,
			func(s QueueStats) float64 { return float64(s.Completed) }),
		m("herald_dispatcher_failed_total", "Tasks that ran and returned an error.", prometheus.CounterValue,
			func(s QueueStats) float64 { return float64(s.Failed) }),
		m("herald_dispatcher_panicked_total", "Tasks that panicked.", prometheus.CounterValue,
			func(s QueueStats) float64 { return float64(s.Panicked) }),
		m("herald_dispatcher_queued", "Tasks waiting in chat queues.", prometheus.GaugeValue,
			func(s QueueStats) float64 { return float64(s.Queued) }),
		m("herald_dispatcher_running", "Tasks running.", prometheus.GaugeValue,
			func(s QueueStats) float64 { return float64(s.Running) }),
		m("herald_dispatcher_waiting", "Tasks paused between runs, holding no worker.", prometheus.GaugeValue,
			func(s QueueStats) float64 { return float64(s.Waiting) }),
		m("herald_dispatcher_chats", "Chats with a task queued, running or waiting.", prometheus.GaugeValue,
			func(s QueueStats) float64 { return float64(s.Chats) }),
	}}
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector: it reads the stats once and sends
// every value.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		metric, err := prometheus.NewConstMetric(m.desc, m.kind, m.value(s))
		if err != nil {
			metric = prometheus.NewInvalidMetric(m.desc, err)
		}
		ch <- metric
	}
}
