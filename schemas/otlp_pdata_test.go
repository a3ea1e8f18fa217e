package schemas

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// corpusSize is the number of pdata-built messages each reference test checks.
const corpusSize = 400

// TestDecodeOTLPProtoMatchesPdata decodes messages built and marshalled with
// the Collector's pdata and checks every mapped field against what refDecode
// computes from pdata's own unmarshalling of the same bytes.
func TestDecodeOTLPProtoMatchesPdata(t *testing.T) {
	var marshal ptrace.ProtoMarshaler
	var unmarshal ptrace.ProtoUnmarshaler
	names := DefaultAttributeNames()
	var totals struct{ spans, llm, skipped, errs, invalid, dropped int }
	// has counts the returned spans holding each optional field, so that the
	// corpus is seen to cover every generation's attributes.
	has := map[Fields]int{}
	for seed := range uint64(corpusSize) {
		rng := rand.New(rand.NewPCG(seed, 2))
		opt := pdataCorpusOptions{}
		if seed%4 == 3 {
			opt.badTypes = 0.05
		}
		msg, err := marshal.MarshalTraces(genPdataTraces(rng, names, opt))
		if err != nil {
			t.Fatal(err)
		}
		td, err := unmarshal.UnmarshalTraces(msg)
		if err != nil {
			t.Fatalf("seed %d: pdata cannot read its own message: %v", seed, err)
		}
		want, wantStats, wantErr := refDecode(td, names)
		got, gotStats, gotErr := DecodeOTLPProto(msg, names, DefaultLimits(), nil)
		compareDecode(t, seed, got, withoutUnkeyedAttrs(gotStats), gotErr, want, wantStats, wantErr)
		totals.spans += gotStats.SpansSeen
		totals.skipped += gotStats.SkippedNoModel
		totals.llm += len(got)
		totals.dropped += gotStats.Dropped.Total()
		if gotErr != nil {
			totals.errs++
		}
		for i := range got {
			if got[i].Validate() != nil {
				totals.invalid++
			}
			for b := Fields(1); b <= HasStream; b <<= 1 {
				if got[i].Has&b != 0 {
					has[b]++
				}
			}
		}
	}
	for b := Fields(1); b <= HasStream; b <<= 1 {
		if has[b] < 100 {
			t.Errorf("corpus too narrow: only %d spans have field bit %d", has[b], b)
		}
	}
	t.Logf("%d messages: %d spans, %d LLM spans returned (%d fail Validate, %d library timings dropped), %d skipped without model, %d messages rejected",
		corpusSize, totals.spans, totals.llm, totals.invalid, totals.dropped, totals.skipped, totals.errs)
	// The corpus must exercise every outcome, or the comparison proves little.
	if totals.llm < 1000 || totals.skipped < 100 || totals.errs < 5 || totals.invalid < 5 || totals.dropped < 20 {
		t.Fatalf("corpus too narrow: %+v", totals)
	}
}

// TestDecodeOTLPJSONMatchesProto checks that the JSON decoder gives the same
// spans, stats and errors for pdata's JSON rendering of a message as the
// protobuf decoder gives for its protobuf rendering.
func TestDecodeOTLPJSONMatchesProto(t *testing.T) {
	var pm ptrace.ProtoMarshaler
	var jm ptrace.JSONMarshaler
	var ju ptrace.JSONUnmarshaler
	names := AttributeNames{Tenant: "org.id", Route: "url.path"} // the others default
	for seed := range uint64(corpusSize) {
		rng := rand.New(rand.NewPCG(seed, 3))
		opt := pdataCorpusOptions{}
		if seed%4 == 3 {
			opt.badTypes = 0.05
		}
		traces := genPdataTraces(rng, names, opt)
		pb, err := pm.MarshalTraces(traces)
		if err != nil {
			t.Fatal(err)
		}
		js, err := jm.MarshalTraces(traces)
		if err != nil {
			t.Fatal(err)
		}
		want, wantStats, wantErr := DecodeOTLPProto(pb, names, DefaultLimits(), nil)
		got, gotStats, gotErr := DecodeOTLPJSON(js, names, DefaultLimits(), nil)
		compareDecode(t, seed, got, gotStats, gotErr, want, wantStats, wantErr)

		// And pdata reads the same JSON to the same reference spans.
		td, err := ju.UnmarshalTraces(js)
		if err != nil {
			t.Fatalf("seed %d: pdata cannot read its own JSON: %v", seed, err)
		}
		ref, refStats, refErr := refDecode(td, names)
		compareDecode(t, seed, got, withoutUnkeyedAttrs(gotStats), gotErr, ref, refStats, refErr)
	}
}

func compareDecode(t *testing.T, seed uint64, got []Span, gotStats DecodeStats, gotErr error, want []Span, wantStats DecodeStats, wantErr error) {
	t.Helper()
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("seed %d: err = %v, want %v", seed, gotErr, wantErr)
	}
	if gotErr != nil {
		for _, kind := range []error{ErrInvalid, ErrMalformed, ErrTooLarge} {
			if errors.Is(gotErr, kind) != errors.Is(wantErr, kind) {
				t.Fatalf("seed %d: err = %v, want %v", seed, gotErr, wantErr)
			}
		}
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("seed %d: err = %q, want %q", seed, gotErr, wantErr)
		}
		var se *SpanErrors
		if !errors.As(gotErr, &se) {
			return
		}
		// Spans rejected one by one: the others are returned, compared below.
		if d := fmt.Sprint(se.Spans); d != fmt.Sprint(wantErr.(*SpanErrors).Spans) {
			t.Fatalf("seed %d: rejected %s, want %s", seed, d, fmt.Sprint(wantErr.(*SpanErrors).Spans))
		}
	}
	if !reflect.DeepEqual(gotStats, wantStats) {
		t.Fatalf("seed %d: stats %+v, want %+v", seed, gotStats, wantStats)
	}

	if len(got) != len(want) {
		t.Fatalf("seed %d: %d spans, want %d", seed, len(got), len(want))
	}
	for i := range got {
		if d := spanDiff(got[i], want[i]); d != "" {
			t.Fatalf("seed %d: span %d differs: %s", seed, i, d)
		}
	}
}

// withoutUnkeyedAttrs drops the attribute names of st.Unkeyed (which names
// it picks is the decoders' choice; the reference checks the counts).
func withoutUnkeyedAttrs(st DecodeStats) DecodeStats {
	u := slices.Clone(st.Unkeyed)
	for i := range u {
		u[i].Attributes = nil
	}
	st.Unkeyed = u
	return st
}
