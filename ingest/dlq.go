package ingest

import (
	"errors"
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
	HeaderErrorKind       = "fusebox.error.kind"       // malformed | invalid | too_large
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
	// when the broker refused the DLQ record as too large and it was
	// written again without its value. The source topic, partition and
	// offset headers still locate the original.
	HeaderValueOmitted = "fusebox.dlq.value_omitted"
)

// MaxInvalidSpanHeaders caps the HeaderInvalidSpan headers of one record;
// HeaderInvalidSpans still gives the full count.
const MaxInvalidSpanHeaders = 100

// maxErrorHeaderBytes caps an error message copied into a header.
const maxErrorHeaderBytes = 4 << 10

// dlqRecord builds the dead-letter copy of r for err. partial is non-nil
// when the record's valid spans were delivered.
func (c *Consumer) dlqRecord(r *kgo.Record, err error, kind ErrorKind, partial *PartialError) *kgo.Record {
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
	return &kgo.Record{Topic: c.cfg.DLQTopic, Key: r.Key, Value: r.Value, Headers: h}
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
// of its batch's waits until the broker acknowledges it.
type dlqWrite struct {
	c       *Consumer
	st      *batchState
	rec     *kgo.Record
	attempt int
	omitted bool
}

// writeDLQ produces rec and, once it is durable, releases st's wait for it.
// Failures are retried with backoff (100ms doubling to DLQRetryBackoffMax)
// until the consumer stops; a record the broker refuses as too large is
// written once more without its value. A write still failing at shutdown
// leaves its batch uncommitted, so the source record is read again after a
// restart.
func (c *Consumer) writeDLQ(st *batchState, rec *kgo.Record) {
	w := &dlqWrite{c: c, st: st, rec: rec}
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
	if !w.omitted && (errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)) {
		// Retrying the same bytes can never succeed; keep the failure and
		// its location, drop the value.
		w.omitted = true
		orig := len(w.rec.Value)
		nr := &kgo.Record{Topic: w.rec.Topic, Key: w.rec.Key, Headers: append(w.rec.Headers[:len(w.rec.Headers):len(w.rec.Headers)],
			kgo.RecordHeader{Key: HeaderValueOmitted, Value: []byte(strconv.Itoa(orig))})}
		w.rec = nr
		c.stats.dlqValueOmitted.Add(1)
		c.log.Error("ingest: DLQ topic refused the record as too large; writing it without its value",
			"dlq_topic", w.rec.Topic, "value_bytes", orig, "err", err)
		time.AfterFunc(0, w.produce) // never Produce from inside a produce callback
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
