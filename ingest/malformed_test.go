package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// badCase is one message that must end in the DLQ (whole, or partial: its
// valid spans delivered too).
type badCase struct {
	name  string
	topic string // default DefaultSpanTopic
	value []byte
	kind  ErrorKind
	// field, when set, is the expected fusebox.error.field.
	field *string
	// partial: the record is delivered with keep spans and dead-lettered
	// with fusebox.dlq.partial=true.
	partial bool
	keep    int
	// skipped: a valid message without LLM spans, delivered with none and
	// not dead-lettered.
	skipped bool
}

// oneSpan returns a message with n LLM spans built by the callback.
func oneSpan(n int, edit func(i int, sp ptrace.Span)) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	for i := 0; i < n; i++ {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID([16]byte{0xEE, byte(i), 1}))
		sp.SetSpanID(pcommon.SpanID([8]byte{0xEE, byte(i), 1}))
		sp.SetStartTimestamp(pcommon.Timestamp(baseNano))
		sp.SetEndTimestamp(pcommon.Timestamp(baseNano + 5e8))
		sp.Attributes().PutStr("gen_ai.request.model", "gpt-x")
		if edit != nil {
			edit(i, sp)
		}
	}
	return td
}

// spanCases are the own malformed corpus for span topics, for the limits
// malformedLimits.
func spanCases(t testing.TB) []badCase {
	valid := otlpProto(t, buildTraces(0, 0, 4))
	tooMany := oneSpan(30, nil)
	longModel := oneSpan(1, func(_ int, sp ptrace.Span) { sp.Attributes().PutStr("gen_ai.request.model", strings.Repeat("m", 2000)) })
	badUTF8 := oneSpan(1, func(_ int, sp ptrace.Span) { sp.Attributes().PutStr("gen_ai.request.model", "gpt-\xff\xfe") })
	partial := oneSpan(3, func(i int, sp ptrace.Span) {
		if i == 1 {
			sp.SetEndTimestamp(pcommon.Timestamp(baseNano - 1)) // end before start
		}
	})
	allBad := oneSpan(1, func(_ int, sp ptrace.Span) { sp.SetStartTimestamp(0) })
	return []badCase{
		{name: "truncated protobuf", value: valid[:len(valid)/2], kind: KindMalformed},
		{name: "wrong wire type", value: []byte{0x08, 0x01}, kind: KindMalformed}, // field 1 (resource_spans) as a varint
		{name: "length past the end", value: []byte{0x0A, 0x7F, 0x0A, 0x00}, kind: KindMalformed},
		{name: "invalid UTF-8 in a kept string", value: otlpProto(t, badUTF8), kind: KindMalformed},
		{name: "broken JSON", value: []byte(`{"resourceSpans":[{"resource":`), kind: KindMalformed},
		{name: "JSON with invalid UTF-8", value: []byte("{\"resourceSpans\":[],\"x\":\"\xff\"}"), kind: KindMalformed},
		{name: "too many spans", value: otlpProto(t, tooMany), kind: KindTooLarge},
		{name: "string too long", value: otlpProto(t, longModel), kind: KindTooLarge},
		{name: "message too large", value: append([]byte{0x0A}, bytes.Repeat([]byte{0x01}, 70_000)...), kind: KindTooLarge},
		{name: "every span invalid", value: otlpProto(t, allBad), kind: KindInvalid},
		{name: "one span of three invalid", value: otlpJSON(t, partial), kind: KindInvalid, partial: true, keep: 2},
	}
}

func malformedLimits() schemas.Limits {
	l := schemas.DefaultLimits()
	l.MaxSpansPerMessage = 20
	l.MaxStringBytes = 1024
	l.MaxMessageBytes = 64 << 10
	return l
}

// goodFor is valid message i for topic: a correction on correction topics,
// OTLP/JSON on topics named for JSON, else OTLP/protobuf.
func goodFor(t testing.TB, topic string, i int) []byte {
	switch {
	case strings.Contains(topic, "correction"):
		return validCorrection(i)
	case strings.Contains(topic, "json"):
		return otlpJSON(t, buildTraces(0, i%200, 4))
	}
	return otlpProto(t, buildTraces(0, i%200, 4))
}

// runCorpus interleaves cases with valid messages (published with
// kafka-go, one partition per topic: good, bad, good, bad...) and checks
// that every bad message lands in the DLQ unchanged with its kind (and
// field) and source in headers, every valid one around it is delivered,
// and the group's offsets end committed past all of them.
func runCorpus(t *testing.T, group string, cases []badCase, opts ...Opt) {
	k := testharness.StartKafka(t)
	dlq := "dlq." + group
	k.CreateTopic(t, dlq, 1, nil)
	byTopic := map[string][]kafka.Message{}
	for i := range cases {
		if cases[i].topic == "" {
			cases[i].topic = DefaultSpanTopic
		}
		c := cases[i]
		if byTopic[c.topic] == nil {
			k.CreateTopic(t, c.topic, 1, nil)
		}
		byTopic[c.topic] = append(byTopic[c.topic],
			msg(0, fmt.Sprintf("good-%d", i), goodFor(t, c.topic, i)),
			msg(0, fmt.Sprintf("bad-%d", i), c.value, kafka.Header{Key: "case", Value: []byte(c.name)}))
	}
	for topic, msgs := range byTopic {
		newPublisher(t, k, topic).publish(t, msgs...)
	}

	s := &sink{}
	r := start(t, k, group, append([]Opt{DLQTopic(dlq), Handlers(s.factory)}, opts...)...)
	testharness.Eventually(t, 60*time.Second, "offsets committed past every message", func() bool {
		for topic := range byTopic {
			if committed(t, k, group, topic)[0] != int64(len(byTopic[topic])) {
				return false
			}
		}
		return true
	})

	// Valid, skipped and partial messages are delivered; nothing else is.
	delivered := map[string]Record{}
	for _, rec := range s.snapshot() {
		delivered[rec.Topic+"/"+string(rec.Key)] = rec
	}
	wantDead := 0
	for i, c := range cases {
		if _, ok := delivered[fmt.Sprintf("%s/0/good-%d", c.topic, i)]; !ok {
			t.Errorf("valid message next to %q not delivered", c.name)
		}
		rec, ok := delivered[fmt.Sprintf("%s/0/bad-%d", c.topic, i)]
		switch {
		case (c.partial || c.skipped) && !ok:
			t.Errorf("%s: not delivered", c.name)
		case c.partial && len(rec.Spans) != c.keep:
			t.Errorf("%s: delivered %d spans, want the %d valid ones", c.name, len(rec.Spans), c.keep)
		case c.skipped && (len(rec.Spans) != 0 || rec.Stats.SkippedNoModel == 0):
			t.Errorf("%s: delivered %d spans, %d skipped; want none and some skipped", c.name, len(rec.Spans), rec.Stats.SkippedNoModel)
		case !c.partial && !c.skipped && ok:
			t.Errorf("%s: bad message delivered", c.name)
		}
		if !c.skipped {
			wantDead++
		}
	}

	dead := k.ReadAll(t, dlq, wantDead, 20*time.Second)
	byName := map[string]int{}
	for _, d := range dead {
		name := header(d, "case")
		byName[name]++
		var c *badCase
		for i := range cases {
			if cases[i].name == name {
				c = &cases[i]
			}
		}
		if c == nil || c.skipped {
			t.Errorf("unexpected DLQ record (case %q, key %q, error %q)", name, d.Key, header(d, HeaderError))
			continue
		}
		if !bytes.Equal(d.Value, c.value) {
			t.Errorf("%s: DLQ value changed (%d bytes, want %d)", name, len(d.Value), len(c.value))
		}
		if got := ErrorKind(header(d, HeaderErrorKind)); got != c.kind {
			t.Errorf("%s: kind %s, want %s (error %q)", name, got, c.kind, header(d, HeaderError))
		}
		if c.field != nil && header(d, HeaderErrorField) != *c.field {
			t.Errorf("%s: field %q, want %q", name, header(d, HeaderErrorField), *c.field)
		}
		if header(d, HeaderError) == "" || header(d, HeaderSourceTopic) != c.topic || header(d, HeaderSourcePartition) != "0" {
			t.Errorf("%s: headers error=%q topic=%q partition=%q", name, header(d, HeaderError), header(d, HeaderSourceTopic), header(d, HeaderSourcePartition))
		}
		if off, err := strconv.Atoi(header(d, HeaderSourceOffset)); err != nil || off%2 != 1 {
			t.Errorf("%s: source offset %q, want the odd offset of a bad message", name, header(d, HeaderSourceOffset))
		}
		if (header(d, HeaderPartial) == "true") != c.partial {
			t.Errorf("%s: partial header %q, want partial=%v", name, header(d, HeaderPartial), c.partial)
		}
		t.Logf("%-40s kind=%-9s field=%-36q %s", name, header(d, HeaderErrorKind), header(d, HeaderErrorField), header(d, HeaderError))
	}
	for _, c := range cases {
		if want := map[bool]int{true: 0, false: 1}[c.skipped]; byName[c.name] != want {
			t.Errorf("%s: %d DLQ records, want %d", c.name, byName[c.name], want)
		}
	}
	if err := r.shutdown(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestMalformedCorpus runs the own corpus (span cases under tight limits,
// correction cases) through the default span and correction topics, span
// encoding sniffed.
func TestMalformedCorpus(t *testing.T) {
	runCorpus(t, "g-own", append(spanCases(t), correctionCases(t)...), Limits(malformedLimits()))
}

// TestSharedMalformedCorpus runs the corpus of package schemas
// (schemas/testdata/malformed, described by MANIFEST.tsv) under the default
// limits: each file's kind and field must be the manifest's. Protobuf and
// JSON files go to topics decoded with that encoding, corrections to a
// correction topic.
func TestSharedMalformedCorpus(t *testing.T) {
	const dir = "../schemas/testdata/malformed"
	manifest, err := os.ReadFile(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatalf("shared malformed corpus: %v (package schemas generates it with go test ./schemas -run TestMalformedCorpus -update)", err)
	}
	names, lim := schemas.DefaultAttributeNames(), schemas.DefaultLimits()
	topicOf := map[string]string{".otlp_proto": "spans.proto", ".otlp_json": "spans.json", ".correction": "corrections.shared"}
	decOf := map[string]*SpanDecoder{
		".otlp_proto": {Encoding: EncodingProto, Names: names, Limits: lim},
		".otlp_json":  {Encoding: EncodingJSON, Names: names, Limits: lim},
	}
	var cases []badCase
	for _, line := range strings.Split(string(manifest), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) < 3 {
			t.Fatalf("MANIFEST.tsv: line %q: want file, kind, field, description", line)
		}
		file, kind, field := cols[0], cols[1], cols[2]
		ext := filepath.Ext(file)
		topic, ok := topicOf[ext]
		if !ok {
			t.Fatalf("MANIFEST.tsv: %s: unknown extension %q", file, ext)
		}
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		c := badCase{name: file, topic: topic, value: data, kind: ErrorKind(kind), field: &field}
		switch kind {
		case "skipped":
			c.skipped, c.kind, c.field = true, "", nil
		case string(KindMalformed), string(KindInvalid), string(KindTooLarge):
		default:
			t.Fatalf("MANIFEST.tsv: %s: unknown kind %q", file, kind)
		}
		if d := decOf[ext]; d != nil && kind == string(KindInvalid) {
			// A message with valid spans besides the invalid one is
			// delivered in part.
			var out Record
			var pe *PartialError
			if errors.As(d.Decode(0, nil, data, &out), &pe) {
				c.partial, c.keep = true, len(out.Spans)
			}
		}
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		t.Fatal("MANIFEST.tsv lists no case")
	}
	t.Run("declared encoding", func(t *testing.T) {
		runCorpus(t, "g-shared", cases, SpanTopics(), CorrectionTopics(topicOf[".correction"]),
			TopicDecoder(topicOf[".otlp_proto"], decOf[".otlp_proto"]), TopicDecoder(topicOf[".otlp_json"], decOf[".otlp_json"]))
	})
	// The deployed default: both encodings on one topic, sniffed. The kind
	// must not depend on it (the field may: a text file sniffed as JSON
	// fails elsewhere than read as protobuf).
	sniffed := make([]badCase, len(cases))
	for i, c := range cases {
		if c.topic != topicOf[".correction"] {
			c.topic, c.field = DefaultSpanTopic, nil
		}
		sniffed[i] = c
	}
	t.Run("sniffed", func(t *testing.T) {
		runCorpus(t, "g-sniffed", sniffed, CorrectionTopics(topicOf[".correction"]))
	})
}
