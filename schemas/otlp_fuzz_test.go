package schemas

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The fuzz targets below check that no input makes a decoder panic, that
// every error wraps one of the three kinds, and that whatever decodes
// re-encodes and decodes again to the same records (for spans: to the same
// Validate verdict). Run one with e.g.
//
//	go test ./schemas -run '^$' -fuzz '^FuzzDecodeOTLPProto$' -fuzztime 60s
//
// Seeds: a few generated messages below, the malformed corpus, and the
// committed corpus in testdata/fuzz/<FuzzName>/.

// fuzzLimits are small, so that fuzzing reaches the limit paths.
var fuzzLimits = Limits{MaxMessageBytes: 1 << 20, MaxSpansPerMessage: 64, MaxAttributesPerSpan: 32, MaxStringBytes: 200}

// generous limits for re-decoding what the encoder wrote from decoded spans
// (its span names join two strings).
var generousLimits = Limits{MaxMessageBytes: 1 << 30, MaxSpansPerMessage: 1 << 20, MaxAttributesPerSpan: 1 << 10, MaxStringBytes: 1 << 20}

func checkErrKind(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error wraps no kind: %v", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error carries no FieldError: %v", err)
	}
}

// fuzzSpansAgree compares re-decoded spans with the originals: every field
// exactly, except that TTFT (and TPOT derived from it) may move by rounding
// through seconds for values no encoder would choose; the Validate verdict
// must agree whenever TTFT came back exactly.
func fuzzSpansAgree(t *testing.T, got, want []Span) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("re-decoded %d spans, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		exact := math.Float64bits(g.TTFTMs) == math.Float64bits(w.TTFTMs)
		if !exact && !closeFloat(g.TTFTMs, w.TTFTMs) {
			t.Fatalf("span %d: TTFT %v, want %v", i, g.TTFTMs, w.TTFTMs)
		}
		if !exact {
			if !closeFloat(g.TPOTMs, w.TPOTMs) {
				t.Fatalf("span %d: TPOT %v, want %v", i, g.TPOTMs, w.TPOTMs)
			}
			g.TTFTMs, w.TTFTMs, g.TPOTMs, w.TPOTMs = 0, 0, 0, 0
		}
		if d := spanDiff(g, w); d != "" {
			t.Fatalf("span %d re-decoded differently: %s", i, d)
		}
		if exact {
			ge, we := got[i].Validate(), want[i].Validate()
			if (ge == nil) != (we == nil) || ge != nil && ge.Error() != we.Error() {
				t.Fatalf("span %d: Validate %v after re-decoding, %v before", i, ge, we)
			}
		}
	}
}

func closeFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	d := math.Abs(a - b)
	return d <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) || d < 1e-300
}

// addSeeds adds generated messages and the malformed corpus files with ext.
func addSeeds(f *testing.F, ext string, gen func(*rand.Rand) []byte) {
	for seed := range uint64(4) {
		f.Add(gen(rand.New(rand.NewPCG(seed, 11))))
	}
	files, _ := filepath.Glob(filepath.Join(malformedDir, "*"+ext))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
}

func FuzzDecodeOTLPProto(f *testing.F) {
	names := DefaultAttributeNames()
	addSeeds(f, ".otlp_proto", func(rng *rand.Rand) []byte {
		if rng.IntN(2) == 0 {
			return EncodeOTLPProto(nil, randSpans(rng, 1+rng.IntN(4)), names)
		}
		var m ptrace.ProtoMarshaler
		b, _ := m.MarshalTraces(genPdataTraces(rng, names, pdataCorpusOptions{badTypes: 0.1}))
		return b
	})
	f.Fuzz(func(t *testing.T, msg []byte) {
		spans, stats, err := DecodeOTLPProto(msg, names, fuzzLimits, nil)
		checkErrKind(t, err)
		if err != nil {
			return
		}
		if stats.SpansSeen != len(spans)+stats.SkippedNoModel {
			t.Fatalf("stats %+v for %d spans", stats, len(spans))
		}
		again, _, err := DecodeOTLPProto(EncodeOTLPProto(nil, spans, names), names, generousLimits, nil)
		if err != nil {
			t.Fatalf("re-decoding the re-encoded spans: %v", err)
		}
		fuzzSpansAgree(t, again, byServiceOrder(spans))
	})
}

func FuzzDecodeOTLPJSON(f *testing.F) {
	names := DefaultAttributeNames()
	addSeeds(f, ".otlp_json", func(rng *rand.Rand) []byte {
		if rng.IntN(2) == 0 {
			return EncodeOTLPJSON(nil, randSpans(rng, 1+rng.IntN(4)), names)
		}
		var m ptrace.JSONMarshaler
		b, _ := m.MarshalTraces(genPdataTraces(rng, names, pdataCorpusOptions{badTypes: 0.1}))
		return b
	})
	f.Fuzz(func(t *testing.T, msg []byte) {
		spans, stats, err := DecodeOTLPJSON(msg, names, fuzzLimits, nil)
		checkErrKind(t, err)
		if err != nil {
			return
		}
		if stats.SpansSeen != len(spans)+stats.SkippedNoModel {
			t.Fatalf("stats %+v for %d spans", stats, len(spans))
		}
		again, _, err := DecodeOTLPJSON(EncodeOTLPJSON(nil, spans, names), names, generousLimits, nil)
		if err != nil {
			t.Fatalf("re-decoding the re-encoded spans: %v", err)
		}
		fuzzSpansAgree(t, again, byServiceOrder(spans))
	})
}

func FuzzDecodeCorrection(f *testing.F) {
	addSeeds(f, ".correction", func(rng *rand.Rand) []byte {
		b, err := EncodeCorrection(randCorrection(rng))
		if err != nil {
			panic(err)
		}
		return b
	})
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := DecodeCorrection(msg)
		checkErrKind(t, err)
		if err != nil {
			return
		}
		b, err := EncodeCorrection(c)
		if err != nil {
			t.Fatalf("a decoded correction does not encode: %v\n%+v", err, c)
		}
		again, err := DecodeCorrection(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("re-decoded %+v, want %+v", again, c)
		}
	})
}

// TestWriteFuzzSeeds writes the generated seeds of every fuzz target into
// testdata/fuzz/<FuzzName>/ under -update, so that the committed corpus
// holds them as files next to what fuzzing found.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*update {
		t.Skip("writes seed files only with -update")
	}
	names := DefaultAttributeNames()
	seeds := map[string]func(*rand.Rand) []byte{
		"FuzzDecodeOTLPProto": func(rng *rand.Rand) []byte { return EncodeOTLPProto(nil, randSpans(rng, 2), names) },
		"FuzzDecodeOTLPJSON":  func(rng *rand.Rand) []byte { return EncodeOTLPJSON(nil, randSpans(rng, 2), names) },
		"FuzzDecodeCorrection": func(rng *rand.Rand) []byte {
			b, _ := EncodeCorrection(randCorrection(rng))
			return b
		},
		"FuzzDecodeKeyedBatch": func(rng *rand.Rand) []byte {
			return AppendKeyedBatch(nil, oddSpans(rng, 2), oddCorrections(rng, 2))
		},
	}
	for name, gen := range seeds {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			b := gen(rand.New(rand.NewPCG(uint64(i), 99)))
			file := filepath.Join(dir, "seed-generated-"+strconv.Itoa(i))
			if err := os.WriteFile(file, []byte("go test fuzz v1\n[]byte("+strconv.Quote(string(b))+")\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
