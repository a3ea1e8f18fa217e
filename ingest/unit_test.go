package ingest

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// trackerPartition is a partition with a tracker and no client: bounds high
// enough that nothing is paused.
func trackerPartition() *partition {
	c := &Consumer{cfg: DefaultConfig(), stats: newCounters(nil)}
	return newPartition(c, "t", 0, nil)
}

func addBatch(p *partition, next int64, dlq int) *batchState {
	st := &batchState{p: p, next: kgo.EpochOffset{Epoch: 1, Offset: next}, records: 1, waits: 1 + dlq}
	p.tmu.Lock()
	p.inflight = append(p.inflight, st)
	p.dlqPending += dlq
	p.unackedRecords++
	p.tmu.Unlock()
	return st
}

func ack(st *batchState) { b := &Batch{}; b.SetAcker(st); b.Ack() }

func TestTrackerCommitsContiguousPrefix(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dlq   []int // DLQ writes per batch
		steps []string
		want  []int64 // committable offset after each step (-1: none)
	}{
		{"in order", []int{0, 0, 0}, []string{"a0", "a1", "a2"}, []int64{10, 20, 30}},
		{"reverse", []int{0, 0, 0}, []string{"a2", "a1", "a0"}, []int64{-1, -1, 30}},
		{"middle first", []int{0, 0, 0}, []string{"a1", "a0", "a2"}, []int64{-1, 20, 30}},
		{"ack twice counts once", []int{0, 0}, []string{"a1", "a1", "a0"}, []int64{-1, -1, 20}},
		{"DLQ write holds the batch", []int{1, 0}, []string{"a0", "a1", "d0"}, []int64{-1, -1, 20}},
		{"DLQ before ack", []int{2, 0}, []string{"d0", "a1", "d0", "a0"}, []int64{-1, -1, -1, 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := trackerPartition()
			var sts []*batchState
			for i, d := range tc.dlq {
				sts = append(sts, addBatch(p, int64(10*(i+1)), d))
			}
			for i, step := range tc.steps {
				st := sts[step[1]-'0']
				if step[0] == 'a' {
					ack(st)
				} else {
					p.dlqDone(st)
				}
				off, ok := p.committable()
				got := int64(-1)
				if ok {
					got = off.Offset
				}
				if got != tc.want[i] {
					t.Fatalf("after %v: committable %d, want %d", tc.steps[:i+1], got, tc.want[i])
				}
			}
			if p.unackedRecords != 0 || len(p.inflight) != 0 || p.dlqPending != 0 {
				t.Fatalf("after all: unacked %d, inflight %d, dlq pending %d; want 0", p.unackedRecords, len(p.inflight), p.dlqPending)
			}
			p.markCommitted(int64(10 * len(tc.dlq)))
			if _, ok := p.committable(); ok {
				t.Fatal("committable again after markCommitted")
			}
		})
	}
}

func TestTrackerIgnoresAcksAfterClose(t *testing.T) {
	p := trackerPartition()
	st := addBatch(p, 5, 0)
	p.tmu.Lock()
	p.gone = true
	p.tmu.Unlock()
	ack(st)
	if _, ok := p.committable(); ok {
		t.Fatal("an ack after Close moved the committable offset")
	}
}

func TestNewValidates(t *testing.T) {
	h := Handlers(func(string, int32) PartitionHandler { return nil })
	ok := []Opt{Brokers("127.0.0.1:1"), Group("g"), h}
	if _, err := New(ok...); err != nil {
		t.Fatalf("New with the required options: %v", err)
	}
	for _, tc := range []struct {
		name   string
		opts   []Opt
		option string
	}{
		{"no brokers", []Opt{Group("g"), h}, "Brokers"},
		{"no group", []Opt{Brokers("b:1"), h}, "Group"},
		{"no handlers", []Opt{Brokers("b:1"), Group("g")}, "Handlers"},
		{"no topics", append(ok, SpanTopics(), CorrectionTopics()), "no topic"},
		{"DLQ consumed", append(ok, DLQTopic(DefaultSpanTopic)), "DLQTopic"},
		{"topic twice", append(ok, CorrectionTopics(DefaultSpanTopic)), "CorrectionTopics"},
		{"bad limits", append(ok, Limits(schemas.Limits{})), "Limits"},
		{"bad names", append(ok, Attributes(schemas.AttributeNames{})), "Attributes"},
		{"bad encoding", append(ok, SpanEncoding(Encoding(9))), "SpanEncoding"},
		{"zero unacked", append(ok, MaxUnackedRecords(0)), "MaxUnackedRecords"},
		{"zero unacked bytes", append(ok, MaxUnackedBytes(0)), "MaxUnackedBytes"},
		{"zero interval", append(ok, CommitInterval(0)), "CommitInterval"},
		{"zero close timeout", append(ok, CloseTimeout(0)), "CloseTimeout"},
		{"nil decoder", append(ok, TopicDecoder("x", nil)), "TopicDecoder"},
		{"nil logger", append(ok, Logger(nil)), "Logger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts...)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.option) {
				t.Fatalf("New = %v, want an ErrConfig naming %s", err, tc.option)
			}
		})
	}
}

func TestTopicsAndDecoders(t *testing.T) {
	c, err := New(Brokers("b:1"), Group("g"), Handlers(func(string, int32) PartitionHandler { return nil }),
		TopicDecoder("z.keyed", testDecoder), TopicDecoder("a.keyed", testDecoder), TopicDecoder(DefaultCorrectionTopic, testDecoder))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{DefaultSpanTopic, DefaultCorrectionTopic, "a.keyed", "z.keyed"}
	if got := c.Topics(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Topics = %v, want %v", got, want)
	}
	if _, ok := c.decoders[DefaultSpanTopic].(*SpanDecoder); !ok {
		t.Errorf("span topic decoder is %T, want *SpanDecoder", c.decoders[DefaultSpanTopic])
	}
	if _, ok := c.decoders[DefaultCorrectionTopic].(DecoderFunc); !ok {
		t.Errorf("overridden correction topic decoder is %T, want the override", c.decoders[DefaultCorrectionTopic])
	}
}

func TestSniff(t *testing.T) {
	for in, want := range map[string]Encoding{
		"":              EncodingProto,
		"\x0a\x02\x0a":  EncodingProto,
		"{}":            EncodingJSON,
		" \r\n\t{\"a\"": EncodingJSON,
		"   ":           EncodingProto,
		"[1]":           EncodingProto,
	} {
		if got := sniff([]byte(in)); got != want {
			t.Errorf("sniff(%q) = %v, want %v", in, got, want)
		}
	}
	for _, s := range []string{"auto", "otlp_proto", "otlp_json"} {
		e, err := ParseEncoding(s)
		if err != nil || e.String() != s {
			t.Errorf("ParseEncoding(%q) = %v, %v", s, e, err)
		}
	}
	if _, err := ParseEncoding("avro"); !errors.Is(err, ErrConfig) {
		t.Errorf("ParseEncoding(avro) = %v, want ErrConfig", err)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want ErrorKind
	}{
		{fieldErr(schemas.ErrMalformed, "x", "y"), KindMalformed},
		{fieldErr(schemas.ErrInvalid, "x", "y"), KindInvalid},
		{fieldErr(schemas.ErrTooLarge, "x", "y"), KindTooLarge},
		{errors.Join(fieldErr(schemas.ErrInvalid, "a", "b"), fieldErr(schemas.ErrMalformed, "c", "d")), KindMalformed},
		{errors.New("anything else"), KindMalformed},
		{&PanicError{Value: "boom"}, KindMalformed},
		{&tooLargeValue{got: 10, limit: 5}, KindTooLarge},
		{&PartialError{Total: 2, Invalid: []InvalidSpan{{Index: 0, Err: fieldErr(schemas.ErrInvalid, "a", "b")}}}, KindInvalid},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
	if f := errorField(&tooLargeValue{got: 10, limit: 5}); f != "value" {
		t.Errorf("field of an oversized value = %q, want value", f)
	}
}

func TestDecodeSafeRecoversPanics(t *testing.T) {
	var out Record
	_, err := decodeSafe(testDecoder, &kgo.Record{Value: []byte("panic:")}, nil, &out, 100)
	var pe *PanicError
	if !errors.As(err, &pe) || classify(err) != KindMalformed || len(pe.Stack) == 0 {
		t.Fatalf("decodeSafe of a panicking decoder = %v, want a malformed *PanicError with a stack", err)
	}
	if _, err := decodeSafe(testDecoder, &kgo.Record{Value: []byte("ok:" + strings.Repeat("x", 100))}, nil, &out, 100); classify(err) != KindTooLarge {
		t.Fatalf("decodeSafe of an oversized value = %v, want too_large", err)
	}
}

func TestClip(t *testing.T) {
	s := clip(strings.Repeat("é", 10), 5) // 2 bytes each: cut inside a rune
	if !utf8.ValidString(s) || len(s) > 5 {
		t.Fatalf("clip = %q (%d bytes), want valid UTF-8 of at most 5 bytes", s, len(s))
	}
	if s := clip("a\xffb", 10); !utf8.ValidString(s) {
		t.Fatalf("clip kept invalid UTF-8: %q", s)
	}
}

// A Config built by hand goes through the same checks as the options, and
// New(opts...) is DefaultConfig with the options applied.
func TestNewFromConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Brokers, cfg.Group = []string{"127.0.0.1:1"}, "g"
	cfg.Handlers = func(string, int32) PartitionHandler { return nil }
	cfg.Decoders = nil // filled in
	if _, err := NewFromConfig(cfg); err != nil {
		t.Fatalf("NewFromConfig with the required fields: %v", err)
	}
	cfg.MaxUnackedRecords, cfg.DLQTopic = 0, DefaultSpanTopic
	err := cfg.Validate()
	for _, want := range []string{"MaxUnackedRecords", "DLQTopic"} {
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want an ErrConfig naming %s", err, want)
		}
	}
	var viaOpts Config = DefaultConfig()
	for _, o := range []Opt{Brokers("b:1"), Group("g"), MaxUnackedBytes(5)} {
		o.apply(&viaOpts)
	}
	if viaOpts.MaxUnackedBytes != 5 || viaOpts.Group != "g" || viaOpts.Brokers[0] != "b:1" {
		t.Errorf("options did not set their fields: %+v", viaOpts)
	}
}
