package schemas

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// update: rewrite the golden files and the generated test data (the
// malformed corpus, the fuzz seeds): go test ./schemas -update.
var update = flag.Bool("update", false, "rewrite golden files and generated test data")

// malformedDir holds the corpus of bad records that the ingest tests publish
// to Kafka: every file must end up in the dead-letter topic (or, for kind
// "skipped", be counted and dropped by design) with the reason the manifest
// names.
const malformedDir = "testdata/malformed"

// malformedCase is one record of the corpus.
type malformedCase struct {
	file string // <case>.<otlp_proto|otlp_json|correction>
	// kind is what the pipeline must do with it under DefaultLimits:
	// malformed, invalid, too_large (dead-letter it), or skipped (a valid
	// message whose spans carry no model: counted, nothing to dead-letter).
	kind string
	// field is the Field of the first FieldError of the rejection (for
	// invalid spans: of Span.Validate on the first span that fails).
	field string
	what  string
	data  []byte
}

// Builders of OTLP protobuf pieces.

func pbBytes(num protowire.Number, v []byte) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func pbStr(num protowire.Number, s string) []byte { return pbBytes(num, []byte(s)) }

func pbFixed64(num protowire.Number, v uint64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
}

func pbVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func pbKV(key string, value []byte) []byte {
	return pbBytes(9, slices.Concat(pbStr(1, key), pbBytes(2, value)))
}

func pbStrVal(s string) []byte { return pbStr(1, s) }
func pbIntVal(i int64) []byte  { return pbVarint(3, uint64(i)) }

// pbTraces wraps spans in a TracesData with one resource (service "svc").
func pbTraces(spans ...[]byte) []byte {
	resource := pbBytes(1, pbBytes(1, slices.Concat(pbStr(1, "service.name"), pbBytes(2, pbStrVal("svc")))))
	ss := pbBytes(1, pbStr(1, "x")) // the scope, named as in jsonTraces
	for _, s := range spans {
		ss = append(ss, pbBytes(2, s)...)
	}
	return pbBytes(1, slices.Concat(resource, pbBytes(2, ss)))
}

// pbSpan is a valid LLM span with extra fields appended.
func pbSpan(extra ...[]byte) []byte {
	tid := bytes.Repeat([]byte{0xab}, 16)
	sid := bytes.Repeat([]byte{0xcd}, 8)
	base := slices.Concat(pbBytes(1, tid), pbBytes(2, sid), pbStr(5, "chat gpt-4o"),
		pbFixed64(7, 1_750_000_000_000_000_000), pbFixed64(8, 1_750_000_001_500_000_000),
		pbKV("gen_ai.operation.name", pbStrVal("chat")))
	return slices.Concat(append([][]byte{base}, extra...)...)
}

var withModel = pbKV("gen_ai.request.model", pbStrVal("gpt-4o"))

// jsonSpan renders one OTLP/JSON message with one span whose fields are
// given as JSON members.
func jsonTraces(spanMembers string) []byte {
	return []byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},` +
		`"scopeSpans":[{"scope":{"name":"x"},"spans":[{` + spanMembers + `}]}]}]}`)
}

const jsonGoodSpan = `"traceId":"abababababababababababababababab","spanId":"cdcdcdcdcdcdcdcd","name":"chat gpt-4o","kind":3,` +
	`"startTimeUnixNano":"1750000000000000000","endTimeUnixNano":"1750000001500000000"`

const jsonModelAttr = `{"key":"gen_ai.request.model","value":{"stringValue":"gpt-4o"}}`

const goodCorrection = `{"schema_version":1,"event_id":"ev-1","time":"2025-06-15T10:00:00Z","tenant":"acme",` +
	`"trace_id":"abababababababababababababababab","kind":"reject"}`

// malformedCorpus builds the corpus; its output is deterministic.
func malformedCorpus() []malformedCase {
	valid := pbTraces(pbSpan(withModel), pbSpan(withModel))
	manyAttrs := [][]byte{withModel}
	for i := range DefaultLimits().MaxAttributesPerSpan {
		manyAttrs = append(manyAttrs, pbKV(fmt.Sprintf("extra.%04d", i), pbIntVal(int64(i))))
	}
	var jsonMany []string
	for i := range DefaultLimits().MaxAttributesPerSpan + 1 {
		jsonMany = append(jsonMany, fmt.Sprintf(`{"key":"extra.%04d","value":{"intValue":"%d"}}`, i, i))
	}
	overflow := append(protowire.AppendTag(nil, 1, protowire.VarintType), bytes.Repeat([]byte{0xff}, 10)...)
	overflow = append(overflow, 0x01)
	badLen := pbTraces(pbSpan(withModel))
	badLen = append([]byte{0x0a}, protowire.AppendVarint(nil, uint64(len(badLen)+100))...) // resource_spans longer than the message
	badLen = append(badLen, pbTraces(pbSpan(withModel))[2:]...)

	return []malformedCase{
		// OTLP protobuf.
		{file: "truncated.otlp_proto", kind: "malformed", field: "resource_spans[0]",
			what: "a valid message cut short", data: valid[:len(valid)*2/3]},
		{file: "wrong_wire_type.otlp_proto", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0].start_time_unix_nano",
			what: "start_time_unix_nano sent as a varint instead of fixed64",
			data: pbTraces(slices.Concat(pbVarint(7, 12345), pbSpan(withModel)))},
		{file: "length_past_end.otlp_proto", kind: "malformed", field: "resource_spans[0]",
			what: "resource_spans claims 100 bytes more than the message has", data: badLen},
		{file: "invalid_utf8.otlp_proto", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0].attributes[gen_ai.request.model]",
			what: "the model name is not UTF-8", data: pbTraces(pbSpan(pbKV("gen_ai.request.model", pbStrVal("gpt-\xff\xfe"))))},
		{file: "trace_id_15_bytes.otlp_proto", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0].trace_id",
			what: "a trace id of 15 bytes", data: pbTraces(pbSpan(withModel, pbBytes(1, make([]byte, 15))))},
		{file: "field_number_zero.otlp_proto", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0]",
			what: "a tag with field number 0", data: pbTraces(pbSpan(withModel, []byte{0x02, 0x00}))},
		{file: "varint_overflow.otlp_proto", kind: "malformed", field: "resource_spans[0]",
			what: "an 11-byte varint", data: overflow},
		{file: "text.otlp_proto", kind: "malformed", field: "resource_spans[0]",
			what: "plain text on the protobuf topic", data: []byte("this is not protobuf\n")},
		{file: "tokens_as_bool.otlp_proto", kind: "invalid", field: "resource_spans[0].scope_spans[0].spans[0].attributes[gen_ai.usage.input_tokens]",
			what: "a token count of type bool", data: pbTraces(pbSpan(withModel, pbKV("gen_ai.usage.input_tokens", pbVarint(2, 1))))},
		{file: "too_many_attributes.otlp_proto", kind: "too_large", field: "resource_spans[0].scope_spans[0].spans[0].attributes",
			what: "a span with more attributes than max_attributes_per_span", data: pbTraces(pbSpan(manyAttrs...))},
		{file: "end_before_start.otlp_proto", kind: "invalid", field: "end_time_unix_nano",
			what: "decodes, but the span ends before it starts (fails Span.Validate)",
			data: pbTraces(pbSpan(withModel, pbFixed64(8, 1_749_999_999_000_000_000)))},
		{file: "absurd_tokens.otlp_proto", kind: "invalid", field: "gen_ai.usage.output_tokens",
			what: "decodes, but claims 10^12 output tokens (fails Span.Validate)",
			data: pbTraces(pbSpan(withModel, pbKV("gen_ai.usage.output_tokens", pbIntVal(1e12))))},
		{file: "no_model.otlp_proto", kind: "skipped", field: "",
			what: "valid, but no span carries a model: counted as skipped, nothing to dead-letter",
			data: pbTraces(pbSpan(), pbSpan(pbKV("http.route", pbStrVal("/health"))))},

		// OTLP JSON.
		{file: "broken.otlp_json", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0]",
			what: "JSON cut short", data: jsonTraces(jsonGoodSpan)[:150]},
		{file: "not_json.otlp_json", kind: "malformed", field: "message",
			what: "plain text on the JSON topic", data: []byte("hello, world\n")},
		{file: "trace_id_not_hex.otlp_json", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0].trace_id",
			what: "a trace id with non-hex characters",
			data: jsonTraces(strings.Replace(jsonGoodSpan, "abababababababababababababababab", "zzababababababababababababababab", 1) + `,"attributes":[` + jsonModelAttr + `]`)},
		{file: "trace_id_base64.otlp_json", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0].trace_id",
			what: "a trace id in base64 (the generic protobuf JSON mapping), where OTLP/JSON wants hex",
			data: jsonTraces(strings.Replace(jsonGoodSpan, "abababababababababababababababab", "q6urq6urq6urq6urq6urqw==", 1) + `,"attributes":[` + jsonModelAttr + `]`)},
		{file: "time_not_a_number.otlp_json", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0].start_time_unix_nano",
			what: "startTimeUnixNano is not an integer",
			data: jsonTraces(strings.Replace(jsonGoodSpan, `"1750000000000000000"`, `"soon"`, 1) + `,"attributes":[` + jsonModelAttr + `]`)},
		{file: "invalid_utf8.otlp_json", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0].attributes[0].value.string_value",
			what: "a string that is not UTF-8",
			data: jsonTraces(jsonGoodSpan + `,"attributes":[{"key":"gen_ai.request.model","value":{"stringValue":"gpt-` + "\xff" + `"}}]`)},
		{file: "wrong_shape.otlp_json", kind: "malformed", field: "resource_spans",
			what: "resourceSpans is an object, not an array", data: []byte(`{"resourceSpans":{"resource":{}}}`)},
		{file: "int_value_not_int.otlp_json", kind: "malformed", field: "resource_spans[0].scope_spans[0].spans[0].attributes[1].value.int_value",
			what: "intValue holding a boolean",
			data: jsonTraces(jsonGoodSpan + `,"attributes":[` + jsonModelAttr + `,{"key":"gen_ai.usage.input_tokens","value":{"intValue":true}}]`)},
		{file: "too_many_attributes.otlp_json", kind: "too_large", field: "resource_spans[0].scope_spans[0].spans[0].attributes",
			what: "a span with more attributes than max_attributes_per_span",
			data: jsonTraces(jsonGoodSpan + `,"attributes":[` + jsonModelAttr + "," + strings.Join(jsonMany, ",") + `]`)},
		{file: "end_before_start.otlp_json", kind: "invalid", field: "end_time_unix_nano",
			what: "decodes, but the span ends before it starts (fails Span.Validate)",
			data: jsonTraces(strings.Replace(jsonGoodSpan, `"1750000001500000000"`, `"1749999999000000000"`, 1) + `,"attributes":[` + jsonModelAttr + `]`)},
		{file: "no_model.otlp_json", kind: "skipped", field: "",
			what: "valid, but the span carries no model: counted as skipped, nothing to dead-letter",
			data: jsonTraces(jsonGoodSpan)},

		// Corrections.
		{file: "broken_json.correction", kind: "malformed", field: "message",
			what: "JSON cut short", data: []byte(goodCorrection[:40])},
		{file: "invalid_utf8.correction", kind: "malformed", field: "tenant",
			what: "a string that is not UTF-8", data: []byte(strings.Replace(goodCorrection, `"acme"`, "\"ac\xffme\"", 1))},
		{file: "not_an_object.correction", kind: "invalid", field: "message",
			what: "a JSON array instead of an object", data: []byte(`[` + goodCorrection + `]`)},
		{file: "missing_kind.correction", kind: "invalid", field: "kind",
			what: "the required kind is missing", data: []byte(strings.Replace(goodCorrection, `,"kind":"reject"`, ``, 1))},
		{file: "unknown_kind.correction", kind: "invalid", field: "kind",
			what: "a kind schema version 1 does not know", data: []byte(strings.Replace(goodCorrection, `"reject"`, `"shrug"`, 1))},
		{file: "bad_time.correction", kind: "invalid", field: "time",
			what: "time is not RFC 3339", data: []byte(strings.Replace(goodCorrection, `"2025-06-15T10:00:00Z"`, `"15/06/2025 10:00"`, 1))},
		{file: "extra_field.correction", kind: "invalid", field: "user_email",
			what: "a property the schema does not allow", data: []byte(strings.Replace(goodCorrection, `}`, `,"user_email":"a@b.c"}`, 1))},
		{file: "wrong_type.correction", kind: "invalid", field: "tenant",
			what: "tenant is a number", data: []byte(strings.Replace(goodCorrection, `"acme"`, `42`, 1))},
		{file: "no_join_key.correction", kind: "invalid", field: "trace_id",
			what: "neither trace_id nor session_id", data: []byte(strings.Replace(goodCorrection, `,"trace_id":"abababababababababababababababab"`, ``, 1))},
		{file: "bad_schema_version.correction", kind: "invalid", field: "schema_version",
			what: "a schema version this build does not read", data: []byte(strings.Replace(goodCorrection, `"schema_version":1`, `"schema_version":2`, 1))},
	}
}

// malformedManifest renders the manifest: one line per file, tab-separated
// file, kind, field, description.
func malformedManifest(cases []malformedCase) []byte {
	var b bytes.Buffer
	b.WriteString("# Generated by go test ./schemas -run TestMalformedCorpus -update; do not edit.\n")
	b.WriteString("# Records that fusebox must refuse. Columns (tab-separated): file, kind, field, description.\n")
	b.WriteString("# kind: malformed | invalid | too_large (the error kind under DefaultLimits: the record goes to the\n")
	b.WriteString("# dead-letter topic) or skipped (valid, no span carries a model: counted, nothing to dead-letter).\n")
	b.WriteString("# field: the Field of the first FieldError (for invalid spans, of Span.Validate); empty for skipped.\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", c.file, c.kind, c.field, c.what)
	}
	return b.Bytes()
}

// classify runs a record through the decoder its extension names, as the
// ingest does, and reports the outcome kind and the first FieldError's field.
func classify(file string, data []byte) (kind, field string) {
	var err error
	var spans []Span
	var stats DecodeStats
	switch filepath.Ext(file) {
	case ".otlp_proto":
		spans, stats, err = DecodeOTLPProto(data, DefaultAttributeNames(), DefaultLimits(), nil)
	case ".otlp_json":
		spans, stats, err = DecodeOTLPJSON(data, DefaultAttributeNames(), DefaultLimits(), nil)
	case ".correction":
		_, err = DecodeCorrection(data)
	default:
		return "unknown extension", ""
	}
	if err == nil {
		for i := range spans {
			if err = spans[i].Validate(); err != nil {
				break
			}
		}
	}
	if err == nil {
		if len(spans) == 0 && stats.SkippedNoModel > 0 {
			return "skipped", ""
		}
		return "accepted", ""
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		field = fe.Field
	}
	switch {
	case errors.Is(err, ErrTooLarge):
		return "too_large", field
	case errors.Is(err, ErrMalformed):
		return "malformed", field
	case errors.Is(err, ErrInvalid):
		return "invalid", field
	}
	return "unclassified: " + err.Error(), field
}

// TestMalformedCorpus checks that the corpus on disk is the one the
// generator builds (rewrite it with -update) and that every record is
// refused with the kind and field its manifest line names.
func TestMalformedCorpus(t *testing.T) {
	cases := malformedCorpus()
	manifest := malformedManifest(cases)
	if *update {
		if err := os.RemoveAll(malformedDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(malformedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if err := os.WriteFile(filepath.Join(malformedDir, c.file), c.data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(malformedDir, "MANIFEST.tsv"), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	onDisk, err := os.ReadFile(filepath.Join(malformedDir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatalf("%v (generate the corpus with -update)", err)
	}
	if !bytes.Equal(onDisk, manifest) {
		t.Errorf("MANIFEST.tsv differs from the generator's; rerun with -update")
	}
	entries, err := os.ReadDir(malformedDir)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{"MANIFEST.tsv": true}
	for _, c := range cases {
		listed[c.file] = true
	}
	for _, e := range entries {
		if !listed[e.Name()] {
			t.Errorf("%s is in %s but not in the manifest", e.Name(), malformedDir)
		}
	}
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join(malformedDir, c.file))
		if err != nil {
			t.Errorf("%v (generate the corpus with -update)", err)
			continue
		}
		if !bytes.Equal(data, c.data) {
			t.Errorf("%s differs from the generator's; rerun with -update", c.file)
		}
		kind, field := classify(c.file, data)
		if kind != c.kind || field != c.field {
			t.Errorf("%s: got %s on %q, manifest says %s on %q", c.file, kind, field, c.kind, c.field)
		}
	}
}
