package rollup

import (
	"os"
	"testing"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// answerSpan is a successful call (unless errored) of key k in minute 1000
// with the finish reason and, when out >= 0, that many output tokens.
func answerSpan(k schemas.Key, i int, reason string, out int64, op string, errored bool) schemas.Span {
	s := schemas.Span{Key: k, StartUnixNano: 1000*Minute + int64(i)*1e6, EndUnixNano: 1000*Minute + int64(i)*1e6 + 5e6,
		FinishReason: reason, Operation: op, Error: errored}
	if out >= 0 {
		s.OutputTokens, s.Has = out, schemas.HasOutputTokens
	}
	s.SpanID[0], s.SpanID[1] = byte(i), byte(i>>8)
	s.Derive()
	return s
}

// TestFailedAnswersCountedByReason: per key and minute, the failed answers
// and their breakdown under the default definition — provider aliases
// (MAX_TOKENS, SAFETY, max_tokens) counted with length and content_filter,
// an error with finish reason length counted only as an error, an
// embeddings call with 0 output tokens and a call without any count not
// counted — and under a configured one.
func TestFailedAnswersCountedByReason(t *testing.T) {
	k := schemas.Key{Tenant: "t", Service: "s", Model: "m"}
	calls := []schemas.Span{
		answerSpan(k, 1, "stop", 20, "chat", false),
		answerSpan(k, 2, "length", 32, "chat", false),
		answerSpan(k, 3, "MAX_TOKENS", 32, "chat", false),     // Gemini
		answerSpan(k, 4, "max_tokens", 32, "chat", false),     // Anthropic
		answerSpan(k, 5, "content_filter", 0, "chat", false),  // filtered wins over empty
		answerSpan(k, 6, "SAFETY", -1, "chat", false),         // Gemini
		answerSpan(k, 7, "stop", 0, "chat", false),            // empty
		answerSpan(k, 8, "", 0, "text_completion", false),     // empty
		answerSpan(k, 9, "", 0, "embeddings", false),          // embeddings: no output by design
		answerSpan(k, 10, "", -1, "chat", false),              // nothing reported: not a failure
		answerSpan(k, 11, "length", 3, "chat", true),          // an error, not a failed answer
		answerSpan(k, 12, "tool_calls", 10, "chat", false),    // delivered
		answerSpan(k, 13, "Content_Filter", 0, "chat", false), // case folded
	}
	run := func(cfg Config) schemas.Rollup {
		t.Helper()
		p, _ := New(cfg)
		for i := range calls {
			p.ObserveSpan(k, &calls[i])
		}
		var out proctest.Collector
		p.Evaluate(1001*Minute, &out)
		if len(out.Rollups) != 1 {
			t.Fatalf("%d rows, want 1", len(out.Rollups))
		}
		return out.Rollups[0]
	}
	r := run(Config{MaxSamplesPerMinute: 100})
	if r.N != 13 || r.Errors != 1 || r.FailedAnswers != 8 || r.FailedLength != 3 || r.FailedContentFilter != 3 || r.EmptyAnswers != 2 {
		t.Errorf("default: n %d errors %d failed %d (length %d, content_filter %d, empty %d); want 13, 1, 8 (3, 3, 2)",
			r.N, r.Errors, r.FailedAnswers, r.FailedLength, r.FailedContentFilter, r.EmptyAnswers)
	}
	// Only content filtering and tool calls count; empty answers do not.
	rule := schemas.Answers{FailedFinishReasons: []string{"refusal", "TOOL_CALLS"}}.Rule()
	r = run(Config{MaxSamplesPerMinute: 100, Answers: rule})
	if r.FailedAnswers != 4 || r.FailedLength != 0 || r.FailedContentFilter != 3 || r.EmptyAnswers != 0 {
		t.Errorf("configured: failed %d (length %d, content_filter %d, empty %d); want 4 (0, 3, 0) and 1 other",
			r.FailedAnswers, r.FailedLength, r.FailedContentFilter, r.EmptyAnswers)
	}
}

// TestFailedAnswersSurviveSnapshot: the counts of an open minute are in
// the snapshot.
func TestFailedAnswersSurviveSnapshot(t *testing.T) {
	k := schemas.Key{Tenant: "t"}
	p, _ := New(Config{MaxSamplesPerMinute: 10})
	for i, reason := range []string{"length", "content_filter", "stop", "length"} {
		s := answerSpan(k, i, reason, 5, "chat", false)
		p.ObserveSpan(k, &s)
	}
	e := answerSpan(k, 9, "stop", 0, "chat", false)
	p.ObserveSpan(k, &e)
	b, _ := p.MarshalBinary()
	q, _ := New(Config{MaxSamplesPerMinute: 10})
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	var out proctest.Collector
	q.Evaluate(1001*Minute, &out)
	if r := out.Rollups[0]; r.FailedAnswers != 4 || r.FailedLength != 2 || r.FailedContentFilter != 1 || r.EmptyAnswers != 1 {
		t.Fatalf("restored row %+v", r)
	}
}

// TestReadsVersion3Snapshot restores a snapshot written by the build before
// the failed answers (testdata/rollup_v3.snap: three spans of one key in
// minute 1000 with finish reason length, 10 input and 5 output tokens each,
// counted by none then) and closes its minute: the old spans count no
// failed answer, a new one does.
func TestReadsVersion3Snapshot(t *testing.T) {
	b, err := os.ReadFile("testdata/rollup_v3.snap")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := New(Config{MaxSamplesPerMinute: 10})
	if err := p.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	k := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}
	s := answerSpan(k, 50, "content_filter", 0, "chat", false)
	p.ObserveSpan(k, &s)
	var out proctest.Collector
	p.Evaluate(1001*Minute, &out)
	if len(out.Rollups) != 1 {
		t.Fatalf("%d rows", len(out.Rollups))
	}
	r := out.Rollups[0]
	if r.N != 4 || r.InputTokens != 30 || r.OutputTokens != 15 || r.CacheReadTokens != 6 || r.FailedAnswers != 1 || r.FailedContentFilter != 1 {
		t.Fatalf("row %+v; want 4 spans, 30/15 tokens, 6 cache read, 1 failed answer (content_filter)", r)
	}
}
