package observe

import "fmt"

// Source supplies the pipeline's numbers for one scrape. Collect appends to
// the Snapshot's slices (it must not reset them: several sources fill the
// same Snapshot). It is called on every scrape of /metrics, never twice at
// once (the server serialises scrapes), so it should be cheap: read atomic
// counters, copy small maps.
type Source interface {
	Collect(s *Snapshot)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(s *Snapshot)

// Collect calls f(s).
func (f SourceFunc) Collect(s *Snapshot) { f(s) }

// Snapshot is what the sources report for one scrape: plain values the
// collector turns into Prometheus metrics. Every count is cumulative since
// the process started (a Prometheus counter); the others are gauges.
//
// Several entries with the same labels — e.g. the same processor and status
// from two partition workers — are added up, except the per-partition
// gauges ConsumerLag and Watermark, where the largest value wins (two
// reports of one partition during a rebalance are the same partition, not
// two).
type Snapshot struct {
	// RecordsIn counts Kafka records read, per input topic:
	// fusebox_records_in_total{topic}.
	RecordsIn []TopicCount
	// DLQ counts records written to the dead-letter topic, by kind
	// (malformed, invalid, too_large, partial): fusebox_dlq_records_total{kind}.
	DLQ []KindCount
	// ConsumerLag is records published and not yet fetched, per owned
	// partition: fusebox_consumer_lag_records{topic,partition}.
	ConsumerLag []PartitionValue
	// ProcessingLatency is the wall time, in seconds, from fetching a batch
	// to the sinks accepting what it produced:
	// fusebox_processing_latency_seconds. Nil when no source measures it.
	// Sources add theirs with AddProcessingLatency, which merges them.
	ProcessingLatency *HistogramSnapshot
	// Verdicts counts verdicts emitted, per processor and status:
	// fusebox_verdicts_total{processor,status}.
	Verdicts []VerdictCount
	// BreakerTargets is how many targets are in each breaker state now
	// (closed, open, half_open): fusebox_breaker_targets{state}.
	BreakerTargets []StateCount
	// BreakerOpen is how many targets are open or half-open now, per SLO
	// that tripped them, action, state and incident id:
	// fusebox_breaker_open_targets{slo,action,state,incident}. Its
	// cardinality is SLOs × the breaker's actions × 2 × the incidents open
	// now (a closed incident's series is reported at 0 once, then
	// dropped).
	BreakerOpen []SLOTargetCount
	// FuseCommands counts fuse commands emitted, per action:
	// fusebox_fuse_commands_total{action}.
	FuseCommands []ActionCount
	// SinkRecordsOut counts records (rows, messages) a sink durably wrote,
	// per sink and destination (Kafka: topic, ClickHouse: table, JSONL:
	// file): fusebox_sink_records_total{sink,destination}.
	SinkRecordsOut []SinkCount
	// SinkErrors counts failed write attempts, per sink and destination:
	// fusebox_sink_errors_total{sink,destination}.
	SinkErrors []SinkCount
	// LateSpans counts spans that arrived behind the watermark by more than
	// the allowed lateness and were counted, not folded in:
	// fusebox_late_spans_total.
	LateSpans int64
	// Duplicates counts records recognised as already processed (replays
	// after a restart or rebalance) and skipped: fusebox_duplicates_total.
	Duplicates int64
	// CardinalityOverflows counts values folded into the overflow key
	// because a dimension hit its limit, per dimension (tenant, service,
	// model, variant): fusebox_cardinality_overflows_total{dimension}.
	CardinalityOverflows []DimensionCount
	// Watermark is the event-time watermark per source partition:
	// fusebox_watermark_timestamp_seconds{topic,partition} in Unix seconds. An entry
	// with UnixNano 0 (no watermark yet) is left out, not exported as 0.
	Watermark []PartitionTime
	// Extra carries further samples as they are, e.g. a sink's retries or
	// pending records. A sample whose name is one of the names above, or not
	// a valid metric name, is reported as a collection error (logged; the
	// rest of the scrape is served).
	Extra []Sample

	// errs are problems found while sources filled the snapshot, reported
	// as collection errors.
	errs []error
}

// AddProcessingLatency adds h to ProcessingLatency (the buckets of sources
// add up). A histogram whose buckets differ from those already added is
// left out and reported as a collection error.
func (s *Snapshot) AddProcessingLatency(h HistogramSnapshot) {
	if len(h.Counts) != len(h.UpperBounds)+1 {
		s.errs = append(s.errs, fmt.Errorf("processing latency: %d counts for %d bounds, want bounds+1", len(h.Counts), len(h.UpperBounds)))
		return
	}
	if s.ProcessingLatency == nil {
		s.ProcessingLatency = h.clone()
		return
	}
	if err := s.ProcessingLatency.merge(&h); err != nil {
		s.errs = append(s.errs, fmt.Errorf("processing latency: %w", err))
	}
}

// TopicCount is a count per topic.
type TopicCount struct {
	Topic string
	Count int64
}

// KindCount is a count per kind.
type KindCount struct {
	Kind  string
	Count int64
}

// PartitionValue is a gauge of one topic partition.
type PartitionValue struct {
	Topic     string
	Partition int32
	Value     int64
}

// PartitionTime is a time of one topic partition, in Unix nanoseconds.
type PartitionTime struct {
	Topic     string
	Partition int32
	UnixNano  int64
}

// VerdictCount counts verdicts of one processor with one status.
type VerdictCount struct {
	Processor string
	Status    string
	Count     int64
}

// StateCount counts targets in one breaker state.
type StateCount struct {
	State string
	Count int64
}

// ActionCount counts fuse commands with one action.
type ActionCount struct {
	Action string
	Count  int64
}

// SinkCount counts per sink ("kafka", "clickhouse", "jsonl") and topic (or
// table, or file).
type SinkCount struct {
	Sink        string
	Destination string // Kafka: topic, ClickHouse: table, JSONL: file
	Count       int64
}

// SLOTargetCount counts breaker targets of one SLO, action and state.
type SLOTargetCount struct {
	SLO    string
	Action string
	State  string
	// Incident is the targets' incident id (their commands' first
	// correlation id); "" when the commands carry none.
	Incident string
	Count    int64
}

// DimensionCount counts per key dimension.
type DimensionCount struct {
	Dimension string
	Count     int64
}

// SampleKind says how an Extra sample behaves.
type SampleKind int

const (
	// CounterSample only grows.
	CounterSample SampleKind = iota
	// GaugeSample goes up and down.
	GaugeSample
)

// Sample is one value of a metric that is not in the fixed set. Samples
// with the same Name form one metric family: the first sample's Help and
// Kind are used, and a label missing from some samples is exported empty
// (Prometheus treats an empty label as absent).
type Sample struct {
	Name   string
	Help   string
	Kind   SampleKind
	Labels []Label
	Value  float64
}

// Label is one name="value" pair.
type Label struct{ Name, Value string }
