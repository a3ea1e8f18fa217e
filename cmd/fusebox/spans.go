package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

const spansDescription = `Reads a span topic from its beginning up to its end as it was when the
command started, decodes every record as fusebox run does (OTLP TracesData,
protobuf or JSON) and prints one JSON line per LLM call it read: the
instrumentation scope, the key (tenant, service, model, variant), operation, provider, duration, TTFT,
TPOT, tokens, streaming, finish reason and error, each absent field null.
It answers "what does fusebox read from my spans?". A record that does
not decode prints a line {"topic", "partition", "offset", "error"}; a span
that decodes but fails validation carries "invalid". The last line on
stderr counts records, spans seen and spans skipped without a model (not
LLM calls to fusebox). It uses no consumer group and commits nothing.

With --config, the attribute names, limits and first span topic come from
that SLO file (its kafka section is not used: give --brokers).

Examples:
  fusebox spans --brokers 127.0.0.1:9092
  fusebox spans --brokers 127.0.0.1:9092 --config slo.yaml --topic otlp_spans`

// spanLine is one decoded span as `fusebox spans` prints it. Pointer fields
// are null when the span does not carry them.
type spanLine struct {
	Topic         string   `json:"topic"`
	Partition     int32    `json:"partition"`
	Offset        int64    `json:"offset"`
	Scope         string   `json:"scope"`
	TraceID       string   `json:"trace_id"`
	SpanID        string   `json:"span_id"`
	StartUnixNano int64    `json:"start_unix_nano"`
	EndUnixNano   int64    `json:"end_unix_nano"`
	DurationMs    float64  `json:"duration_ms"`
	TTFTMs        *float64 `json:"ttft_ms"`
	TPOTMs        *float64 `json:"tpot_ms"`
	InputTokens   *int64   `json:"input_tokens"`
	OutputTokens  *int64   `json:"output_tokens"`
	Stream        *bool    `json:"stream"`
	FinishReason  *string  `json:"finish_reason"`
	Error         bool     `json:"error"`
	ErrorType     *string  `json:"error_type"`
	Tenant        string   `json:"tenant"`
	Service       string   `json:"service"`
	Model         string   `json:"model"`
	Variant       string   `json:"variant"`
	Operation     string   `json:"operation"`
	Provider      *string  `json:"provider"`
	ResponseModel *string  `json:"response_model"`
	Invalid       *string  `json:"invalid,omitempty"`
}

func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func newSpanLine(topic string, part int32, off int64, s *schemas.Span) spanLine {
	l := spanLine{
		Topic: topic, Partition: part, Offset: off, Scope: s.Scope,
		TraceID: s.TraceID.String(), SpanID: s.SpanID.String(),
		StartUnixNano: s.StartUnixNano, EndUnixNano: s.EndUnixNano, DurationMs: s.DurationMs,
		FinishReason: optStr(s.FinishReason), Error: s.Error, ErrorType: optStr(s.ErrorType),
		Tenant: s.Key.Tenant, Service: s.Key.Service, Model: s.Key.Model, Variant: s.Key.Variant,
		Operation: s.Operation, Provider: optStr(s.Provider), ResponseModel: optStr(s.ResponseModel),
	}
	if s.Has&schemas.HasTTFT != 0 {
		l.TTFTMs = &s.TTFTMs
	}
	if s.Has&schemas.HasTPOT != 0 {
		l.TPOTMs = &s.TPOTMs
	}
	if s.Has&schemas.HasInputTokens != 0 {
		l.InputTokens = &s.InputTokens
	}
	if s.Has&schemas.HasOutputTokens != 0 {
		l.OutputTokens = &s.OutputTokens
	}
	if s.Has&schemas.HasStream != 0 {
		l.Stream = &s.Stream
	}
	if err := s.Validate(); err != nil {
		l.Invalid = optStr(err.Error())
	}
	return l
}

func cmdSpans(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var kf kafkaFlags
	var topic, encoding, cfgPath string
	var timeout time.Duration
	fs := newFlagSet("spans", "[--brokers HOST:PORT] [--topic T] [--config FILE]", spansDescription, stdout)
	kf.register(fs, "fusebox-spans")
	fs.StringVar(&topic, "topic", "", "span `topic` to read (default: the --config file's first span topic, else otlp_spans)")
	fs.StringVar(&encoding, "encoding", "auto", "record `encoding`: auto (JSON when a record starts with '{'), otlp_proto or otlp_json")
	fs.StringVar(&cfgPath, "config", "", "SLO `file` whose attribute names and limits to decode with (default: fusebox's defaults)")
	fs.DurationVar(&timeout, "timeout", 60*time.Second, "give up reading after this `duration`")
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	usageErr := func(err error) int { return usageError(fs, stderr, "%v", err) }
	switch encoding {
	case "auto", "otlp_proto", "otlp_json":
	default:
		return usageErr(fmt.Errorf("--encoding %q: want auto, otlp_proto or otlp_json", encoding))
	}
	names, lim := schemas.DefaultAttributeNames(), schemas.DefaultLimits()
	if cfgPath != "" {
		f, err := config.Load(cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "fusebox spans: %v\n", err)
			return exitFailure
		}
		names, lim = f.Attributes, f.Limits
		if topic == "" && len(f.Topics.Spans) > 0 {
			topic = f.Topics.Spans[0]
		}
	}
	if topic == "" {
		topic = "otlp_spans"
	}
	opts, err := kf.opts()
	if err != nil {
		return usageErr(err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := printSpans(ctx, opts, topic, encoding, names, lim, stdout)
	if err != nil {
		err = pipeline.WrapKafkaAuth(err, kf.saslMechanism != "")
		fmt.Fprintf(stderr, "fusebox spans: %s: %v\n", topic, err)
		return exitFailure
	}
	fmt.Fprintf(stderr, "fusebox spans: %s: %d records (%d undecodable), %d spans seen, %d LLM calls printed, %d skipped without a model\n",
		topic, st.records, st.undecodable, st.seen, st.printed, st.noModel)
	return exitOK
}

type spansStats struct {
	records, undecodable, seen, printed, noModel int
}

// printSpans reads topic's partitions from their start offsets to their end
// offsets as listed when it begins, and prints each record's spans.
func printSpans(ctx context.Context, opts []kgo.Opt, topic, encoding string, names schemas.AttributeNames, lim schemas.Limits, w io.Writer) (spansStats, error) {
	var st spansStats
	admCl, err := kgo.NewClient(opts...)
	if err != nil {
		return st, err
	}
	adm := kadm.NewClient(admCl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	var ends kadm.ListedOffsets
	if err == nil {
		ends, err = adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
	}
	admCl.Close()
	if err != nil {
		return st, fmt.Errorf("list offsets: %w", err)
	}
	assign := map[int32]kgo.Offset{}
	left := map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := starts.Lookup(e.Topic, e.Partition)
		if !ok || s.Offset >= e.Offset {
			return
		}
		assign[e.Partition] = kgo.NewOffset().At(s.Offset)
		left[e.Partition] = e.Offset
	})
	if len(left) == 0 {
		return st, nil
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))...)
	if err != nil {
		return st, err
	}
	defer cl.Close()
	enc := json.NewEncoder(w)
	var buf []schemas.Span
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("reading: %w (%d partitions not read to their end)", err, len(left))
		}
		for _, fe := range fs.Errors() {
			return st, fmt.Errorf("fetch partition %d: %w", fe.Partition, fe.Err)
		}
		var werr error
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := left[r.Partition]
			if !ok || r.Offset >= end || werr != nil {
				return
			}
			st.records++
			var ds schemas.DecodeStats
			var err error
			if encoding == "otlp_json" || (encoding == "auto" && looksJSONRecord(r.Value)) {
				buf, ds, err = schemas.DecodeOTLPJSON(r.Value, names, lim, buf[:0])
			} else {
				buf, ds, err = schemas.DecodeOTLPProto(r.Value, names, lim, buf[:0])
			}
			st.seen += ds.SpansSeen
			st.noModel += ds.SkippedNoModel
			if err != nil {
				st.undecodable++
				werr = enc.Encode(map[string]any{"topic": r.Topic, "partition": r.Partition, "offset": r.Offset, "error": err.Error()})
			}
			for i := range buf {
				if werr == nil {
					werr = enc.Encode(newSpanLine(r.Topic, r.Partition, r.Offset, &buf[i]))
					st.printed++
				}
			}
			if r.Offset == end-1 {
				delete(left, r.Partition)
			}
		})
		if werr != nil {
			return st, werr
		}
	}
	return st, nil
}

// looksJSONRecord reports whether b starts, after white space, with '{'.
func looksJSONRecord(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}
