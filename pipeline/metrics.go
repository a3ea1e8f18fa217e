package pipeline

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/ingest"
	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
)

// Metrics returns the pipeline's observe.Source, for observe.Serve. On
// every scrape it reads:
//
//   - both consumers (the router's group on the source topics, the keyed
//     stage's group on the keyed topic): records in per topic
//     (fusebox_records_in_total), dead-lettered records by kind, partial
//     included (fusebox_dlq_records_total), lag per owned partition as of
//     its last fetch (fusebox_consumer_lag_records);
//   - the keyed stage: late spans, duplicates, cardinality overflows per
//     dimension, and the event-time watermark of every keyed partition
//     this process owns (fusebox_watermark_timestamp_seconds{topic=<keyed topic>});
//   - what the keyed stage handed its sinks: verdicts by processor and
//     status, fuse commands by action (every action at 0 from the start),
//     targets per breaker state as their latest commands say (a target is
//     counted from its first command, and stays counted, closed, until the
//     process restarts), and the open and half-open ones per SLO that
//     tripped them and action (fusebox_breaker_open_targets);
//   - the processing latency: per keyed batch, the wall time from handing
//     it to the keyed stage (just after its fetch and decode) to every sink
//     having accepted its output (fusebox_processing_latency_seconds);
//   - the sinks' own counters: records written and errors per sink and
//     destination (Kafka: topic, ClickHouse: table, JSONL: file), and
//     their other samples (retries, pending records, ...) as they name
//     them, their topic/table/path label exported as destination;
//   - a few more counters as extra families: LLM spans decoded, spans
//     skipped for lack of a model, skipped spans that looked like LLM calls
//     (by scope and reason), corrections, late corrections, offset
//     commits and their errors, fetch errors, checkpoints, evaluations.
//
// Counts restored with a keyed partition's checkpoint (late spans,
// duplicates, overflows, evaluations) continue from the checkpoint, so
// they are counts since the partition's state began, not since this
// process started.
func (p *Pipeline) Metrics() observe.Source { return observe.SourceFunc(p.collect) }

// StartingMetrics is the Source to serve while no Pipeline runs yet
// (connecting, creating topics, migrating): the counters an alert takes a
// rate() of, at 0 — fuse commands of every action — so that their series
// exist from the process's first scrape.
func StartingMetrics() observe.Source {
	return observe.SourceFunc(func(s *observe.Snapshot) {
		for _, a := range commandActions {
			s.FuseCommands = append(s.FuseCommands, observe.ActionCount{Action: string(a)})
		}
	})
}

// Ready reports whether the pipeline is running and has joined both
// consumer groups — each assigned this process at least one partition —
// and the keyed stage restored the checkpoints of the partitions it owns.
// ClickHouse migrations ran in New, before Run. Else it says why not (for
// /readyz). A process that owns no partition (more processes than
// partitions) is reported not ready: it does no work.
//
// Once running it is also not ready, saying why, while a keyed partition's
// watermark stalls with records arriving (time.watermark_stall_evaluations)
// or a sink is failing, or a partition it reads or writes has no
// reachable Kafka leader (KafkaWatch): the pipeline is up but not judging,
// or not delivering, and an orchestrator or an SRE must hear of it.
func (p *Pipeline) Ready() error {
	err := p.tr.ready(p.cfg.Kafka.Group+".router", p.cfg.Kafka.Group+".engine", p.source.Stats(), p.keyedIn.Stats())
	var why []string
	if err != nil {
		why = append(why, err.Error())
	}
	if p.tr.state.Load() == trackerRunning {
		why = append(why, p.keyed.Stalled()...)
		why = append(why, p.sw.Failing()...)
		if p.kw != nil {
			why = append(why, p.kw.Reasons()...)
		}
	}
	if len(why) == 0 {
		return nil
	}
	return errors.New(joinReasons(why))
}

func (p *Pipeline) collect(s *observe.Snapshot) {
	extra := func(name, help string, kind observe.SampleKind, v float64, labels ...observe.Label) {
		s.Extra = append(s.Extra, observe.Sample{Name: name, Help: help, Kind: kind, Value: v, Labels: labels})
	}
	if p.Guard != nil {
		gs := p.Guard.Stats()
		extra("fusebox_fuse_guard_foreign_records_total", "Records on the fuse topic that were not fusebox's current command of their target (tombstones, replays of older commands, forgeries).", observe.CounterSample, float64(gs.Foreign))
		extra("fusebox_fuse_guard_republished_total", "Current commands fusebox re-published because the latest record of their target was not theirs.", observe.CounterSample, float64(gs.Republished))
		extra("fusebox_fuse_guard_publish_errors_total", "Failed re-publishes of a current command (retried on the next poll).", observe.CounterSample, float64(gs.PublishErrs))
	}

	for _, c := range []struct {
		stage string
		c     Consumer
	}{{"router", p.source}, {"engine", p.keyedIn}} {
		st := c.c.Stats()
		for topic, n := range st.RecordsIn {
			s.RecordsIn = append(s.RecordsIn, observe.TopicCount{Topic: topic, Count: n})
		}
		for kind, n := range st.DeadLettered {
			s.DLQ = append(s.DLQ, observe.KindCount{Kind: string(kind), Count: n})
		}
		s.DLQ = append(s.DLQ, observe.KindCount{Kind: "partial", Count: st.PartialDeadLettered})
		for _, l := range st.PartitionLag {
			s.ConsumerLag = append(s.ConsumerLag, observe.PartitionValue{Topic: l.Topic, Partition: l.Partition, Value: l.Lag})
		}
		stage := observe.Label{Name: "stage", Value: c.stage}
		extra("fusebox_offset_commits_total", "Offset commit requests.", observe.CounterSample, float64(st.Commits), stage)
		extra("fusebox_offset_commit_errors_total", "Failed offset commit requests.", observe.CounterSample, float64(st.CommitErrors), stage)
		extra("fusebox_fetch_errors_total", "Partition errors returned by fetches.", observe.CounterSample, float64(st.FetchErrors), stage)
		extra("fusebox_dlq_write_retries_total", "Failed dead-letter writes that were retried (the source partition's commit waits for them).", observe.CounterSample, float64(st.DLQRetries), stage)
		for _, part := range []string{ingest.OmittedValue, ingest.OmittedHeaders, ingest.OmittedKey, ingest.OmittedDetails} {
			extra("fusebox_dlq_omitted_total", "Parts dropped from dead letters the DLQ topic refused as too large, by part (value, headers: the record's own, key, details: fusebox's error text cut); each drop is described in the dead letter's fusebox.dlq.* headers.",
				observe.CounterSample, float64(st.DLQOmitted[part]), stage, observe.Label{Name: "part", Value: part})
		}
		extra("fusebox_dlq_unwritable_total", "Dead letters NOT written because the DLQ topic refused even their smallest form; each is logged at ERROR with its source topic, partition and offset.", observe.CounterSample, float64(st.DLQUnwritable), stage)
		extra("fusebox_paused_partitions", "Owned partitions paused because too many records await acknowledgement.", observe.GaugeSample, float64(st.PausedPartitions), stage)
		if c.stage == "router" {
			extra("fusebox_spans_decoded_total", "Valid LLM spans decoded from the span topics.", observe.CounterSample, float64(st.Spans))
			extra("fusebox_spans_skipped_total", "Spans not decoded as LLM calls (no model in any form read, or an OpenInference span of a non-LLM kind), skipped by design.", observe.CounterSample, float64(st.SkippedNoModel))
			for _, u := range st.Unkeyed {
				extra("fusebox_spans_unkeyed_total", "Skipped spans that looked like LLM calls (a GenAI instrumentation scope, a gen_ai.* or llm.* attribute) but could not be keyed, by instrumentation scope (at most 32, then \"(other)\"; \"(none)\" for spans without a scope) and reason (no_model, not_llm_kind); among fusebox_spans_skipped_total.",
					observe.CounterSample, float64(u.Count), observe.Label{Name: "scope", Value: u.Scope}, observe.Label{Name: "reason", Value: u.Reason})
			}
			for _, reason := range []string{ingest.DroppedEventBeforeStart, ingest.DroppedEventAfterEnd, ingest.DroppedServerTTFT, ingest.DroppedServerTPOT} {
				if n := st.TimingsDropped[reason]; n > 0 {
					extra("fusebox_span_timings_dropped_total", "Library-form timings (first-token events, openlit's gen_ai.server.* TTFT and TPOT) out of range, left out of spans that were kept, by reason (event_before_start, event_after_end, server_ttft, server_tpot).",
						observe.CounterSample, float64(n), observe.Label{Name: "reason", Value: reason})
				}
			}
			extra("fusebox_spans_invalid_total", "Spans dropped as invalid from records delivered in part (those records are in the DLQ, kind partial).", observe.CounterSample, float64(st.InvalidSpans))
			extra("fusebox_corrections_decoded_total", "Correction events decoded.", observe.CounterSample, float64(st.Corrections))
		}
	}

	ks := p.keyed.Stats()
	s.LateSpans += ks.LateSpans
	s.Duplicates += ks.Duplicates
	for i, d := range schemas.Dimensions {
		s.CardinalityOverflows = append(s.CardinalityOverflows, observe.DimensionCount{Dimension: d, Count: ks.Overflowed[i]})
	}
	now := time.Now()
	for part, wm := range p.keyed.Partitions() {
		if wm != math.MinInt64 && wm != 0 {
			s.Watermark = append(s.Watermark, observe.PartitionTime{Topic: p.cfg.Topics.Keyed, Partition: part, UnixNano: wm})
			extra("fusebox_event_time_lag_seconds", "Wall clock minus the keyed partition's event-time watermark: how far behind real time its verdicts are (the allowed lateness plus any backlog or stall).",
				observe.GaugeSample, now.Sub(time.Unix(0, wm)).Seconds(),
				observe.Label{Name: "topic", Value: p.cfg.Topics.Keyed}, observe.Label{Name: "partition", Value: strconv.Itoa(int(part))})
		}
	}
	extra("fusebox_key_overflows_total", "Spans folded into the overflow key because their keyed partition reached keys.max_keys live keys.", observe.CounterSample, float64(ks.KeysOverflowed))
	extra("fusebox_evaluations_skipped_total", "Evaluation boundaries jumped over after a far watermark jump because no processor held any state (empty windows are never evaluated one by one).", observe.CounterSample, float64(ks.SkippedEvaluations))
	extra("fusebox_idle_not_live_total", "Idle markers whose silence did not advance an all-idle keyed partition's watermark because their source was not live: its newest event time more than allowed lateness + idle source timeout behind the router's clock (a backfill, a replay, or a larger export delay).", observe.CounterSample, float64(ks.IdleNotLive))
	extra("fusebox_live_keys", "Live keys (combinations of dimension values) admitted under keys.max_keys, summed over the keyed partitions this process owns.", observe.GaugeSample, float64(ks.LiveKeys))
	extra("fusebox_late_corrections_total", "Corrections behind the watermark by more than the allowed lateness: counted, not joined.", observe.CounterSample, float64(ks.LateCorrections))
	extra("fusebox_evaluations_total", "Processor evaluations run by the keyed stage.", observe.CounterSample, float64(ks.Evaluations))
	extra("fusebox_foreign_records_total", "Records of another deployment skipped: keyed records (its router writes this keyed topic) and checkpoint records (it shares this state topic).",
		observe.CounterSample, float64(p.keyed.ForeignRecords()), observe.Label{Name: "kind", Value: "keyed"})
	extra("fusebox_foreign_records_total", "Records of another deployment skipped: keyed records (its router writes this keyed topic) and checkpoint records (it shares this state topic).",
		observe.CounterSample, float64(p.stateForeign()), observe.Label{Name: "kind", Value: "state"})
	for slo, n := range p.keyed.StarvedTargets() {
		extra("fusebox_breaker_starved_targets", "Half-open targets whose probes are too few to judge them (a full probe window of the SLO that tripped them was insufficient_data): they neither close nor re-trip while the traffic stays that thin; per SLO, a series seen once stays, at 0 when none.",
			observe.GaugeSample, float64(n), observe.Label{Name: "slo", Value: slo})
	}
	for part, n := range p.CheckpointBytes() {
		extra("fusebox_checkpoint_bytes", "Size of the newest checkpoint of an owned keyed partition (the snapshot, before chunking), in bytes: it grows with the live keys and their windows.",
			observe.GaugeSample, float64(n), observe.Label{Name: "partition", Value: strconv.Itoa(int(part))})
	}
	if p.incidents != nil {
		sums, cps := p.incidents.Counts()
		extra("fusebox_incident_summaries_total", "Evaluation summaries the incident stage applied (incidents.enabled).", observe.CounterSample, float64(sums))
		extra("fusebox_incident_checkpoints_total", "Incident-stage checkpoints (sinks flushed, state saved, input acknowledged).", observe.CounterSample, float64(cps))
		extra("fusebox_incident_partial_decisions_total", "SLO boundaries the incident stage decided without a lagging keyed partition after incidents.max_wait evaluations (records marked partial; a WARN names the partitions): a stuck or restoring worker, or a process whose SLO file has no incidents.",
			observe.CounterSample, float64(p.incidents.Partial()))
	}
	extra("fusebox_checkpoints_total", "Keyed-partition checkpoints (sinks flushed, state saved, input acknowledged).", observe.CounterSample, float64(p.keyed.Checkpoints()))

	p.tr.noSamples.collect(s)
	p.tr.mu.Lock()
	for k, n := range p.tr.verdicts {
		s.Verdicts = append(s.Verdicts, observe.VerdictCount{Processor: k.processor, Status: string(k.status), Count: n})
	}
	for a, n := range p.tr.commands {
		s.FuseCommands = append(s.FuseCommands, observe.ActionCount{Action: string(a), Count: n})
	}
	states := map[schemas.BreakerState]int64{schemas.StateClosed: 0, schemas.StateOpen: 0, schemas.StateHalfOpen: 0}
	for _, t := range p.tr.targets {
		states[t.state]++
	}
	s.BreakerOpen = append(s.BreakerOpen, p.tr.openTargets()...)
	p.tr.mu.Unlock()
	for st, n := range states {
		s.BreakerTargets = append(s.BreakerTargets, observe.StateCount{State: string(st), Count: n})
	}
	s.AddProcessingLatency(p.tr.latency.Snapshot())

	for _, src := range p.metricSinks() {
		for _, m := range src.Metrics() {
			sinkSample(s, m)
		}
	}
}

// metricSinks are the configured sinks that count (nil ones left out).
func (p *Pipeline) metricSinks() []sinks.MetricsSource {
	var out []sinks.MetricsSource
	if p.ClickHouse != nil {
		out = append(out, p.ClickHouse)
	}
	if p.Kafka != nil {
		out = append(out, p.Kafka)
	}
	if p.JSONL != nil {
		out = append(out, p.JSONL)
	}
	return out
}

// sinkSample files one sink metric: records and errors into the fixed
// families, the rest as extra samples under their own names. A sink's
// "topic" (Kafka), "table" (ClickHouse) or "path" (JSONL) label is
// exported as "destination" in every family: one name for where a sink
// writes.
func sinkSample(s *observe.Snapshot, m sinks.Metric) {
	label := func(names ...string) string {
		for _, l := range m.Labels {
			if slices.Contains(names, l.Name) {
				return l.Value
			}
		}
		return ""
	}
	switch m.Name {
	case observe.MetricSinkRecords, observe.MetricSinkErrors:
		c := observe.SinkCount{Sink: label("sink"), Destination: label(destinationLabels...), Count: int64(m.Value)}
		if m.Name == observe.MetricSinkRecords {
			s.SinkRecordsOut = append(s.SinkRecordsOut, c)
		} else {
			s.SinkErrors = append(s.SinkErrors, c)
		}
		return
	}
	kind := observe.CounterSample
	if m.Kind == sinks.Gauge {
		kind = observe.GaugeSample
	}
	ls := make([]observe.Label, len(m.Labels))
	for i, l := range m.Labels {
		name := l.Name
		if slices.Contains(destinationLabels, name) {
			name = "destination"
		}
		ls[i] = observe.Label{Name: name, Value: l.Value}
	}
	name := m.Name
	if !strings.HasPrefix(name, "fusebox_") {
		name = "fusebox_" + name
	}
	s.Extra = append(s.Extra, observe.Sample{Name: name, Help: m.Help, Kind: kind, Labels: ls, Value: m.Value})
}

// destinationLabels are the sinks' names for where they write, exported
// as "destination".
var destinationLabels = []string{"topic", "table", "path"}
