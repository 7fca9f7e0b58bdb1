package cluster

import "github.com/prometheus/client_golang/prometheus"

// sharedCollector exports a member's [SharedStats].
type sharedCollector struct {
	s                                             *Shared
	partitions, leading, takeovers, redo, skipped *prometheus.Desc
}

// Collector returns a Prometheus collector of the member's figures:
// herald_cluster_partitions (the partitions it owns),
// herald_cluster_leading{adapter} (1 for each account it is the gateway
// of, 0 for the others it contends for), herald_cluster_takeovers_total and
// herald_cluster_redeliveries_total and herald_cluster_skipped_total
// (events and sends found done already). Register it once.
func (s *Shared) Collector() prometheus.Collector {
	node := prometheus.Labels{"node": s.cfg.Node}
	return &sharedCollector{
		s:          s,
		partitions: prometheus.NewDesc("herald_cluster_partitions", "Partitions of the bot's chats this process owns.", nil, node),
		leading:    prometheus.NewDesc("herald_cluster_leading", "1 for each platform account this process is the gateway of, 0 for the others it contends for.", []string{"adapter"}, node),
		takeovers:  prometheus.NewDesc("herald_cluster_takeovers_total", "Partitions taken from a process that was gone or handed over with events in hand, and leases taken while other processes were live.", nil, node),
		redo:       prometheus.NewDesc("herald_cluster_redeliveries_total", "Events and sends received that had been delivered before.", nil, node),
		skipped:    prometheus.NewDesc("herald_cluster_skipped_total", "Events and sends found done already: events given again by the platform, sends a dead gateway had made.", nil, node),
	}
}

// Describe implements prometheus.Collector.
func (c *sharedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.partitions
	ch <- c.leading
	ch <- c.takeovers
	ch <- c.redo
	ch <- c.skipped
}

// Collect implements prometheus.Collector.
func (c *sharedCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(c.partitions, prometheus.GaugeValue, float64(st.Partitions))
	c.s.leading.Range(func(k, v any) bool {
		held := 0.0
		if v.(bool) {
			held = 1
		}
		ch <- prometheus.MustNewConstMetric(c.leading, prometheus.GaugeValue, held, k.(string))
		return true
	})
	ch <- prometheus.MustNewConstMetric(c.takeovers, prometheus.CounterValue, float64(st.Takeovers))
	ch <- prometheus.MustNewConstMetric(c.redo, prometheus.CounterValue, float64(st.Redeliveries))
	ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(st.Skipped))
}
