package gen

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/schemas"
)

// message is one record to publish and what it holds.
type message struct {
	rec         *kgo.Record
	spans       int // LLM spans (with a model)
	other       int // spans without a model
	corrections int
}

// encodeStep turns one step of traffic into records: the span batches
// first, then one record per correction, in a deterministic order.
//
// Spans: the LLM calls and the non-LLM spans of the step are merged in
// end-time order (ties by span id), then either grouped per trace — one
// message per trace keyed by its 32-hex id (KeyByTrace) — or grouped per
// service in order of first appearance and cut into messages of at most
// SpansPerMessage spans, without a key. Each message is one OTLP
// TracesData in the configured encoding.
func encodeStep(cfg *Config, b traffic.Batch) ([]message, error) {
	all := make([]schemas.Span, 0, len(b.Spans)+len(b.Other))
	all = append(all, b.Spans...)
	all = append(all, b.Other...)
	slices.SortStableFunc(all, func(x, y schemas.Span) int {
		if x.EndUnixNano != y.EndUnixNano {
			if x.EndUnixNano < y.EndUnixNano {
				return -1
			}
			return 1
		}
		return bytes.Compare(x.SpanID[:], y.SpanID[:])
	})
	var out []message
	emit := func(spans []schemas.Span, key []byte) {
		var v []byte
		if cfg.Encoding == EncodingJSON {
			v = schemas.EncodeOTLPJSON(nil, spans, cfg.Attributes)
		} else {
			v = schemas.EncodeOTLPProto(nil, spans, cfg.Attributes)
		}
		// The record's timestamp is the simulated producer's clock when it
		// sends the message: the newest end among its spans. A sped-up
		// run's event times run ahead of the wall clock, and fusebox judges
		// event time against the record timestamp (time.max_future_skew).
		m := message{rec: &kgo.Record{Topic: cfg.SpansTopic, Key: key, Value: v, Timestamp: newestEnd(spans)}}
		for i := range spans {
			if spans[i].Key.Model != "" {
				m.spans++
			} else {
				m.other++
			}
		}
		out = append(out, m)
	}
	if cfg.KeyByTrace {
		for _, g := range groupBy(all, func(s *schemas.Span) schemas.TraceID { return s.TraceID }) {
			emit(g.spans, []byte(g.key.String()))
		}
	} else {
		for _, g := range groupBy(all, func(s *schemas.Span) string { return s.Key.Service }) {
			for len(g.spans) > 0 {
				n := min(len(g.spans), cfg.SpansPerMessage)
				emit(g.spans[:n], nil)
				g.spans = g.spans[n:]
			}
		}
	}
	for i := range b.Corrections {
		v, err := schemas.EncodeCorrection(b.Corrections[i])
		if err != nil {
			return nil, fmt.Errorf("gen: correction %s: %w", b.Corrections[i].EventID, err)
		}
		out = append(out, message{rec: &kgo.Record{Topic: cfg.CorrectionsTopic, Value: v, Timestamp: time.Unix(0, b.Corrections[i].TimeUnixNano)}, corrections: 1})
	}
	return out, nil
}

// group is the spans sharing one key, in input order.
type group[K comparable] struct {
	key   K
	spans []schemas.Span
}

// groupBy groups spans by key in order of each key's first appearance.
func groupBy[K comparable](spans []schemas.Span, key func(*schemas.Span) K) []group[K] {
	var groups []group[K]
	index := map[K]int{}
	for i := range spans {
		k := key(&spans[i])
		g, ok := index[k]
		if !ok {
			g = len(groups)
			index[k] = g
			groups = append(groups, group[K]{key: k})
		}
		groups[g].spans = append(groups[g].spans, spans[i])
	}
	return groups
}

// newestEnd is the latest span end, as a time (the zero time for none,
// which leaves kgo to stamp the record with the wall clock).
func newestEnd(spans []schemas.Span) time.Time {
	var t int64
	for i := range spans {
		t = max(t, spans[i].EndUnixNano)
	}
	if t == 0 {
		return time.Time{}
	}
	return time.Unix(0, t)
}
