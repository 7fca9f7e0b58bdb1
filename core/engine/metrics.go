package engine

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldbot/herald/core/journal"
)

// dispatcherCollector exports a dispatcher's [DispatcherStats] to
// Prometheus under the same names and with the same meanings, read at each
// scrape:
//
//	herald_dispatcher_submitted_total{dispatcher}  counter  Submitted
//	herald_dispatcher_rejected_total{dispatcher}   counter  Rejected
//	herald_dispatcher_completed_total{dispatcher}  counter  Completed (failed and panicked included)
//	herald_dispatcher_failed_total{dispatcher}     counter  Failed (panicked included)
//	herald_dispatcher_panicked_total{dispatcher}   counter  Panicked
//	herald_dispatcher_queued{dispatcher}           gauge    Queued
//	herald_dispatcher_running{dispatcher}          gauge    Running
//	herald_dispatcher_waiting{dispatcher}          gauge    Waiting
//	herald_dispatcher_chats{dispatcher}            gauge    Chats
//
// The dispatcher label is "outbound" (sends) or "inbound" (events).
type dispatcherCollector struct {
	stats   func() DispatcherStats
	metrics []dispatcherMetric
}

type dispatcherMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(DispatcherStats) float64
}

func newDispatcherCollector(name string, stats func() DispatcherStats) *dispatcherCollector {
	labels := prometheus.Labels{"dispatcher": name}
	m := func(fq, help string, kind prometheus.ValueType, value func(DispatcherStats) float64) dispatcherMetric {
		return dispatcherMetric{desc: prometheus.NewDesc(fq, help, nil, labels), kind: kind, value: value}
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	return &dispatcherCollector{stats: stats, metrics: []dispatcherMetric{
		m("herald_dispatcher_submitted_total", "Tasks the dispatcher accepted.", counter,
			func(s DispatcherStats) float64 { return float64(s.Submitted) }),
		m("herald_dispatcher_rejected_total", "Tasks the dispatcher refused.", counter,
			func(s DispatcherStats) float64 { return float64(s.Rejected) }),
		m("herald_dispatcher_completed_total", "Tasks that finished, whatever their outcome (failed and panicked ones included).", counter,
			func(s DispatcherStats) float64 { return float64(s.Completed) }),
		m("herald_dispatcher_failed_total", "Tasks that finished with an error (panicked ones included).", counter,
			func(s DispatcherStats) float64 { return float64(s.Failed) }),
		m("herald_dispatcher_panicked_total", "Tasks that panicked.", counter,
			func(s DispatcherStats) float64 { return float64(s.Panicked) }),
		m("herald_dispatcher_queued", "Tasks waiting in chat queues.", gauge,
			func(s DispatcherStats) float64 { return float64(s.Queued) }),
		m("herald_dispatcher_running", "Tasks running.", gauge,
			func(s DispatcherStats) float64 { return float64(s.Running) }),
		m("herald_dispatcher_waiting", "Tasks paused between runs, holding no worker.", gauge,
			func(s DispatcherStats) float64 { return float64(s.Waiting) }),
		m("herald_dispatcher_chats", "Chats with a task queued, running or waiting.", gauge,
			func(s DispatcherStats) float64 { return float64(s.Chats) }),
	}}
}

// Describe implements prometheus.Collector.
func (c *dispatcherCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector: it reads the stats once and
// sends every value.
func (c *dispatcherCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(s))
	}
}

// journalCollector exports journal.Stats:
//
//	herald_journal_pending{kind="events"|"sends"}  gauge  Events, Sends
type journalCollector struct {
	stats func() journal.Stats
	desc  *prometheus.Desc
}

func newJournalCollector(stats func() journal.Stats) *journalCollector {
	return &journalCollector{stats: stats, desc: prometheus.NewDesc("herald_journal_pending",
		"Events recorded in the journal and not handled yet, and sends recorded and not final.", []string{"kind"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *journalCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *journalCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(s.Events), "events")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(s.Sends), "sends")
}
