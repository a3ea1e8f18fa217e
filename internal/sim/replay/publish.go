package replay

import (
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Records encodes the sources as a Collector and an application would
// publish them: each span message as one OTLP protobuf TracesData (default
// attribute names), each correction as its JSON, with Topic and Partition
// set so that a producer with kgo.ManualPartitioner writes every message to
// its source partition, in order.
func Records(src Sources) ([]*kgo.Record, error) {
	names := schemas.DefaultAttributeNames()
	var out []*kgo.Record
	for _, p := range src {
		for _, m := range p.Messages {
			if len(m.Spans) > 0 {
				// Stamped with the newest span end: the simulated producer's
				// clock (event time is judged against the record timestamp).
				var end int64
				for i := range m.Spans {
					end = max(end, m.Spans[i].EndUnixNano)
				}
				out = append(out, &kgo.Record{Topic: p.Topic, Partition: p.Partition, Value: schemas.EncodeOTLPProto(nil, m.Spans, names), Timestamp: time.Unix(0, end)})
			}
			for i := range m.Corrections {
				v, err := schemas.EncodeCorrection(m.Corrections[i])
				if err != nil {
					return nil, err
				}
				out = append(out, &kgo.Record{Topic: p.Topic, Partition: p.Partition, Value: v, Timestamp: time.Unix(0, m.Corrections[i].TimeUnixNano)})
			}
		}
	}
	return out, nil
}

// MaxEventTime is the newest span end or correction time in the sources
// (Unix ns): the watermark of every keyed partition ends at it minus the
// allowed lateness once every source is idle.
func (s Sources) MaxEventTime() int64 {
	t := int64(-1 << 63)
	for _, p := range s {
		for _, m := range p.Messages {
			for i := range m.Spans {
				t = max(t, m.Spans[i].EndUnixNano)
			}
			for i := range m.Corrections {
				t = max(t, m.Corrections[i].TimeUnixNano)
			}
		}
	}
	return t
}
