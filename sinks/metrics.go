package sinks

// MetricKind says how a Metric's value behaves.
type MetricKind int

const (
	// Counter only grows (records written, errors seen).
	Counter MetricKind = iota
	// Gauge goes up and down (records pending).
	Gauge
)

// Metric is one sample a sink exposes for /metrics, e.g.
// fusebox_sink_records_total{sink="kafka",topic="fusebox.verdicts"} 1234.
// The sinks stay free of a metrics library; cmd adapts MetricsSource to
// Prometheus (one prometheus.NewConstMetric per sample on each scrape).
type Metric struct {
	Name   string
	Help   string
	Kind   MetricKind
	Labels []Label
	Value  float64
}

// Label is one name="value" pair of a Metric.
type Label struct{ Name, Value string }

// MetricsSource is implemented by sinks that expose counters. Metrics is
// safe to call concurrently with Write and Flush.
type MetricsSource interface {
	Metrics() []Metric
}
