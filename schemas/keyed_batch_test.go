package schemas

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// oddSpans returns spans with values no decoder would produce but the keyed
// format must carry exactly: NaN payloads, -0, infinities, invalid UTF-8,
// every Has bit, negative counts.
func oddSpans(rng *rand.Rand, n int) []Span {
	spans := randSpans(rng, n)
	odd := []float64{math.Float64frombits(0x7ff8000000000abc), math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64}
	for i := range spans {
		s := &spans[i]
		switch i % 4 {
		case 1:
			s.TTFTMs, s.Confidence, s.DurationMs = pick(rng, odd), pick(rng, odd), pick(rng, odd)
			s.Has = keyedHasMask
			s.CacheReadTokens, s.CacheWriteTokens, s.ReasoningTokens = rng.Int64(), -rng.Int64(), math.MaxInt64
			s.Stream, s.ResponseID = true, "chatcmpl-\xff1"
			s.Scope = "scope-\xff"
		case 2:
			s.Key.Tenant, s.SessionID = "bad\xff\xfeutf8", string([]byte{0, 1, 2})
			s.InputTokens, s.StartUnixNano = -5, math.MinInt64
			s.CacheReadTokens, s.Stream = -1, true // without its Has bit: carried as is
		case 3:
			s.Error, s.ErrorType = false, "inconsistent on purpose"
			s.Scope = "openinference.instrumentation.openai"
		}
	}
	return spans
}

func oddCorrections(rng *rand.Rand, n int) []Correction {
	out := make([]Correction, n)
	for i := range out {
		out[i] = randCorrection(rng)
		if i%3 == 2 {
			out[i].ResponseID = "resp-" + strconv.Itoa(i)
		}
		if i%3 == 1 {
			out[i].SchemaVersion = -7
			out[i].Kind = "not-a-kind\xff"
			out[i].TimeUnixNano = math.MinInt64
		}
	}
	return out
}

// assertCorrectionsEqual compares corrections exactly.
func assertCorrectionsEqual(t *testing.T, got, want []Correction) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("corrections differ:\n got  %+v\n want %+v", got, want)
	}
}

func TestKeyedBatchRoundTrip(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 9))
		spans := oddSpans(rng, rng.IntN(40))
		corrs := oddCorrections(rng, rng.IntN(10))
		b := AppendKeyedBatch([]byte("prefix"), spans, corrs)
		if string(b[:6]) != "prefix" {
			t.Fatal("AppendKeyedBatch clobbered dst")
		}
		b = b[6:]
		// Decode appends after what the slices hold.
		gotS, gotC, err := DecodeKeyedBatch(b, make([]Span, 1), make([]Correction, 2))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(gotS) != len(spans)+1 || len(gotC) != len(corrs)+2 {
			t.Fatalf("seed %d: got %d spans, %d corrections", seed, len(gotS), len(gotC))
		}
		assertSpansEqual(t, gotS[1:], spans)
		if len(corrs) > 0 {
			assertCorrectionsEqual(t, gotC[2:], corrs)
		}
	}
}

func TestKeyedBatchRejectsGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	good := AppendKeyedBatch(nil, oddSpans(rng, 3), oddCorrections(rng, 3))
	cases := map[string][]byte{
		"empty":          {},
		"other version":  append([]byte{4}, good[1:]...),
		"v3 read as v1":  append([]byte{KeyedBatchVersion1}, good[1:]...),
		"v3 read as v2":  append([]byte{KeyedBatchVersion2}, good[1:]...),
		"trailing byte":  append(append([]byte{}, good...), 0),
		"huge counts":    {KeyedBatchVersion, 0xff, 0xff, 0xff, 0xff, 0x0f, 0},
		"bad varint":     {KeyedBatchVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"one span, none": {KeyedBatchVersion, 1, 0},
	}
	// Every strict prefix is truncated.
	for n := 1; n < len(good); n++ {
		cases["prefix "+strconv.Itoa(n)] = good[:n]
	}
	// A bad Error flag and unknown Has bits in the first span.
	flagAt := 3 + keyedSpanFixed - 1
	badFlag := append([]byte{}, good...)
	badFlag[flagAt] = 2
	cases["error flag 2"] = badFlag
	badHas := append([]byte{}, good...)
	badHas[flagAt-1] = 0x80
	cases["unknown Has bit"] = badHas

	prefixS, prefixC := make([]Span, 2), make([]Correction, 1)
	for name, b := range cases {
		s, c, err := DecodeKeyedBatch(b, prefixS, prefixC)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
		if len(s) != 2 || len(c) != 1 {
			t.Errorf("%s: slices changed on error: %d spans, %d corrections", name, len(s), len(c))
		}
	}
}

func BenchmarkKeyedBatch(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	spans := randSpans(rng, benchSpans)
	buf := AppendKeyedBatch(nil, spans, nil)
	b.Run("encode", func(b *testing.B) {
		out := make([]byte, 0, len(buf))
		b.SetBytes(int64(len(buf)))
		perSpan(b, benchSpans, func() { out = AppendKeyedBatch(out[:0], spans, nil) })
	})
	b.Run("decode", func(b *testing.B) {
		dst := make([]Span, 0, benchSpans)
		b.SetBytes(int64(len(buf)))
		perSpan(b, benchSpans, func() {
			var err error
			if dst, _, err = DecodeKeyedBatch(buf, dst[:0], nil); err != nil {
				b.Fatal(err)
			}
		})
	})
}

func FuzzDecodeKeyedBatch(f *testing.F) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 13))
		f.Add(AppendKeyedBatch(nil, oddSpans(rng, rng.IntN(4)), oddCorrections(rng, rng.IntN(3))))
	}
	f.Add([]byte{KeyedBatchVersion, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		spans, corrs, err := DecodeKeyedBatch(b, nil, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error is not ErrMalformed: %v", err)
			}
			return
		}
		again, againC, err := DecodeKeyedBatch(AppendKeyedBatch(nil, spans, corrs), nil, nil)
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		assertSpansEqual(t, again, spans)
		if len(corrs) > 0 || len(againC) > 0 {
			assertCorrectionsEqual(t, againC, corrs)
		}
	})
}

// TestKeyedBatchReadsVersion1 decodes a batch written by the build before
// the token kinds (testdata/keyed_batch_v1.bin, made by that build's
// AppendKeyedBatch): records on the keyed topic and checkpoints of an older
// build stay readable, with the new fields absent.
func TestKeyedBatchReadsVersion1(t *testing.T) {
	b, err := os.ReadFile("testdata/keyed_batch_v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != KeyedBatchVersion1 {
		t.Fatalf("version %d", b[0])
	}
	spans, corrs, err := DecodeKeyedBatch(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Span{TraceID: TraceID{1, 2, 3}, SpanID: SpanID{4, 5}, StartUnixNano: 1e18, EndUnixNano: 1e18 + 2e9, DurationMs: 2000, TTFTMs: 500, TPOTMs: 15,
		InputTokens: 100, OutputTokens: 101, Has: HasTTFT | HasTPOT | HasInputTokens | HasOutputTokens | HasConfidence, Confidence: 0.75,
		FinishReason: "stop", Key: Key{Tenant: "acme", Service: "bot", Model: "gpt-4o", Variant: "canary"}, Operation: "chat", Provider: "openai",
		ResponseModel: "gpt-4o-0613", Route: "chat", SessionID: "s1", Error: true, ErrorType: "timeout"}
	if len(spans) != 1 || spans[0] != want {
		t.Fatalf("spans %+v", spans)
	}
	wantC := []Correction{{SchemaVersion: 1, EventID: "e1", TimeUnixNano: 1e18 + 3e9, TraceID: TraceID{1, 2, 3}, Tenant: "acme", Kind: "reject", Context: []KV{{"k", "v"}}}}
	assertCorrectionsEqual(t, corrs, wantC)
	// Version 1 knows none of the new Has bits: one set there is damage.
	bad := slices.Clone(b)
	hasOff := 1 + 2 + 16 + 8 + 2*8 + 5*8 + 2*8
	bad[hasOff+0] |= byte(HasCacheReadTokens)
	if _, _, err := DecodeKeyedBatch(bad, nil, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("v1 with a cache bit: err = %v", err)
	}
	// The same records written by this build are version 3 and come back whole.
	again, _, err := DecodeKeyedBatch(AppendKeyedBatch(nil, spans, corrs), nil, nil)
	if err != nil || len(again) != 1 || again[0] != want {
		t.Fatalf("v3 round trip: %+v, %v", again, err)
	}
}

// TestKeyedBatchReadsVersion2 decodes a batch in the format of the build
// before Span.Scope: a version-3 batch of one span without a scope, less
// the scope's empty string (its last byte), is byte for byte what that
// build wrote; it decodes with Scope "".
func TestKeyedBatchReadsVersion2(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	spans := oddSpans(rng, 2)[1:2] // the one with every Has bit
	spans[0].Scope = ""
	v3 := AppendKeyedBatch(nil, spans, nil)
	if v3[0] != KeyedBatchVersion || v3[len(v3)-1] != 0 {
		t.Fatalf("unexpected v3 layout: version %d, last byte %d", v3[0], v3[len(v3)-1])
	}
	v2 := append([]byte{KeyedBatchVersion2}, v3[1:len(v3)-1]...)
	got, _, err := DecodeKeyedBatch(v2, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertSpansEqual(t, got, spans)
	// A scope in version 3 comes back.
	spans[0].Scope = "openlit.otel.tracing"
	got, _, err = DecodeKeyedBatch(AppendKeyedBatch(nil, spans, nil), nil, nil)
	if err != nil || len(got) != 1 || got[0].Scope != "openlit.otel.tracing" {
		t.Fatalf("v3 scope: %+v, %v", got, err)
	}
}

// TestKeyedBatchWritesVersion2: AppendKeyedBatchVersion with
// KeyedBatchVersion2 (compat.write_formats: previous) writes what the
// build before Span.Scope wrote and read — the scope left out — while the
// version-3 batch of the same spans is refused by that build's reader:
// during a rolling upgrade, an old pod dead-letters every version-3
// record a new pod's router sends it.
func TestKeyedBatchWritesVersion2(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	spans := oddSpans(rng, 8)
	corrs := oddCorrections(rng, 3)
	v2 := AppendKeyedBatchVersion(nil, KeyedBatchVersion2, spans, corrs)
	if v2[0] != KeyedBatchVersion2 {
		t.Fatalf("version %d, want 2", v2[0])
	}
	// The reader of a build that knows versions 1 and 2 only.
	got, gotC, err := decodeKeyedBatch(v2, KeyedBatchVersion2, nil, nil)
	if err != nil {
		t.Fatalf("the version-2 reader refuses a version-2 batch: %v", err)
	}
	want := slices.Clone(spans)
	for i := range want {
		want[i].Scope = ""
	}
	assertSpansEqual(t, got, want)
	assertCorrectionsEqual(t, gotC, corrs)
	// This build reads it the same.
	got, _, err = DecodeKeyedBatch(v2, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertSpansEqual(t, got, want)

	v3 := AppendKeyedBatchVersion(nil, KeyedBatchVersion, spans, corrs)
	if !slices.Equal(v3, AppendKeyedBatch(nil, spans, corrs)) || v3[0] != KeyedBatchVersion {
		t.Fatalf("version %d, or AppendKeyedBatch differs", v3[0])
	}
	if _, _, err := decodeKeyedBatch(v3, KeyedBatchVersion2, nil, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("the version-2 reader on a version-3 batch: err = %v, want ErrMalformed", err)
	}
}
