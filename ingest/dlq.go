package ingest

import (
	"crypto/sha256"
	"encoding/hex"
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
	// when the broker refused the DLQ record as too large and it was
	// written again without its value. The source topic, partition and
	// offset headers still locate the original.
	HeaderValueOmitted = "fusebox.dlq.value_omitted"
	// HeaderValueSHA256 is the hex SHA-256 of the omitted value, set with
	// HeaderValueOmitted, so the original can be recognised (e.g. in the
	// source topic, or in the team's own copy).
	HeaderValueSHA256 = "fusebox.dlq.value_sha256"
	// HeaderHeadersOmitted is set, to the number of the record's own
	// headers dropped, when even the record without its value was refused
	// as too large: then only fusebox's headers are kept.
	HeaderHeadersOmitted = "fusebox.dlq.headers_omitted"
)

// DLQMaxBatchBytes caps the consumer's produce batches (its client writes
// only DLQ records): 1,000,012 bytes, franz-go's default, under Apache
// Kafka's default message.max.bytes (1,048,588). A larger cap lets the
// client put two records that each fit into one batch the broker refuses
// whole (both would lose their values); a record larger than the cap is
// refused by the client itself and written without its value (see
// HeaderValueOmitted). A DLQ topic configured for bigger records can take
// them whole with ClientOpts(kgo.ProducerBatchMaxBytes(n)).
const DLQMaxBatchBytes = 1_000_012

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
	return &kgo.Record{Topic: c.cfg.dlqTopic, Key: r.Key, Value: r.Value, Headers: h}
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
	// stage is 0 for the record as it was, 1 without its value, 2 with
	// fusebox's headers only.
	stage int
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
	if tooLarge := errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge); tooLarge && w.stage < 2 {
		// Retrying the same bytes can never succeed. First drop the value
		// (keeping its size and digest); if that is still refused, the
		// record's own headers are what is too big: keep only fusebox's.
		// fusebox's headers are bounded (maxErrorHeaderBytes,
		// MaxInvalidSpanHeaders), so the second form always fits 1 MB.
		w.stage++
		if w.stage == 1 {
			orig := len(w.rec.Value)
			sum := sha256.Sum256(w.rec.Value)
			w.rec = &kgo.Record{Topic: w.rec.Topic, Key: w.rec.Key, Headers: append(w.rec.Headers[:len(w.rec.Headers):len(w.rec.Headers)],
				kgo.RecordHeader{Key: HeaderValueOmitted, Value: []byte(strconv.Itoa(orig))},
				kgo.RecordHeader{Key: HeaderValueSHA256, Value: []byte(hex.EncodeToString(sum[:]))})}
			c.stats.dlqValueOmitted.Add(1)
			c.log.Error("ingest: DLQ topic refused the record as too large; writing it without its value (size and SHA-256 in headers)",
				"dlq_topic", w.rec.Topic, "value_bytes", orig, "err", err)
		} else {
			var own, kept []kgo.RecordHeader
			for _, h := range w.rec.Headers {
				if strings.HasPrefix(h.Key, "fusebox.") {
					kept = append(kept, h)
				} else {
					own = append(own, h)
				}
			}
			kept = append(kept, kgo.RecordHeader{Key: HeaderHeadersOmitted, Value: []byte(strconv.Itoa(len(own)))})
			w.rec = &kgo.Record{Topic: w.rec.Topic, Headers: kept}
			c.log.Error("ingest: DLQ topic refused the record without its value as too large; writing fusebox's headers only",
				"dlq_topic", w.rec.Topic, "headers_dropped", len(own), "err", err)
		}
		time.AfterFunc(0, w.produce) // never Produce from inside a produce callback
		return
	}
	w.attempt++
	c.stats.dlqRetries.Add(1)
	backoff := 100 * time.Millisecond << min(w.attempt-1, 16)
	if backoff > c.cfg.dlqBackoffMax {
		backoff = c.cfg.dlqBackoffMax
	}
	c.log.Error("ingest: DLQ write failed; retrying (the source partition's commit waits for it)",
		"dlq_topic", w.rec.Topic, "attempt", w.attempt, "backoff", backoff, "err", err)
	time.AfterFunc(backoff, w.produce)
}
