// Package replay drives the engine's keyed stage from generated traffic
// without Kafka, exactly as the router and the keyed consumer would: traffic
// from internal/sim/traffic is cut into source-partition messages (spans by
// trace id, as the Collector's partition_traces_by_id does, corrections on
// a partition of their own), routed onto keyed partitions by the router's
// Splitter, and applied to one engine.Worker per keyed partition.
//
// The engine-level tests (golden incidents, determinism) and the
// throughput and memory benchmarks share it. It is for tests and
// benchmarks only.
package replay

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Topic names of the source partitions, as the default SLO file names them.
const (
	SpanTopic       = "otlp_spans"
	CorrectionTopic = "fusebox.corrections"
)

// Message is one record of a source partition: a batch of spans (as one
// OTLP export) or one correction.
type Message struct {
	Offset      int64
	Spans       []schemas.Span
	Corrections []schemas.Correction
}

// Partition is one source partition's messages in offset order.
type Partition struct {
	Topic     string
	Partition int32
	Messages  []Message
}

// Sources are the source partitions: the span partitions first (topic
// SpanTopic, partitions 0..n-1), then one correction partition.
type Sources []Partition

// Spans counts the spans in every partition.
func (s Sources) Spans() int {
	n := 0
	for _, p := range s {
		for _, m := range p.Messages {
			n += len(m.Spans)
		}
	}
	return n
}

// Corrections counts the corrections in every partition.
func (s Sources) Corrections() int {
	n := 0
	for _, p := range s {
		for _, m := range p.Messages {
			n += len(m.Corrections)
		}
	}
	return n
}

// SpanPartitions is the number of span partitions.
func (s Sources) SpanPartitions() int {
	n := 0
	for _, p := range s {
		if p.Topic == SpanTopic {
			n++
		}
	}
	return n
}

// GenConfig says how traffic is cut into source partitions.
type GenConfig struct {
	// SpanPartitions is the number of span partitions. Default 3.
	SpanPartitions int
	// SpansPerMessage is the most spans in one message (an export batch).
	// Default 40.
	SpansPerMessage int
	// Step is the event time generated per traffic.Generator.Next call;
	// every span partition's pending spans are flushed after each step, so
	// a message never spans more than Step of event time. Default 250ms.
	Step time.Duration
}

func (c *GenConfig) defaults() {
	if c.SpanPartitions <= 0 {
		c.SpanPartitions = 3
	}
	if c.SpansPerMessage <= 0 {
		c.SpansPerMessage = 40
	}
	if c.Step <= 0 {
		c.Step = 250 * time.Millisecond
	}
}

// Generate makes d of event time of sc's traffic from start and cuts it
// into source partitions: each span goes to the partition of its trace id
// (first byte modulo the count), in messages of up to SpansPerMessage;
// each correction is a message of its own on the correction partition.
// Spans without a model (traffic.Batch.Other) are left out: decoders skip
// them before the router sees anything.
func Generate(sc traffic.Scenario, start time.Time, d time.Duration, cfg GenConfig) (Sources, error) {
	cfg.defaults()
	g, err := traffic.New(sc, start)
	if err != nil {
		return nil, err
	}
	n := cfg.SpanPartitions
	out := make(Sources, n+1)
	for p := range n {
		out[p] = Partition{Topic: SpanTopic, Partition: int32(p)}
	}
	out[n] = Partition{Topic: CorrectionTopic, Partition: 0}
	pending := make([][]schemas.Span, n)
	flush := func(p int) {
		if len(pending[p]) > 0 {
			out[p].Messages = append(out[p].Messages, Message{Offset: int64(len(out[p].Messages)), Spans: pending[p]})
			pending[p] = nil
		}
	}
	for g.Offset() < d {
		b := g.Next(cfg.Step)
		for _, s := range b.Spans {
			p := int(s.TraceID[0]) % n
			pending[p] = append(pending[p], s)
			if len(pending[p]) == cfg.SpansPerMessage {
				flush(p)
			}
		}
		for p := range pending {
			flush(p)
		}
		for _, c := range b.Corrections {
			out[n].Messages = append(out[n].Messages, Message{Offset: int64(len(out[n].Messages)), Corrections: []schemas.Correction{c}})
		}
	}
	return out, nil
}

// Shuffle returns the same spans and corrections out of order, as
// publishers that batch and retry deliver them: every span gets a delay
// drawn uniformly from [0, within) and a span partition drawn at random
// (not by trace id), and each partition's spans are published in order of
// end time plus delay, in messages of up to perMessage spans; corrections
// are delayed the same way on their own partition.
//
// No record is displaced behind a record of its own partition that is
// newer than it by within or more, so with within below the allowed
// lateness no record becomes late and the verdicts must not change.
func Shuffle(src Sources, within time.Duration, perMessage int, seed uint64) (Sources, error) {
	if within <= 0 || perMessage <= 0 {
		return nil, errors.New("replay: shuffle needs a positive window and message size")
	}
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	n := src.SpanPartitions()
	type item struct {
		at int64
		s  schemas.Span
	}
	type citem struct {
		at int64
		c  schemas.Correction
	}
	parts := make([][]item, n)
	var corr []citem
	for _, p := range src {
		for _, m := range p.Messages {
			for _, s := range m.Spans {
				d := r.Int64N(int64(within))
				q := r.IntN(n)
				parts[q] = append(parts[q], item{s.EndUnixNano + d, s})
			}
			for _, c := range m.Corrections {
				corr = append(corr, citem{c.TimeUnixNano + r.Int64N(int64(within)), c})
			}
		}
	}
	out := make(Sources, n+1)
	for q := range n {
		slices.SortStableFunc(parts[q], func(a, b item) int { return cmp.Compare(a.at, b.at) })
		out[q] = Partition{Topic: SpanTopic, Partition: int32(q)}
		for i := 0; i < len(parts[q]); i += perMessage {
			chunk := parts[q][i:min(i+perMessage, len(parts[q]))]
			spans := make([]schemas.Span, len(chunk))
			for j := range chunk {
				spans[j] = chunk[j].s
			}
			out[q].Messages = append(out[q].Messages, Message{Offset: int64(len(out[q].Messages)), Spans: spans})
		}
	}
	slices.SortStableFunc(corr, func(a, b citem) int { return cmp.Compare(a.at, b.at) })
	out[n] = Partition{Topic: CorrectionTopic, Partition: 0}
	for _, c := range corr {
		out[n].Messages = append(out[n].Messages, Message{Offset: int64(len(out[n].Messages)), Corrections: []schemas.Correction{c.c}})
	}
	return out, nil
}
