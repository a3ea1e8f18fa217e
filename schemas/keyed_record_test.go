package schemas

import (
	"math"
	"strings"
	"testing"
)

func TestKeyedHeadersRoundTrip(t *testing.T) {
	for _, h := range []KeyedHeaders{
		{Source: SourceRef{Topic: "otlp_spans", Partition: 3, Offset: 10, Part: 2}, SourceMaxEventTime: 1_800_000_000e9, SourceTopics: "otlp_spans:6"},
		{Source: SourceRef{Topic: "a/b", Partition: 0, Offset: 0}, SourceMaxEventTime: math.MinInt64, Idle: true},
		{Source: SourceRef{Topic: "t", Partition: 1, Offset: 5}, SourceMaxEventTime: -7},
		{Source: SourceRef{Topic: "t", Partition: 2, Offset: 6}, SourceMaxEventTime: 9, Deployment: "team-a/prod"},
		{Source: SourceRef{Topic: "t", Partition: 4, Offset: 8}, SourceMaxEventTime: 11, Idle: true, IdleForNanos: 12_500_000_000, SeenAtUnixNano: 1_800_000_001e9},
	} {
		hs := AppendKeyedHeaders(nil, h)
		if h.Source.Topic == "a/b" {
			// A slash in the topic name cannot be told apart: topics are
			// [a-zA-Z0-9._-] in Kafka, so this is rejected, not misread.
			if _, err := ParseKeyedHeaders(hs); err == nil {
				t.Errorf("%+v: a source with a slash parsed", h)
			}
			continue
		}
		hs = append(hs, Header{Key: "other", Value: []byte("ignored")})
		got, err := ParseKeyedHeaders(hs)
		if err != nil || got != h {
			t.Errorf("round trip of %+v = %+v, %v", h, got, err)
		}
	}
}

func TestKeyedHeadersErrorsNameTheHeader(t *testing.T) {
	src := Header{Key: HeaderSource, Value: []byte("t/1/2/0")}
	for _, tc := range []struct {
		hs   []Header
		want string
	}{
		{nil, "no fb.src header"},
		{[]Header{{Key: HeaderSource, Value: []byte("t/1/2")}}, "fb.src is not topic/partition/offset/part"},
		{[]Header{{Key: HeaderSource, Value: []byte("t/x/2/0")}}, `parsing "x"`},
		{[]Header{src, {Key: HeaderSourceMax, Value: []byte("soon")}}, `parsing "soon"`},
		{[]Header{src, {Key: HeaderIdle, Value: []byte("1")}, {Key: HeaderIdleFor, Value: []byte("-5")}}, `fb.idlefor is not a non-negative number of nanoseconds: "-5"`},
		{[]Header{src, {Key: HeaderSeenAt, Value: []byte("noon")}}, `fb.seen is not a Unix time in nanoseconds: "noon"`},
	} {
		_, err := ParseKeyedHeaders(tc.hs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.hs, err, tc.want)
		}
	}
}
