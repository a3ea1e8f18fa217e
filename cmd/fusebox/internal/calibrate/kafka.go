package calibrate

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TopicSource names what ReadTopics reads.
type TopicSource struct {
	// SpansTopic holds OTLP trace messages in Encoding ("otlp_proto",
	// "otlp_json", or anything else for auto: JSON when the message starts
	// with '{'); CorrectionsTopic correction events ("" to skip).
	SpansTopic, CorrectionsTopic string
	Encoding                     string
	Names                        schemas.AttributeNames
	Limits                       schemas.Limits
}

// ReadTopics reads, from every partition of the source's topics, the
// records whose Kafka timestamp is at or after sinceMs (Unix ms) up to the
// end offsets as they were when it started, and appends their valid spans
// and corrections to in. It reads with its own client (no consumer group,
// nothing committed). Undecodable records are skipped and named, as in the
// file readers.
func (in *Input) ReadTopics(ctx context.Context, opts []kgo.Opt, src TopicSource, sinceMs int64) error {
	topics := []string{src.SpansTopic}
	if src.CorrectionsTopic != "" {
		topics = append(topics, src.CorrectionsTopic)
	}
	admCl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	adm := kadm.NewClient(admCl)
	starts, err := adm.ListOffsetsAfterMilli(ctx, sinceMs, topics...)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(ctx, topics...)
		if err == nil {
			err = ends.Error()
		}
	}
	admCl.Close()
	if err != nil {
		return fmt.Errorf("calibrate: list offsets of %v: %w", topics, err)
	}
	assign := map[string]map[int32]kgo.Offset{}
	left := map[string]map[int32]int64{} // the end offset still to reach
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := starts.Lookup(e.Topic, e.Partition)
		if !ok || s.Offset < 0 || s.Offset >= e.Offset {
			return
		}
		if assign[e.Topic] == nil {
			assign[e.Topic], left[e.Topic] = map[int32]kgo.Offset{}, map[int32]int64{}
		}
		assign[e.Topic][e.Partition] = kgo.NewOffset().At(s.Offset)
		left[e.Topic][e.Partition] = e.Offset
	})
	remaining := 0
	for _, ps := range left {
		remaining += len(ps)
	}
	if remaining == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), kgo.ConsumePartitions(assign))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var buf []schemas.Span
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("calibrate: reading %v: %w", topics, err)
		}
		for _, fe := range fs.Errors() {
			return fmt.Errorf("calibrate: fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := left[r.Topic][r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			where := fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)
			if r.Topic == src.CorrectionsTopic && src.CorrectionsTopic != src.SpansTopic {
				c, err := schemas.DecodeCorrection(r.Value)
				if err != nil {
					in.problem("%s: %v", where, err)
				} else {
					in.Corrections = append(in.Corrections, c)
				}
			} else {
				var err error
				if src.Encoding == "otlp_json" || (src.Encoding != "otlp_proto" && looksJSON(r.Value)) {
					buf, _, err = schemas.DecodeOTLPJSON(r.Value, src.Names, src.Limits, buf[:0])
				} else {
					buf, _, err = schemas.DecodeOTLPProto(r.Value, src.Names, src.Limits, buf[:0])
				}
				if err != nil {
					in.problem("%s: %v", where, err)
				}
				for i := range buf {
					if err := buf[i].Validate(); err != nil {
						in.problem("%s: span %d: %v", where, i, err)
						continue
					}
					in.Spans = append(in.Spans, buf[i])
				}
			}
			if r.Offset == end-1 {
				delete(left[r.Topic], r.Partition)
				remaining--
			}
		})
	}
	return nil
}

// looksJSON reports whether b starts, after white space, with '{': an
// OTLP/JSON message (a protobuf TracesData starts with the tag 0x0a).
func looksJSON(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}
