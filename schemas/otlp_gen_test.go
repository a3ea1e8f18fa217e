package schemas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Test helpers shared by the OTLP, keyed-batch, fuzz and benchmark tests.

var (
	genModels    = []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "llama-3.1-70b", "mistral-large", "modèle-\"été\"\n✓"}
	genServices  = []string{"checkout-assistant", "support-bot", "search-rerank", "svc/with slash", ""}
	genTenants   = []string{"acme", "globex", "initech", "umbrella", "tenant-ß", ""}
	genVariants  = []string{"baseline", "canary", ""}
	genOps       = []string{"chat", "text_completion", "embeddings", "generate_content", ""}
	genProviders = []string{"openai", "anthropic", "aws.bedrock", "vertex_ai", ""}
	genFinish    = []string{"stop", "length", "content_filter", "tool_calls", ""}
	genRoutes    = []string{"/v1/chat", "/v1/complete", "/answer"}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// randSpans returns n spans of the kind the OTLP decoders produce (a model,
// derived duration and TPOT, Route falling back to Operation, ...), so that
// encoding and decoding them must give them back exactly.
func randSpans(rng *rand.Rand, n int) []Span {
	out := make([]Span, n)
	for i := range out {
		sp := &out[i]
		for j := range sp.TraceID {
			sp.TraceID[j] = byte(rng.UintN(256))
		}
		for j := range sp.SpanID {
			sp.SpanID[j] = byte(rng.UintN(256))
		}
		sp.StartUnixNano = 1_700_000_000_000_000_000 + rng.Int64N(1e15)
		durNs := rng.Int64N(30e9)
		sp.EndUnixNano = sp.StartUnixNano + durNs
		sp.Key = Key{Tenant: pick(rng, genTenants), Service: pick(rng, genServices), Model: pick(rng, genModels[:len(genModels)-1]), Variant: pick(rng, genVariants)}
		if rng.IntN(10) == 0 {
			sp.Key.Model = genModels[len(genModels)-1]
		}
		sp.Operation = pick(rng, genOps)
		sp.Provider = pick(rng, genProviders)
		if rng.IntN(2) == 0 {
			sp.ResponseModel = sp.Key.Model + "-2025-01-01"
		}
		sp.Route = sp.Operation
		if rng.IntN(3) == 0 {
			sp.Route = pick(rng, genRoutes)
		}
		if rng.IntN(2) == 0 {
			sp.SessionID = fmt.Sprintf("sess-%08x", rng.Uint32())
		}
		if rng.IntN(5) > 0 {
			sp.InputTokens = rng.Int64N(20000)
			sp.Has |= HasInputTokens
		}
		if rng.IntN(5) > 0 {
			sp.OutputTokens = rng.Int64N(4000)
			sp.Has |= HasOutputTokens
		}
		if rng.IntN(4) > 0 {
			// As an SDK would: a time in seconds, which the decoder turns into ms.
			sec := rng.Float64() * float64(durNs) / 1e9
			sp.TTFTMs = sec * 1000
			sp.Has |= HasTTFT
		}
		sp.FinishReason = pick(rng, genFinish)
		switch rng.IntN(6) {
		case 0:
			sp.Error, sp.ErrorType = true, statusErrorType
		case 1:
			sp.Error, sp.ErrorType = true, pick(rng, []string{"timeout", "rate_limited", "500"})
		}
		if rng.IntN(3) > 0 {
			sp.Confidence = rng.Float64()
			sp.Has |= HasConfidence
		}
		if rng.IntN(3) > 0 {
			sp.Alignment = rng.Float64()
			sp.Has |= HasAlignment
		}
		// The token kinds, the stream flag and the response id of newer
		// conventions, each present at random.
		for _, t := range []struct {
			has Fields
			dst *int64
		}{{HasCacheReadTokens, &sp.CacheReadTokens}, {HasCacheWriteTokens, &sp.CacheWriteTokens}, {HasReasoningTokens, &sp.ReasoningTokens}} {
			if rng.IntN(3) == 0 {
				*t.dst, sp.Has = rng.Int64N(5000), sp.Has|t.has
			}
		}
		if rng.IntN(2) == 0 {
			sp.Stream, sp.Has = rng.IntN(4) > 0, sp.Has|HasStream
		}
		if rng.IntN(2) == 0 {
			sp.ResponseID = fmt.Sprintf("chatcmpl-%08x", rng.Uint32())
		}
		refDerive(sp)
	}
	return out
}

// byServiceOrder reorders spans as the encoders group them: by service and
// scope in order of first appearance.
func byServiceOrder(spans []Span) []Span {
	var out []Span
	for _, g := range groupByService(spans) {
		for _, i := range g.spans {
			out = append(out, spans[i])
		}
	}
	return out
}

// floatFields lists a span's float fields, compared bit for bit.
func floatFields(s *Span) []*float64 {
	return []*float64{&s.DurationMs, &s.TTFTMs, &s.TPOTMs, &s.Confidence, &s.Alignment}
}

// spanDiff describes the first difference between two spans, "" when they are
// equal with floats compared bit for bit.
func spanDiff(a, b Span) string {
	fa, fb := floatFields(&a), floatFields(&b)
	for i := range fa {
		if math.Float64bits(*fa[i]) != math.Float64bits(*fb[i]) {
			return fmt.Sprintf("float field %d: %v (%x) != %v (%x)", i, *fa[i], math.Float64bits(*fa[i]), *fb[i], math.Float64bits(*fb[i]))
		}
		*fa[i], *fb[i] = 0, 0
	}
	if a != b {
		return fmt.Sprintf("\n got  %+v\n want %+v", a, b)
	}
	return ""
}

// assertSpansEqual fails t at the first span that differs.
func assertSpansEqual(t testing.TB, got, want []Span) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d spans, want %d", len(got), len(want))
	}
	for i := range got {
		if d := spanDiff(got[i], want[i]); d != "" {
			t.Fatalf("span %d differs: %s", i, d)
		}
	}
}

// sortedByID returns spans sorted by span id, for comparisons where the
// grouping order does not matter.
func sortedByID(spans []Span) []Span {
	out := slices.Clone(spans)
	slices.SortStableFunc(out, func(a, b Span) int {
		return slices.Compare(a.SpanID[:], b.SpanID[:])
	})
	return out
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }
