package router

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

func span(tenant string, end int64) schemas.Span {
	return schemas.Span{Key: schemas.Key{Tenant: tenant, Model: "m"}, StartUnixNano: end - 1e6, EndUnixNano: end, DurationMs: 1}
}

func TestSplitRoutesByTenantAndHeartbeats(t *testing.T) {
	s := NewSplitter("otlp_spans", 3, 4, SplitterConfig{ByTenant: true, HeartbeatEvery: time.Second})
	base := int64(1_800_000_000e9)
	spans := []schemas.Span{span("acme", base), span("globex", base+5e8), span("acme", base+1e8)}
	out := s.Split(10, spans, nil)
	// The first record: data where tenants go, heartbeats everywhere else.
	if len(out) != 4 {
		t.Fatalf("%d keyed records, want one per partition", len(out))
	}
	perPartition := map[int32]int{}
	for _, o := range out {
		if o.Source != (schemas.SourceRef{Topic: "otlp_spans", Partition: 3, Offset: 10}) || o.SourceMax != base+5e8 {
			t.Fatalf("record %+v: wrong source or source max", o)
		}
		for _, sp := range o.Spans {
			if s.Dest(sp.Key.Tenant) != o.Partition {
				t.Fatalf("tenant %s in partition %d, want %d", sp.Key.Tenant, o.Partition, s.Dest(sp.Key.Tenant))
			}
		}
		perPartition[o.Partition] += len(o.Spans)
		if len(o.Spans) > 0 {
			got, _, err := schemas.DecodeKeyedBatch(o.Value, nil, nil)
			if err != nil || len(got) != len(o.Spans) {
				t.Fatalf("value decodes to %d spans (%v), want %d", len(got), err, len(o.Spans))
			}
		} else if o.Value != nil {
			t.Fatal("heartbeat with a value")
		}
	}
	if perPartition[s.Dest("acme")] != 2 {
		t.Fatalf("acme's two spans not together: %v", perPartition)
	}
	// Half a second later: no heartbeats yet (throttled), only data.
	out = s.Split(11, []schemas.Span{span("acme", base+9e8)}, nil)
	if len(out) != 1 || out[0].Partition != s.Dest("acme") {
		t.Fatalf("second record: %d keyed records, want only acme's data", len(out))
	}
	// A second and a half later: heartbeats again.
	if out = s.Split(12, []schemas.Span{span("acme", base+2e9)}, nil); len(out) != 4 {
		t.Fatalf("after the heartbeat interval: %d records, want 4", len(out))
	}
}

func TestSplitLargeRecordsIntoParts(t *testing.T) {
	s := NewSplitter("otlp_spans", 0, 1, SplitterConfig{MaxRecordBytes: 4000})
	base := int64(1_800_000_000e9)
	var spans []schemas.Span
	for i := 0; i < 300; i++ {
		spans = append(spans, span("acme", base+int64(i)))
	}
	out := s.Split(5, spans, nil)
	if len(out) < 2 {
		t.Fatalf("%d parts, want the record split", len(out))
	}
	n := 0
	for i, o := range out {
		if o.Source.Part != int32(i) || o.Source.Offset != 5 {
			t.Fatalf("part %d has source %+v", i, o.Source)
		}
		if len(o.Value) > 4000 {
			t.Fatalf("part %d is %d bytes, over the limit", i, len(o.Value))
		}
		n += len(o.Spans)
	}
	if n != 300 {
		t.Fatalf("%d spans in the parts, want 300", n)
	}
}

func TestIdleMarkersAndReturn(t *testing.T) {
	s := NewSplitter("fusebox.corrections", 1, 3, SplitterConfig{ByTenant: true})
	// A record with no event time (no LLM span): the source is idle for
	// the watermark.
	out := s.Split(0, nil, nil)
	if len(out) != 3 || !out[0].Idle || !s.Idle() {
		t.Fatalf("no event time: %d records idle=%v, want 3 idle markers", len(out), s.Idle())
	}
	if again := s.MarkIdle(); again != nil {
		t.Fatal("idle markers written twice")
	}
	c := schemas.Correction{Tenant: "acme", TimeUnixNano: 1_800_000_000e9, EventID: "e"}
	out = s.Split(1, nil, []schemas.Correction{c})
	if len(out) != 3 || s.Idle() {
		t.Fatalf("back from idle: %d records, idle=%v; want every partition told at once", len(out), s.Idle())
	}
	hs := Headers(out[0], "fusebox.corrections:3")
	plain := make([]schemas.Header, len(hs))
	for i, h := range hs {
		plain[i] = schemas.Header(h)
	}
	rec, err := schemas.ParseKeyedHeaders(plain)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Source.Offset != 1 || rec.SourceMaxEventTime != c.TimeUnixNano || rec.SourceTopics != "fusebox.corrections:3" || rec.Idle {
		t.Fatalf("decoded headers %+v", rec)
	}
	if m := s.MarkIdle(); len(m) != 3 || m[0].SourceMax == math.MinInt64 {
		t.Fatalf("idle markers after data: %+v", m)
	}
}

// TestIdleMarkersCarryTheSilence: the router's repeated markers say how
// long the source has been silent (HeaderIdleFor), which the keyed stage
// advances an all-idle partition's watermark by; a source with no event
// time yet has nothing to advance from and gets no stamp.
func TestIdleMarkersCarryTheSilence(t *testing.T) {
	s := NewSplitter("otlp_spans", 2, 2, SplitterConfig{ByTenant: true})
	seen := time.Unix(1_800_000_001, 0)
	now := seen.Add(12500 * time.Millisecond)
	if m := s.IdleMarkersAt(now, seen); len(m) != 2 || m[0].IdleFor != 0 || !m[0].SeenAt.IsZero() {
		t.Fatalf("markers of a source without event time: %+v, want no idle duration", m)
	}
	s.Split(0, []schemas.Span{{Key: schemas.Key{Tenant: "acme", Model: "m"}, EndUnixNano: 1_800_000_000e9}}, nil)
	m := s.IdleMarkersAt(now, seen)
	if len(m) != 2 || m[1].IdleFor != 12500*time.Millisecond || !m[1].SeenAt.Equal(seen) || !m[1].Idle {
		t.Fatalf("markers after 12.5s of silence: %+v", m)
	}
	hs := Headers(m[1], "otlp_spans:3")
	plain := make([]schemas.Header, len(hs))
	for i, h := range hs {
		plain[i] = schemas.Header(h)
	}
	rec, err := schemas.ParseKeyedHeaders(plain)
	if err != nil || !rec.Idle || rec.IdleForNanos != int64(12500*time.Millisecond) || rec.SeenAtUnixNano != seen.UnixNano() || rec.SourceMaxEventTime != 1_800_000_000e9 {
		t.Fatalf("decoded marker headers %+v, %v", rec, err)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.SourceTopics = []string{"otlp_spans", "fusebox.corrections"}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults with source topics: %v", err)
	}
	c.SourceTopics = []string{"fusebox.keyed", ""}
	c.HeartbeatEvery, c.MaxRecordBytes = -time.Second, 10
	err := c.Validate()
	for _, want := range []string{"SourceTopics[0]: is the keyed topic", "SourceTopics[1]: must not be empty", "HeartbeatEvery: must be positive", "MaxRecordBytes: must be at least 1024"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	if err := (&Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "no source topics") {
		t.Errorf("empty config: %v", err)
	}
}

// TestSplitWritesPreviousKeyedBatchVersion: with KeyedBatchVersion 2
// (compat.write_formats: previous) the keyed records are version 2 — what
// pods of the build before Span.Scope read; they decode with every field
// but Scope — and version 3 without it.
func TestSplitWritesPreviousKeyedBatchVersion(t *testing.T) {
	base := int64(1_800_000_000e9)
	in := []schemas.Span{span("acme", base), span("globex", base+1e8)}
	for i := range in {
		in[i].Scope, in[i].Provider = "openlit.otel.tracing", "openai"
	}
	for _, tc := range []struct {
		set, want byte
	}{{0, schemas.KeyedBatchVersion}, {schemas.KeyedBatchVersion2, schemas.KeyedBatchVersion2}} {
		s := NewSplitter("otlp_spans", 0, 1, SplitterConfig{KeyedBatchVersion: tc.set})
		out := s.Split(1, in, nil)
		if len(out) != 1 || len(out[0].Value) == 0 {
			t.Fatalf("version %d: %d records", tc.set, len(out))
		}
		if out[0].Value[0] != tc.want {
			t.Fatalf("KeyedBatchVersion %d: keyed record of version %d, want %d", tc.set, out[0].Value[0], tc.want)
		}
		got, _, err := schemas.DecodeKeyedBatch(out[0].Value, nil, nil)
		if err != nil || len(got) != 2 {
			t.Fatalf("version %d: %d spans, %v", tc.want, len(got), err)
		}
		for i := range got {
			want := in[i]
			if tc.want == schemas.KeyedBatchVersion2 {
				want.Scope = ""
			}
			if got[i] != want {
				t.Fatalf("version %d: span %d is %+v, want %+v", tc.want, i, got[i], want)
			}
		}
	}
}
