package ingest

import "sync/atomic"

// Stats is a snapshot of the consumer's counters since New. Counts are of
// Kafka records unless named otherwise; a record read again after a restart
// or rebalance is counted again.
type Stats struct {
	// RecordsIn counts records read, per topic.
	RecordsIn map[string]int64
	// Spans counts LLM spans delivered to handlers (valid ones).
	Spans int64
	// InvalidSpans counts spans dropped by Span.Validate from records that
	// were delivered partially (the records are in the DLQ, partial=true).
	InvalidSpans int64
	// SkippedNoModel counts spans not decoded as LLM calls (no model, or an
	// OpenInference span of a non-LLM kind), skipped by design. It includes
	// the Unkeyed ones.
	SkippedNoModel int64
	// Unkeyed counts the skipped spans that looked like LLM calls
	// (schemas.DecodeStats.Unkeyed), by instrumentation scope and reason,
	// sorted; at most schemas.MaxUnkeyedScopes scopes (then schemas.UnkeyedOtherScope, "(other)").
	Unkeyed []UnkeyedCount
	// TimingsDropped counts, by reason (DroppedEventBeforeStart, ...), the
	// library-form timings left out of spans that were kept
	// (schemas.DecodeStats.Dropped); nil when none.
	TimingsDropped map[string]int64
	// Corrections counts correction events delivered.
	Corrections int64
	// DeadLettered counts records sent whole to the DLQ, by kind.
	DeadLettered map[ErrorKind]int64
	// PartialDeadLettered counts records delivered in part and also written
	// to the DLQ with fusebox.dlq.partial=true.
	PartialDeadLettered int64
	// DLQWritten counts DLQ records the broker acknowledged; DLQRetries the
	// failed attempts that were retried; DLQValueOmitted the records written
	// without their value because the DLQ topic refused their size.
	DLQWritten, DLQRetries, DLQValueOmitted int64
	// DLQOmitted counts the parts dropped from dead letters the DLQ topic
	// refused as too large, by part (OmittedValue, OmittedHeaders,
	// OmittedKey, OmittedDetails); a dead letter can lose several.
	DLQOmitted map[string]int64
	// DLQUnwritable counts dead letters given up because the DLQ topic
	// refused even their smallest form (each logged at ERROR with its
	// source topic, partition and offset): their records are only in their
	// source topics.
	DLQUnwritable int64
	// DecoderPanics counts decoder panics (each a malformed DLQ record).
	DecoderPanics int64
	// Batches counts batches handed to handlers.
	Batches int64
	// Commits and CommitErrors count offset commit requests.
	Commits, CommitErrors int64
	// FetchErrors counts partition errors returned by fetches.
	FetchErrors int64
	// Pauses counts how often a partition was paused by MaxUnacked*.
	Pauses int64
	// Partitions is the number of partitions owned now, PausedPartitions
	// how many of them are paused.
	Partitions, PausedPartitions int
	// Starting is how many of the owned partitions have a Starter handler
	// whose Start has not returned successfully yet (the keyed stage: its
	// checkpoint is not restored yet). Readiness waits for 0.
	Starting int
	// Lag is the sum over owned partitions of (high watermark - next
	// offset), as of each partition's last fetch: records published and
	// not yet fetched.
	Lag int64
	// PartitionLag is Lag per owned partition, in no particular order.
	PartitionLag []PartitionLag
}

// PartitionLag is the lag of one owned partition: high watermark minus next
// offset, as of the partition's last fetch.
type PartitionLag struct {
	Topic     string
	Partition int32
	Lag       int64
}

type counters struct {
	recordsIn                          map[string]*atomic.Int64
	spans, invalidSpans, skipped       atomic.Int64
	corrections                        atomic.Int64
	malformed, invalid, tooLarge       atomic.Int64
	future                             atomic.Int64
	partial                            atomic.Int64
	dlqWritten, dlqRetries             atomic.Int64
	dlqValueOmitted, dlqHeadersOmitted atomic.Int64
	dlqKeyOmitted, dlqTrimmed          atomic.Int64
	dlqUnwritable                      atomic.Int64
	decoderPanics, batches             atomic.Int64
	commits, commitErrors, fetchError  atomic.Int64
	pauses                             atomic.Int64
}

func newCounters(topics []string) *counters {
	c := &counters{recordsIn: make(map[string]*atomic.Int64, len(topics))}
	for _, t := range topics {
		c.recordsIn[t] = new(atomic.Int64)
	}
	return c
}

// batch counts one batch of records read from topic and what it delivered.
func (c *counters) batch(topic string, records, spans, corrections, skipped int64) {
	c.batches.Add(1)
	if n := c.recordsIn[topic]; n != nil {
		n.Add(records)
	}
	c.spans.Add(spans)
	c.corrections.Add(corrections)
	c.skipped.Add(skipped)
}

// dlqOmitted counts one part dropped from a dead letter (see shrink).
func (c *counters) dlqOmitted(part string) {
	switch part {
	case OmittedValue:
		c.dlqValueOmitted.Add(1)
	case OmittedHeaders:
		c.dlqHeadersOmitted.Add(1)
	case OmittedKey:
		c.dlqKeyOmitted.Add(1)
	default:
		c.dlqTrimmed.Add(1)
	}
}

func (c *counters) deadLetter(k ErrorKind, partial bool) {
	if partial {
		c.partial.Add(1)
		return
	}
	switch k {
	case KindTooLarge:
		c.tooLarge.Add(1)
	case KindInvalid:
		c.invalid.Add(1)
	case KindFutureEventTime:
		c.future.Add(1)
	default:
		c.malformed.Add(1)
	}
}

// Stats returns a snapshot of the counters. It is safe to call at any time,
// from any goroutine.
func (c *Consumer) Stats() Stats {
	s := c.stats
	out := Stats{
		RecordsIn:           make(map[string]int64, len(s.recordsIn)),
		Spans:               s.spans.Load(),
		InvalidSpans:        s.invalidSpans.Load(),
		SkippedNoModel:      s.skipped.Load(),
		Corrections:         s.corrections.Load(),
		DeadLettered:        map[ErrorKind]int64{KindMalformed: s.malformed.Load(), KindInvalid: s.invalid.Load(), KindTooLarge: s.tooLarge.Load(), KindFutureEventTime: s.future.Load()},
		PartialDeadLettered: s.partial.Load(),
		DLQWritten:          s.dlqWritten.Load(),
		DLQRetries:          s.dlqRetries.Load(),
		DLQValueOmitted:     s.dlqValueOmitted.Load(),
		DLQOmitted: map[string]int64{OmittedValue: s.dlqValueOmitted.Load(), OmittedHeaders: s.dlqHeadersOmitted.Load(),
			OmittedKey: s.dlqKeyOmitted.Load(), OmittedDetails: s.dlqTrimmed.Load()},
		DLQUnwritable:  s.dlqUnwritable.Load(),
		DecoderPanics:  s.decoderPanics.Load(),
		Batches:        s.batches.Load(),
		Commits:        s.commits.Load(),
		CommitErrors:   s.commitErrors.Load(),
		FetchErrors:    s.fetchError.Load(),
		Pauses:         s.pauses.Load(),
		Unkeyed:        c.unkeyed.unkeyedCounts(),
		TimingsDropped: c.dropped.snapshot(),
	}
	for t, n := range s.recordsIn {
		out.RecordsIn[t] = n.Load()
	}
	c.mu.Lock()
	for _, p := range c.parts {
		out.Partitions++
		if !p.started.Load() {
			out.Starting++
		}
		lag := p.lag.Load()
		out.Lag += lag
		out.PartitionLag = append(out.PartitionLag, PartitionLag{Topic: p.topic, Partition: p.id, Lag: lag})
		p.tmu.Lock()
		if p.paused {
			out.PausedPartitions++
		}
		p.tmu.Unlock()
	}
	c.mu.Unlock()
	return out
}
