package ingest

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fusebox-dev/fusebox/schemas"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Header names the consumer adds to a dead-lettered record. The record's
// own key, value and headers are kept unchanged; these are appended after
// them. A record that is dead-lettered again (replayed and still bad)
// carries the headers of every failure: the last occurrence of a name is
// the newest.
const (
	HeaderError           = "fusebox.error"            // the error message (at most 4 KiB)
	HeaderErrorKind       = "fusebox.error.kind"       // malformed | invalid | too_large | future_event_time
	HeaderErrorField      = "fusebox.error.field"      // the offending field, "" when unknown
	HeaderSourceTopic     = "fusebox.source.topic"     // topic the record was read from
	HeaderSourcePartition = "fusebox.source.partition" // its partition, decimal
	HeaderSourceOffset    = "fusebox.source.offset"    // its offset, decimal
	HeaderSourceTimestamp = "fusebox.source.timestamp" // its Kafka timestamp, Unix milliseconds, decimal
	// HeaderPartial is "true" when the record's valid spans were delivered
	// and only the spans named by HeaderInvalidSpan were not.
	HeaderPartial = "fusebox.dlq.partial"
	// HeaderInvalidSpans is "<invalid>/<total>" LLM spans, on partial records.
	HeaderInvalidSpans = "fusebox.dlq.invalid_spans"
	// HeaderInvalidSpan appears once per invalid span (at most
	// MaxInvalidSpanHeaders): "<index> <field>: <reason>", index as in
	// InvalidSpan.Index.
	HeaderInvalidSpan = "fusebox.dlq.invalid_span"
	// HeaderValueOmitted is set, to the original value's length in bytes,
	// when the broker refused the DLQ record as too large and the value
	// was its largest part, so it was written again without it. The source topic, partition and
	// offset headers still locate the original.
	HeaderValueOmitted = "fusebox.dlq.value_omitted"
	// HeaderValueSHA256 is the hex SHA-256 of the omitted value, set with
	// HeaderValueOmitted, so the original can be recognised (e.g. in the
	// source topic, or in the team's own copy).
	HeaderValueSHA256 = "fusebox.dlq.value_sha256"
	// HeaderHeadersOmitted is set, to the number of the record's own
	// headers dropped, when the DLQ topic refused the copy as too large
	// and its own headers were its largest part (see HeaderHeadersOmittedBytes);
	// fusebox's headers are kept.
	HeaderHeadersOmitted = "fusebox.dlq.headers_omitted"
	// HeaderHeadersOmittedBytes is the dropped headers' size: the sum of
	// their names' and values' lengths, in bytes.
	HeaderHeadersOmittedBytes = "fusebox.dlq.headers_omitted_bytes"
	// HeaderKeyOmitted is set, to the key's length in bytes, when the key
	// was the largest part left of a copy refused as too large; the key is
	// then "<source topic>/<partition>/<offset>" (not none: a compacted
	// DLQ topic refuses keyless records).
	HeaderKeyOmitted = "fusebox.dlq.key_omitted"
	// HeaderTrimmed is "true" when, with value, own headers and key gone,
	// the copy was still refused and fusebox's own headers were cut: the
	// error message to 256 bytes and the HeaderInvalidSpan headers left
	// out (HeaderInvalidSpans still counts them).
	HeaderTrimmed = "fusebox.dlq.trimmed"
)

// DLQMaxBatchBytes caps the consumer's produce batches (its client writes
// only DLQ records): 1,000,012 bytes, franz-go's default, under Apache
// Kafka's default message.max.bytes (1,048,588). A larger cap lets the
// client put two records that each fit into one batch the broker refuses
// whole (both would lose their values); a record larger than the cap is
// refused by the client itself and written without its largest part (see
// dlqWrite.shrink). A DLQ topic configured for bigger records can take
// them whole with ClientOpts(kgo.ProducerBatchMaxBytes(n)).
const DLQMaxBatchBytes = 1_000_012

// MaxInvalidSpanHeaders caps the HeaderInvalidSpan headers of one record;
// HeaderInvalidSpans still gives the full count.
const MaxInvalidSpanHeaders = 100

// maxErrorHeaderBytes caps an error message copied into a header.
const maxErrorHeaderBytes = 4 << 10

// dlqWriteFor builds the dead-letter copy of r for err, not yet written.
// partial is non-nil when the record's valid spans were delivered. The
// record's own headers come first and fusebox's after them; the write
// remembers how many are the record's own, so a source header whose name
// starts with "fusebox." (a replayed dead letter's, or anyone's) is still
// the record's own when the copy must shrink.
func (c *Consumer) dlqWriteFor(r *kgo.Record, err error, kind ErrorKind, partial *PartialError) *dlqWrite {
	h := make([]kgo.RecordHeader, 0, len(r.Headers)+10)
	h = append(h, r.Headers...)
	add := func(k, v string) { h = append(h, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	add(HeaderError, clip(err.Error(), maxErrorHeaderBytes))
	add(HeaderErrorKind, string(kind))
	add(HeaderErrorField, errorField(err))
	add(HeaderSourceTopic, r.Topic)
	add(HeaderSourcePartition, strconv.FormatInt(int64(r.Partition), 10))
	add(HeaderSourceOffset, strconv.FormatInt(r.Offset, 10))
	add(HeaderSourceTimestamp, strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
	if partial != nil {
		add(HeaderPartial, "true")
		add(HeaderInvalidSpans, strconv.Itoa(len(partial.Invalid))+"/"+strconv.Itoa(partial.Total))
		for i, s := range partial.Invalid {
			if i == MaxInvalidSpanHeaders {
				break
			}
			v := strconv.Itoa(s.Index) + " "
			if fe := (*schemas.FieldError)(nil); errors.As(s.Err, &fe) {
				v += fe.Field + ": " + fe.Reason
			} else {
				v += s.Err.Error()
			}
			add(HeaderInvalidSpan, clip(v, maxErrorHeaderBytes))
		}
	}
	return &dlqWrite{
		c:      c,
		rec:    &kgo.Record{Topic: c.cfg.DLQTopic, Key: r.Key, Value: r.Value, Headers: h},
		own:    len(r.Headers),
		src:    source{topic: r.Topic, partition: r.Partition, offset: r.Offset},
		kind:   kind,
		reason: err.Error(),
	}
}

// clip cuts s to at most n bytes on a rune boundary and makes it valid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// dlqWrite is one dead-letter record on its way to durability. It holds one
// of its batch's waits until the broker acknowledges it, or until every
// smaller form of it was refused as too large (see shrink).
type dlqWrite struct {
	c       *Consumer
	st      *batchState
	rec     *kgo.Record
	attempt int
	// own is how many of rec.Headers, at the front, are the source
	// record's own headers; fusebox's follow them.
	own int
	// trimmed is set once fusebox's own headers were cut (see shrink).
	trimmed bool
	// smallestTries counts the writes of the smallest form refused.
	smallestTries int
	src           source
	// kind and reason are why the record was dead-lettered (for the log
	// line of a dead letter given up).
	kind   ErrorKind
	reason string
}

// smallestRetries is how many times the smallest form of a dead letter is
// written again, after a random delay, before it is given up.
const smallestRetries = 3

// source locates the record a dead letter copies.
type source struct {
	topic     string
	partition int32
	offset    int64
}

// writeDLQ produces w's record for st and, once it is durable, releases
// st's wait for it. Failures are retried with backoff (100ms doubling to
// DLQRetryBackoffMax) until the consumer stops; a record the broker (or the
// client's batch cap) refuses as too large is never retried as is: it is
// written smaller (see shrink), and given up, loudly, when even its
// smallest form is refused. A write still failing at shutdown leaves its
// batch uncommitted, so the source record is read again after a restart.
func (c *Consumer) writeDLQ(st *batchState, w *dlqWrite) {
	w.st = st
	w.produce()
}

func (w *dlqWrite) produce() { w.c.cl.Produce(w.c.dlqCtx, w.rec, w.done) }

func (w *dlqWrite) done(_ *kgo.Record, err error) {
	c := w.c
	if err == nil {
		c.stats.dlqWritten.Add(1)
		w.st.p.dlqDone(w.st)
		return
	}
	if c.dlqCtx.Err() != nil {
		// Shutting down: the batch stays uncommitted and is read again.
		c.log.Warn("ingest: DLQ write abandoned at shutdown; the source record will be redelivered",
			"source_topic", w.st.p.topic, "source_partition", w.st.p.id, "err", err)
		return
	}
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		// Retrying the same bytes can never succeed.
		if part, ok := w.shrink(); ok {
			c.stats.dlqOmitted(part)
			c.log.Error("ingest: DLQ topic refused the dead letter as too large; writing it again without its "+part+" (what was dropped is described in fusebox.dlq.* headers)",
				"dlq_topic", w.rec.Topic, "source_topic", w.src.topic, "source_partition", w.src.partition, "source_offset", w.src.offset, "err", err)
			time.AfterFunc(0, w.produce) // never Produce from inside a produce callback
			return
		}
		// Even the smallest form was refused. It may have shared its
		// batch with other shrunk dead letters (a DLQ topic whose
		// max.message.bytes is below a batch of them: the broker refuses
		// the whole batch): try it again alone-ish, after a random delay
		// of up to a second, smallestRetries times.
		if w.smallestTries < smallestRetries {
			w.smallestTries++
			time.AfterFunc(time.Duration(100+rand.IntN(900))*time.Millisecond, w.produce)
			return
		}
		// Refused every time (a DLQ topic limited to a few hundred
		// bytes). Waiting cannot help and would stall the source
		// partition's commits, so the dead letter is given up: loudly,
		// with where its record is and why it was dead-lettered.
		c.stats.dlqUnwritable.Add(1)
		c.log.Error("ingest: dead letter NOT written: the DLQ topic refused even its smallest form as too large; the source record is only in its source topic (raise the DLQ topic's max.message.bytes)",
			"dlq_topic", w.rec.Topic, "source_topic", w.src.topic, "source_partition", w.src.partition, "source_offset", w.src.offset,
			"kind", w.kind, "error", clip(w.reason, trimmedErrorBytes), "err", err)
		w.st.p.dlqDone(w.st)
		return
	}
	w.attempt++
	c.stats.dlqRetries.Add(1)
	backoff := 100 * time.Millisecond << min(w.attempt-1, 16)
	if backoff > c.cfg.DLQRetryBackoffMax {
		backoff = c.cfg.DLQRetryBackoffMax
	}
	c.log.Error("ingest: DLQ write failed; retrying (the source partition's commit waits for it)",
		"dlq_topic", w.rec.Topic, "attempt", w.attempt, "backoff", backoff, "err", err)
	time.AfterFunc(backoff, w.produce)
}
