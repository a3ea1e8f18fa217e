package schemas

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestOTLPRoundTrip(t *testing.T) {
	custom := AttributeNames{Tenant: "org.id", Variant: "rollout.arm", Confidence: "score.conf",
		Alignment: "score.align", Session: "conversation.id", Route: "url.path"}
	for _, names := range []AttributeNames{DefaultAttributeNames(), custom, {}} {
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 1))
			spans := randSpans(rng, 1+rng.IntN(60))
			want := byServiceOrder(spans)

			pb := EncodeOTLPProto(nil, spans, names)
			got, stats, err := DecodeOTLPProto(pb, names, DefaultLimits(), nil)
			if err != nil {
				t.Fatalf("seed %d: proto decode: %v", seed, err)
			}
			if stats.SpansSeen != len(spans) || stats.SkippedNoModel != 0 {
				t.Fatalf("seed %d: proto stats %+v, want %d seen", seed, stats, len(spans))
			}
			assertSpansEqual(t, got, want)

			js := EncodeOTLPJSON(nil, spans, names)
			got, stats, err = DecodeOTLPJSON(js, names, DefaultLimits(), nil)
			if err != nil {
				t.Fatalf("seed %d: json decode: %v\n%s", seed, err, js)
			}
			if stats.SpansSeen != len(spans) {
				t.Fatalf("seed %d: json stats %+v", seed, stats)
			}
			assertSpansEqual(t, got, want)
		}
	}
}

func TestOTLPDecodeAppendsToDst(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	spans := randSpans(rng, 5)
	msg := EncodeOTLPProto(nil, spans, AttributeNames{})
	prefix := randSpans(rng, 2)
	dst := append(make([]Span, 0, 16), prefix...)
	got, _, err := DecodeOTLPProto(msg, AttributeNames{}, Limits{}, dst)
	if err != nil {
		t.Fatal(err)
	}
	assertSpansEqual(t, got[:2], prefix)
	assertSpansEqual(t, got[2:], byServiceOrder(spans))

	// On error, dst comes back unchanged.
	bad := append([]byte{}, msg[:len(msg)-3]...)
	got, _, err = DecodeOTLPProto(bad, AttributeNames{}, Limits{}, dst)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated message: err = %v, want ErrMalformed", err)
	}
	if len(got) != 2 {
		t.Fatalf("on error got %d spans back, want the 2 of dst", len(got))
	}
}

// TestOTLPDeprecatedScopeSpans checks that spans in the pre-0.15
// instrumentation_library_spans field are read when a resource has no
// scope_spans, and ignored when it has.
func TestOTLPDeprecatedScopeSpans(t *testing.T) {
	span := pbSpan(withModel)
	scope := pbBytes(2, span) // ScopeSpans{spans}
	resource := pbBytes(1, pbBytes(1, slices.Concat(pbStr(1, "service.name"), pbBytes(2, pbStrVal("old-sdk")))))
	old := pbBytes(1, slices.Concat(resource, pbBytes(deprecatedScopeSpans, scope)))
	both := pbBytes(1, slices.Concat(resource, pbBytes(2, scope), pbBytes(deprecatedScopeSpans, scope)))
	for name, tc := range map[string]struct {
		msg  []byte
		want int
	}{"only deprecated": {old, 1}, "both": {both, 1}} {
		spans, _, err := DecodeOTLPProto(tc.msg, AttributeNames{}, Limits{}, nil)
		if err != nil || len(spans) != tc.want || spans[0].Key.Service != "old-sdk" {
			t.Errorf("proto %s: %d spans, err %v", name, len(spans), err)
		}
	}
	js := `{"resourceSpans":[{"instrumentationLibrarySpans":[{"instrumentationLibrary":{"name":"x"},"spans":[{` + jsonGoodSpan +
		`,"attributes":[` + jsonModelAttr + `]}]}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"old-sdk"}}]}}]}`
	spans, _, err := DecodeOTLPJSON([]byte(js), AttributeNames{}, Limits{}, nil)
	if err != nil || len(spans) != 1 || spans[0].Key.Service != "old-sdk" {
		t.Errorf("json: %d spans, err %v", len(spans), err)
	}
}
