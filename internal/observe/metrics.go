package observe

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The metric names fusebox serves on /metrics, besides the Go runtime's
// go_* and the process's process_* metrics.
const (
	MetricBuildInfo            = "fusebox_build_info"
	MetricReady                = "fusebox_ready"
	MetricRecordsIn            = "fusebox_records_in_total"
	MetricDLQRecords           = "fusebox_dlq_records_total"
	MetricConsumerLag          = "fusebox_consumer_lag_records"
	MetricProcessingLatency    = "fusebox_processing_latency_seconds"
	MetricVerdicts             = "fusebox_verdicts_total"
	MetricBreakerTargets       = "fusebox_breaker_targets"
	MetricFuseCommands         = "fusebox_fuse_commands_total"
	MetricSinkRecords          = "fusebox_sink_records_total"
	MetricSinkErrors           = "fusebox_sink_errors_total"
	MetricLateSpans            = "fusebox_late_spans_total"
	MetricDuplicates           = "fusebox_duplicates_total"
	MetricCardinalityOverflows = "fusebox_cardinality_overflows_total"
	MetricWatermark            = "fusebox_watermark_timestamp_seconds"
	MetricBreakerOpenTargets   = "fusebox_breaker_open_targets"
)

// Family describes one metric family of the fixed set, for documentation
// and tests.
type Family struct {
	Name   string
	Type   string // counter, gauge or histogram
	Labels []string
	Help   string
}

var families = []Family{
	{MetricBuildInfo, "gauge", []string{"version", "revision", "go_version"}, "Always 1; the labels say which build runs (version and revision: stamped at build time by -ldflags -X, as the Dockerfile does, else the module version and the VCS commit; unknown when neither)."},
	{MetricReady, "gauge", nil, "1 when /readyz answers 200, else 0."},
	{MetricRecordsIn, "counter", []string{"topic"}, "Kafka records read, per input topic."},
	{MetricDLQRecords, "counter", []string{"kind"}, "Records written to the dead-letter topic, by kind (malformed, invalid, too_large, future_event_time, partial)."},
	{MetricConsumerLag, "gauge", []string{"topic", "partition"}, "Records published and not yet fetched, per owned partition, as of its last fetch."},
	{MetricProcessingLatency, "histogram", nil, "Wall time from fetching a batch to the sinks accepting what it produced, in seconds."},
	{MetricVerdicts, "counter", []string{"processor", "status"}, "Verdicts emitted, per processor and status (ok, warn, breach, insufficient_data)."},
	{MetricBreakerTargets, "gauge", []string{"state"}, "Targets in each breaker state (closed, open, half_open)."},
	{MetricBreakerOpenTargets, "gauge", []string{"slo", "action", "state", "incident"}, "Targets open or half-open now, per SLO that tripped them, action, state (open, half_open) and incident id; a series ends with one 0 when its targets close."},
	{MetricFuseCommands, "counter", []string{"action"}, "Fuse commands emitted, per action; every action from the start at 0."},
	{MetricSinkRecords, "counter", []string{"sink", "destination"}, "Records durably written, per sink and destination (Kafka: topic, ClickHouse: table, JSONL: file)."},
	{MetricSinkErrors, "counter", []string{"sink", "destination"}, "Failed write attempts, per sink and destination (Kafka: topic, ClickHouse: table, JSONL: file); each is retried."},
	{MetricLateSpans, "counter", nil, "Spans behind the watermark by more than the allowed lateness: counted, not folded in."},
	{MetricDuplicates, "counter", nil, "Records recognised as already processed (replays) and skipped."},
	{MetricCardinalityOverflows, "counter", []string{"dimension"}, "Values folded into the overflow key because a key dimension hit its limit."},
	{MetricWatermark, "gauge", []string{"topic", "partition"}, "Event-time watermark per keyed partition this process owns, Unix seconds; absent until the partition has one."},
}

// Families lists the fixed metric families with their labels, in the order
// of the documentation.
func Families() []Family {
	out := slices.Clone(families)
	for i := range out {
		out[i].Labels = slices.Clone(out[i].Labels)
	}
	return out
}

// Revision is the VCS commit the binary was built from: the one the
// linker stamped (-ldflags "-X github.com/fusebox-dev/fusebox/internal/observe.revision=SHA",
// as the Dockerfile does from its REVISION build argument), else
// runtime/debug.ReadBuildInfo's vcs.revision with "+dirty" when the
// checkout had changes, else "unknown" (go run, go test, a build outside a
// checkout or with -buildvcs=false and no stamp).
func Revision() string {
	if revision != "" {
		return revision
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// collector turns the sources' Snapshot into metrics on every scrape.
type collector struct {
	mu       sync.Mutex // one scrape at a time: sources need not be reentrant
	sources  []Source
	ready    func() error
	version  string
	revision string
	descs    map[string]*prometheus.Desc
}

func newCollector(sources []Source, ready func() error, version string) *collector {
	c := &collector{sources: sources, ready: ready, version: version, revision: Revision(), descs: map[string]*prometheus.Desc{}}
	for _, f := range families {
		c.descs[f.Name] = prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
	}
	return c
}

// Describe sends nothing: the Extra samples are only known at scrape time,
// which makes this an unchecked collector.
func (c *collector) Describe(chan<- *prometheus.Desc) {}

// Collect gathers one Snapshot from every source and sends its metrics.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s Snapshot
	for _, src := range c.sources {
		src.Collect(&s)
	}
	e := emitter{c: c, ch: ch}
	e.one(MetricBuildInfo, prometheus.GaugeValue, 1, c.version, c.revision, runtime.Version())
	ready := 0.0
	if c.ready() == nil {
		ready = 1
	}
	e.one(MetricReady, prometheus.GaugeValue, ready)

	a := e.agg(MetricRecordsIn, prometheus.CounterValue, false)
	for _, v := range s.RecordsIn {
		a.add(float64(v.Count), v.Topic)
	}
	a.emit()
	a = e.agg(MetricDLQRecords, prometheus.CounterValue, false)
	for _, v := range s.DLQ {
		a.add(float64(v.Count), v.Kind)
	}
	a.emit()
	a = e.agg(MetricConsumerLag, prometheus.GaugeValue, true)
	for _, v := range s.ConsumerLag {
		a.add(float64(v.Value), v.Topic, strconv.Itoa(int(v.Partition)))
	}
	a.emit()
	a = e.agg(MetricVerdicts, prometheus.CounterValue, false)
	for _, v := range s.Verdicts {
		a.add(float64(v.Count), v.Processor, v.Status)
	}
	a.emit()
	a = e.agg(MetricBreakerTargets, prometheus.GaugeValue, false)
	for _, v := range s.BreakerTargets {
		a.add(float64(v.Count), v.State)
	}
	a.emit()
	a = e.agg(MetricBreakerOpenTargets, prometheus.GaugeValue, false)
	for _, v := range s.BreakerOpen {
		a.add(float64(v.Count), v.SLO, v.Action, v.State, v.Incident)
	}
	a.emit()
	a = e.agg(MetricFuseCommands, prometheus.CounterValue, false)
	for _, v := range s.FuseCommands {
		a.add(float64(v.Count), v.Action)
	}
	a.emit()
	a = e.agg(MetricSinkRecords, prometheus.CounterValue, false)
	for _, v := range s.SinkRecordsOut {
		a.add(float64(v.Count), v.Sink, v.Destination)
	}
	a.emit()
	a = e.agg(MetricSinkErrors, prometheus.CounterValue, false)
	for _, v := range s.SinkErrors {
		a.add(float64(v.Count), v.Sink, v.Destination)
	}
	a.emit()
	e.one(MetricLateSpans, prometheus.CounterValue, float64(s.LateSpans))
	e.one(MetricDuplicates, prometheus.CounterValue, float64(s.Duplicates))
	a = e.agg(MetricCardinalityOverflows, prometheus.CounterValue, false)
	for _, v := range s.CardinalityOverflows {
		a.add(float64(v.Count), v.Dimension)
	}
	a.emit()
	a = e.agg(MetricWatermark, prometheus.GaugeValue, true)
	for _, v := range s.Watermark {
		if v.UnixNano != 0 {
			a.add(float64(v.UnixNano)/1e9, v.Topic, strconv.Itoa(int(v.Partition)))
		}
	}
	a.emit()
	if s.ProcessingLatency != nil {
		e.histogram(MetricProcessingLatency, s.ProcessingLatency)
	}
	e.extra(s.Extra)
	for _, err := range s.errs {
		e.send(nil, err)
	}
}

// emitter sends metrics, turning construction errors into invalid metrics
// (the scrape logs them and serves the rest).
type emitter struct {
	c  *collector
	ch chan<- prometheus.Metric
}

func (e emitter) one(name string, t prometheus.ValueType, v float64, labels ...string) {
	e.send(prometheus.NewConstMetric(e.c.descs[name], t, v, labels...))
}

func (e emitter) send(m prometheus.Metric, err error) {
	if err != nil {
		e.ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		return
	}
	e.ch <- m
}

func (e emitter) histogram(name string, h *HistogramSnapshot) {
	if len(h.Counts) != len(h.UpperBounds)+1 {
		err := fmt.Errorf("%s: %d counts for %d bounds, want bounds+1", name, len(h.Counts), len(h.UpperBounds))
		e.send(nil, err)
		return
	}
	buckets := make(map[float64]uint64, len(h.UpperBounds))
	var cum uint64
	for i, b := range h.UpperBounds {
		cum += h.Counts[i]
		buckets[b] = cum
	}
	e.send(prometheus.NewConstHistogram(e.c.descs[name], cum+h.Counts[len(h.UpperBounds)], h.Sum, buckets))
}

// aggregate adds up (or takes the largest of) values with the same labels.
type aggregate struct {
	e     emitter
	name  string
	t     prometheus.ValueType
	max   bool
	keys  []string
	vals  map[string]float64
	label map[string][]string
}

func (e emitter) agg(name string, t prometheus.ValueType, useMax bool) *aggregate {
	return &aggregate{e: e, name: name, t: t, max: useMax, vals: map[string]float64{}, label: map[string][]string{}}
}

func (a *aggregate) add(v float64, labels ...string) {
	k := strings.Join(labels, "\xff")
	old, seen := a.vals[k]
	switch {
	case !seen:
		a.keys = append(a.keys, k)
		a.label[k] = labels
		a.vals[k] = v
	case a.max:
		a.vals[k] = max(old, v)
	default:
		a.vals[k] = old + v
	}
}

func (a *aggregate) emit() {
	slices.Sort(a.keys)
	for _, k := range a.keys {
		a.e.one(a.name, a.t, a.vals[k], a.label[k]...)
	}
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// extra exports the Extra samples, one family per name.
func (e emitter) extra(samples []Sample) {
	type fam struct {
		help   string
		kind   SampleKind
		labels []string
		items  []Sample
	}
	fams := map[string]*fam{}
	var names []string
	for _, s := range samples {
		switch {
		case !metricNameRE.MatchString(s.Name):
			e.send(nil, fmt.Errorf("extra sample: %q is not a valid metric name", s.Name))
			continue
		case e.c.descs[s.Name] != nil:
			e.send(nil, fmt.Errorf("extra sample %s: the name belongs to fusebox's fixed metrics; fill the Snapshot field instead", s.Name))
			continue
		}
		bad := ""
		for _, l := range s.Labels {
			if !labelNameRE.MatchString(l.Name) || strings.HasPrefix(l.Name, "__") {
				bad = l.Name
				break
			}
		}
		if bad != "" {
			e.send(nil, fmt.Errorf("extra sample %s: %q is not a valid label name", s.Name, bad))
			continue
		}
		f := fams[s.Name]
		if f == nil {
			f = &fam{help: s.Help, kind: s.Kind}
			fams[s.Name] = f
			names = append(names, s.Name)
		}
		for _, l := range s.Labels {
			if !slices.Contains(f.labels, l.Name) {
				f.labels = append(f.labels, l.Name)
			}
		}
		f.items = append(f.items, s)
	}
	slices.Sort(names)
	for _, name := range names {
		f := fams[name]
		slices.Sort(f.labels)
		help := f.help
		if help == "" {
			help = name
		}
		desc := prometheus.NewDesc(name, help, f.labels, nil)
		t := prometheus.CounterValue
		if f.kind == GaugeSample {
			t = prometheus.GaugeValue
		}
		a := &aggregate{e: e, name: name, t: t, vals: map[string]float64{}, label: map[string][]string{}}
		for _, s := range f.items {
			values := make([]string, len(f.labels))
			for _, l := range s.Labels {
				values[slices.Index(f.labels, l.Name)] = l.Value
			}
			a.add(s.Value, values...)
		}
		slices.Sort(a.keys)
		for _, k := range a.keys {
			e.send(prometheus.NewConstMetric(desc, t, a.vals[k], a.label[k]...))
		}
	}
}
