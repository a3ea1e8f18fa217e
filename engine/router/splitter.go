package router

import (
	"math"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Out is one keyed record to write.
type Out struct {
	Partition int32
	Source    schemas.SourceRef
	// SourceMax is the newest event time seen on the source partition,
	// math.MinInt64 before any.
	SourceMax int64
	Idle      bool
	// IdleFor is, on an idle marker, how long (wall time) the source had
	// brought no valid event; 0 when not known. SeenAt is then the wall
	// clock when its last valid event came.
	IdleFor     time.Duration
	SeenAt      time.Time
	Spans       []schemas.Span
	Corrections []schemas.Correction
	// Value is the keyed-batch encoding of Spans and Corrections (nil for
	// heartbeats and idle markers).
	Value []byte
}

// Headers renders the keyed-record headers of out (schemas.AppendKeyedHeaders).
func Headers(out Out, sourceTopics string) []kgo.RecordHeader {
	kh := schemas.KeyedHeaders{
		Source: out.Source, SourceMaxEventTime: out.SourceMax, SourceTopics: sourceTopics, Idle: out.Idle}
	if out.Idle && out.IdleFor > 0 && !out.SeenAt.IsZero() {
		kh.IdleForNanos, kh.SeenAtUnixNano = int64(out.IdleFor), out.SeenAt.UnixNano()
	}
	hs := schemas.AppendKeyedHeaders(make([]schemas.Header, 0, 6), kh)
	h := make([]kgo.RecordHeader, len(hs))
	for i, x := range hs {
		h[i] = kgo.RecordHeader(x)
	}
	return h
}

// SplitterConfig configures a Splitter.
type SplitterConfig struct {
	ByTenant       bool
	HeartbeatEvery time.Duration // event time; default 1s
	MaxRecordBytes int           // default 900 KiB
	// KeyedBatchVersion is the keyed-batch format written (see
	// schemas.AppendKeyedBatchVersion): 0 for the current one,
	// schemas.KeyedBatchVersion2 while older pods still read the keyed
	// topic (compat.write_formats: previous).
	KeyedBatchVersion byte
}

// Splitter decides, for one source partition, which keyed records each
// source record becomes: the spans and corrections grouped by keyed
// partition, heartbeats for the partitions that get nothing, idle markers.
// It is the router's logic without Kafka, so tests can drive the keyed
// stage exactly as the router would.
type Splitter struct {
	cfg          SplitterConfig
	topic        string
	partition    int32
	partitions   int32
	maxEventTime int64
	lastBeat     []int64 // per keyed partition: maxEventTime last announced
	lastOffset   int64
	idle         bool
	spans        [][]schemas.Span
	corrections  [][]schemas.Correction
}

// NewSplitter returns the splitter of source partition (topic, partition)
// writing to a keyed topic of n partitions.
func NewSplitter(topic string, partition, n int32, cfg SplitterConfig) *Splitter {
	if cfg.HeartbeatEvery <= 0 {
		cfg.HeartbeatEvery = time.Second
	}
	if cfg.MaxRecordBytes <= 0 {
		cfg.MaxRecordBytes = 900 << 10
	}
	s := &Splitter{cfg: cfg, topic: topic, partition: partition, maxEventTime: math.MinInt64, lastOffset: -1}
	s.SetPartitions(n)
	return s
}

// SetPartitions adapts to a new keyed partition count.
func (s *Splitter) SetPartitions(n int32) {
	if n == s.partitions {
		return
	}
	s.partitions = n
	s.lastBeat = make([]int64, n)
	for i := range s.lastBeat {
		s.lastBeat[i] = math.MinInt64
	}
	s.spans = make([][]schemas.Span, n)
	s.corrections = make([][]schemas.Correction, n)
}

// Dest is the keyed partition of a tenant.
func (s *Splitter) Dest(tenant string) int32 {
	if !s.cfg.ByTenant || s.partitions <= 1 {
		return 0
	}
	return int32(schemas.TenantHash(tenant) % uint32(s.partitions))
}

// Split returns the keyed records of the source record at offset. The
// returned slices are only valid until the next call.
func (s *Splitter) Split(offset int64, spans []schemas.Span, corrections []schemas.Correction) []Out {
	n := s.partitions
	for p := range s.spans {
		s.spans[p] = s.spans[p][:0]
		s.corrections[p] = s.corrections[p][:0]
	}
	for i := range spans {
		d := s.Dest(spans[i].Key.Tenant)
		s.spans[d] = append(s.spans[d], spans[i])
		s.maxEventTime = max(s.maxEventTime, spans[i].EndUnixNano)
	}
	for i := range corrections {
		d := s.Dest(corrections[i].Tenant)
		s.corrections[d] = append(s.corrections[d], corrections[i])
		s.maxEventTime = max(s.maxEventTime, corrections[i].TimeUnixNano)
	}
	s.lastOffset = offset
	if s.maxEventTime == math.MinInt64 {
		// No event time yet (records without LLM spans): for the
		// watermark this source is idle, or it would hold every keyed
		// partition back until its first LLM span.
		if !s.idle {
			return s.MarkIdle()
		}
		return nil
	}
	if len(spans) == 0 && len(corrections) == 0 && s.idle {
		// A record without a valid event (every span rejected, or none
		// with a model) is no sign of progress: the source stays idle, or
		// a steady stream of rejected records would hold every keyed
		// partition's watermark at this source's last valid event time.
		return nil
	}
	if s.idle {
		// Back from idle: every keyed partition must hear of this source
		// again at once, or its watermark would keep ignoring it.
		s.idle = false
		for p := range s.lastBeat {
			s.lastBeat[p] = math.MinInt64
		}
	}
	var out []Out
	beat := int64(s.cfg.HeartbeatEvery)
	for p := int32(0); p < n; p++ {
		if len(s.spans[p]) == 0 && len(s.corrections[p]) == 0 {
			if s.lastBeat[p] != math.MinInt64 && s.maxEventTime-s.lastBeat[p] < beat {
				continue
			}
			out = append(out, s.out(p, offset, 0, nil, nil))
			continue
		}
		out = s.split(out, p, offset)
	}
	return out
}

func (s *Splitter) out(p int32, offset int64, part int32, spans []schemas.Span, corr []schemas.Correction) Out {
	s.lastBeat[p] = s.maxEventTime
	return Out{Partition: p, Source: schemas.SourceRef{Topic: s.topic, Partition: s.partition, Offset: offset, Part: part},
		SourceMax: s.maxEventTime, Spans: spans, Corrections: corr}
}

// split appends partition p's records, in parts whose encoding stays
// within MaxRecordBytes.
func (s *Splitter) split(out []Out, p int32, offset int64) []Out {
	spans, corr := s.spans[p], s.corrections[p]
	var buf []byte
	for part := int32(0); len(spans) > 0 || len(corr) > 0; part++ {
		ns, nc := len(spans), len(corr)
		for {
			buf = schemas.AppendKeyedBatchVersion(buf[:0], s.cfg.KeyedBatchVersion, spans[:ns], corr[:nc])
			if len(buf) <= s.cfg.MaxRecordBytes || ns+nc <= 1 {
				break
			}
			if ns > 0 { // halve spans first, then corrections
				ns /= 2
				nc = 0
			} else {
				nc /= 2
			}
		}
		o := s.out(p, offset, part, spans[:ns:ns], corr[:nc:nc])
		o.Value = append([]byte(nil), buf...)
		out = append(out, o)
		spans, corr = spans[ns:], corr[nc:]
	}
	return out
}

// Idle reports whether the source is marked idle.
func (s *Splitter) Idle() bool { return s.idle }

// MarkIdle returns idle markers for every keyed partition, unless the
// source is marked idle already.
func (s *Splitter) MarkIdle() []Out {
	if s.idle {
		return nil
	}
	return s.IdleMarkers()
}

// IdleMarkers marks the source idle and returns idle markers for every
// keyed partition, even when it is idle already: the router repeats them
// while the source stays silent, because a keyed partition whose sources
// were all idle wakes them all when the first comes back (see
// the engine's Worker.Apply) and must hear again about those still silent.
func (s *Splitter) IdleMarkers() []Out { return s.IdleMarkersAt(time.Time{}, time.Time{}) }

// IdleMarkersAt is IdleMarkers stamped, at wall time now, with how long
// the source has brought no valid event (now - seen, seen being when its
// last valid event came) and with seen: the keyed stage lets the
// watermark of a partition whose sources are all idle advance by the
// silence of the live ones. A source without any event time yet gets no
// stamp (it has no event time to advance from), nor does a zero now.
func (s *Splitter) IdleMarkersAt(now, seen time.Time) []Out {
	s.idle = true
	var idleFor time.Duration
	if s.maxEventTime != math.MinInt64 && !now.IsZero() && !seen.IsZero() && now.After(seen) {
		idleFor = now.Sub(seen)
	} else {
		seen = time.Time{}
	}
	out := make([]Out, s.partitions)
	for p := range out {
		out[p] = Out{Partition: int32(p), Source: schemas.SourceRef{Topic: s.topic, Partition: s.partition, Offset: s.lastOffset},
			SourceMax: s.maxEventTime, Idle: true, IdleFor: idleFor, SeenAt: seen}
	}
	return out
}
