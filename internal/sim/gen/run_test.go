package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/schemas"
)

// testConfig is a small scenario: 200 calls/s for 30 s of event time,
// unpaced, with every incident kind active somewhere.
func testConfig() Config {
	sc := traffic.Demo()
	sc.Seed = 7
	sc.Rate = 200
	sc.Duration = 30 * time.Second
	sc.CorrectionRate = 0.05
	sc.Incidents = []traffic.Incident{
		{Name: "tail", Kind: traffic.TailBlowup, Start: 5 * time.Second, End: 20 * time.Second, Magnitude: 0.05},
		{Name: "errors", Kind: traffic.ErrorBurst, Start: 10 * time.Second, End: 15 * time.Second, Magnitude: 0.2},
	}
	cfg := DefaultConfig()
	cfg.Scenario = sc
	cfg.Start = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	cfg.Speedup = 0
	return cfg
}

// expected replays the generator as Run drives it.
func expected(t *testing.T, cfg Config) (spans, other []schemas.Span, corr []schemas.Correction) {
	t.Helper()
	cfg = cfg.withDefaults()
	g, err := traffic.New(cfg.Scenario, cfg.Start)
	if err != nil {
		t.Fatal(err)
	}
	for !g.Done() {
		b := g.Next(min(cfg.Step, cfg.Scenario.Duration-g.Offset()))
		spans = append(spans, b.Spans...)
		other = append(other, b.Other...)
		corr = append(corr, b.Corrections...)
	}
	return spans, other, corr
}

func produceClient(t *testing.T, k *testharness.Kafka, opts ...kgo.Opt) *kgo.Client {
	return k.Client(t, append([]kgo.Opt{kgo.AllowAutoTopicCreation()}, opts...)...)
}

func runGen(t *testing.T, cfg Config, p Producer) Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := Run(ctx, cfg, p)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum
}

// sameSpan compares a decoded span with the generated one: every field
// exactly, except TTFT (and the TPOT derived from it), which travels as
// seconds in a double: when no double s has s*1000 == TTFTMs, the decoder
// gets the nearest, one ulp away.
func sameSpan(got, want schemas.Span) bool {
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	if !close(got.TTFTMs, want.TTFTMs) || !close(got.TPOTMs, want.TPOTMs) {
		return false
	}
	got.TTFTMs, got.TPOTMs = want.TTFTMs, want.TPOTMs
	return got == want
}

func bySpanID(a, b schemas.Span) int { return bytes.Compare(a.SpanID[:], b.SpanID[:]) }

// decodeAll decodes every span record and checks each against the
// per-message rules.
func decodeAll(t *testing.T, recs []*kgo.Record, encoding string, keyed bool, perMessage int) (spans []schemas.Span, skipped int) {
	t.Helper()
	hexKey := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, r := range recs {
		decode := schemas.DecodeOTLPProto
		if encoding == EncodingJSON {
			decode = schemas.DecodeOTLPJSON
		}
		got, st, err := decode(r.Value, schemas.AttributeNames{}, schemas.Limits{}, nil)
		if err != nil {
			t.Fatalf("record at %s[%d]@%d does not decode: %v", r.Topic, r.Partition, r.Offset, err)
		}
		for i := range got {
			if err := got[i].Validate(); err != nil {
				t.Errorf("decoded span invalid: %v", err)
			}
		}
		if keyed {
			if !hexKey.Match(r.Key) {
				t.Fatalf("key %q is not a 32-hex trace id", r.Key)
			}
			for i := range got {
				if got[i].TraceID.String() != string(r.Key) {
					t.Errorf("message keyed %s holds a span of trace %s", r.Key, got[i].TraceID)
				}
			}
		} else {
			if r.Key != nil {
				t.Fatalf("unkeyed run wrote key %q", r.Key)
			}
			if st.SpansSeen > perMessage {
				t.Errorf("message holds %d spans, more than %d", st.SpansSeen, perMessage)
			}
			for i := range got {
				if got[i].Key.Service != got[0].Key.Service {
					t.Errorf("message mixes services %s and %s", got[0].Key.Service, got[i].Key.Service)
				}
			}
		}
		spans = append(spans, got...)
		skipped += st.SkippedNoModel
	}
	return spans, skipped
}

func TestRunWritesTheGeneratorsTraffic(t *testing.T) {
	for _, tc := range []struct {
		name     string
		encoding string
		keyed    bool
	}{
		{"proto", EncodingProto, false},
		{"json keyed by trace", EncodingJSON, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := testharness.StartKafka(t)
			cfg := testConfig()
			cfg.Encoding = tc.encoding
			cfg.KeyByTrace = tc.keyed
			wantSpans, wantOther, wantCorr := expected(t, cfg)
			if len(wantSpans) != 6000 || len(wantOther) == 0 || len(wantCorr) == 0 {
				t.Fatalf("scenario makes %d spans, %d other, %d corrections: want 6000 and some of each",
					len(wantSpans), len(wantOther), len(wantCorr))
			}

			sum := runGen(t, cfg, produceClient(t, k))
			if sum.Spans != int64(len(wantSpans)) || sum.OtherSpans != int64(len(wantOther)) || sum.Corrections != int64(len(wantCorr)) {
				t.Errorf("summary %+v, want %d spans, %d other, %d corrections", sum.Counts, len(wantSpans), len(wantOther), len(wantCorr))
			}
			if sum.Stopped || !sum.EventStart.Equal(cfg.Start) || !sum.EventEnd.Equal(cfg.Start.Add(cfg.Scenario.Duration)) {
				t.Errorf("summary stopped=%v event [%v, %v), want the whole scenario", sum.Stopped, sum.EventStart, sum.EventEnd)
			}
			if tc.keyed && sum.SpanMessages != int64(len(wantSpans)) {
				t.Errorf("%d span messages keyed by trace, want one per trace (%d)", sum.SpanMessages, len(wantSpans))
			}

			recs := k.ReadAll(t, cfg.SpansTopic, int(sum.SpanMessages), time.Minute)
			if len(recs) != int(sum.SpanMessages) {
				t.Fatalf("read %d span messages, summary says %d", len(recs), sum.SpanMessages)
			}
			got, skipped := decodeAll(t, recs, tc.encoding, tc.keyed, cfg.SpansPerMessage)
			if skipped != len(wantOther) {
				t.Errorf("%d non-LLM spans in the messages, want %d", skipped, len(wantOther))
			}
			slices.SortFunc(got, bySpanID)
			slices.SortFunc(wantSpans, bySpanID)
			if len(got) != len(wantSpans) {
				t.Fatalf("decoded %d spans, want %d", len(got), len(wantSpans))
			}
			for i := range got {
				if !sameSpan(got[i], wantSpans[i]) {
					t.Fatalf("span %d decodes to\n%+v\nwant\n%+v", i, got[i], wantSpans[i])
				}
			}

			crecs := k.ReadAll(t, cfg.CorrectionsTopic, len(wantCorr), time.Minute)
			var gotCorr []schemas.Correction
			for _, r := range crecs {
				c, err := schemas.DecodeCorrection(r.Value)
				if err != nil {
					t.Fatalf("correction does not decode: %v\n%s", err, r.Value)
				}
				gotCorr = append(gotCorr, c)
			}
			key := func(a, b schemas.Correction) int { return strings.Compare(a.EventID, b.EventID) }
			slices.SortFunc(gotCorr, key)
			slices.SortFunc(wantCorr, key)
			if fmt.Sprint(gotCorr) != fmt.Sprint(wantCorr) {
				t.Errorf("corrections differ:\n got %v\nwant %v", gotCorr, wantCorr)
			}
		})
	}
}

// recorder wraps a producer and keeps what was produced, in order.
type recorder struct {
	Producer
	mu   sync.Mutex
	recs []string
}

func (r *recorder) Produce(ctx context.Context, rec *kgo.Record, promise func(*kgo.Record, error)) {
	r.mu.Lock()
	r.recs = append(r.recs, fmt.Sprintf("%s|%x|%x", rec.Topic, rec.Key, rec.Value))
	r.mu.Unlock()
	r.Producer.Produce(ctx, rec, promise)
}

func TestSameSeedWritesIdenticalBytes(t *testing.T) {
	var runs [2][]string
	var stored [2][]string
	for i := range runs {
		k := testharness.StartKafka(t)
		cfg := testConfig()
		cfg.Scenario.Duration = 10 * time.Second
		cfg.KeyByTrace = true // keys too must repeat
		rec := &recorder{Producer: produceClient(t, k)}
		sum := runGen(t, cfg, rec)
		runs[i] = rec.recs
		for _, topic := range []string{cfg.SpansTopic, cfg.CorrectionsTopic} {
			want := sum.SpanMessages
			if topic == cfg.CorrectionsTopic {
				want = sum.CorrectionMessages
			}
			for _, r := range k.ReadAll(t, topic, int(want), time.Minute) {
				stored[i] = append(stored[i], fmt.Sprintf("%s|%x|%x", r.Topic, r.Key, r.Value))
			}
		}
		slices.Sort(stored[i])
	}
	if len(runs[0]) == 0 || !slices.Equal(runs[0], runs[1]) {
		t.Errorf("two runs with seed 7 produced different records (%d and %d)", len(runs[0]), len(runs[1]))
	}
	if !slices.Equal(stored[0], stored[1]) || len(stored[0]) != len(runs[0]) {
		t.Errorf("the brokers hold different records: %d and %d, produced %d", len(stored[0]), len(stored[1]), len(runs[0]))
	}

	cfg := testConfig()
	cfg.Scenario.Duration = 10 * time.Second
	cfg.Scenario.Seed = 8
	cfg.KeyByTrace = true
	k := testharness.StartKafka(t)
	rec := &recorder{Producer: produceClient(t, k)}
	runGen(t, cfg, rec)
	if slices.Equal(rec.recs, runs[0]) {
		t.Error("seed 8 wrote the same records as seed 7")
	}
}

// Cancelling the context stops generation cleanly: nil error, and every
// record the summary counts is on the broker.
func TestCancelStopsCleanlyAndFlushes(t *testing.T) {
	k := testharness.StartKafka(t)
	cfg := testConfig()
	cfg.Scenario.Duration = 0 // until stopped
	cfg.Speedup = 600
	cfg.ProgressEvery = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reports []Progress
	cfg.Progress = func(p Progress) {
		reports = append(reports, p)
		if p.Spans > 2000 {
			cancel()
		}
	}
	sum, err := Run(ctx, cfg, produceClient(t, k))
	if err != nil {
		t.Fatalf("Run after cancel: %v, want nil", err)
	}
	if !sum.Stopped || sum.Spans == 0 {
		t.Fatalf("summary %+v: want Stopped with spans written", sum)
	}
	if len(reports) == 0 || reports[len(reports)-1].EventTime.Before(cfg.Start) || reports[len(reports)-1].SpansPerSecond <= 0 {
		t.Errorf("progress reports %+v", reports)
	}
	spans, corr := k.TopicRecords(t, cfg.SpansTopic), k.TopicRecords(t, cfg.CorrectionsTopic)
	if spans != sum.SpanMessages || corr != sum.CorrectionMessages {
		t.Errorf("broker holds %d span and %d correction messages, summary says %d and %d",
			spans, corr, sum.SpanMessages, sum.CorrectionMessages)
	}
	// Pacing: event time ran at most Speedup times faster than the wall, up
	// to the last step, whose wait the cancel cut short.
	if ev := sum.EventEnd.Sub(sum.EventStart) - cfg.Step; sum.Wall < time.Duration(float64(ev)/cfg.Speedup) {
		t.Errorf("%v of event time in %v of wall time: faster than speedup %v", ev, sum.Wall, cfg.Speedup)
	}
}

// A record the broker refuses stops the run with a *ProduceError.
func TestRefusedRecordStopsTheRun(t *testing.T) {
	k := testharness.StartKafka(t, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2000"}))
	k.CreateTopic(t, "otlp_spans", 3, nil)
	cfg := testConfig()
	cfg.SpansPerMessage = 100 // ~40 kB messages
	_, err := Run(context.Background(), cfg, produceClient(t, k))
	var pe *ProduceError
	// Span messages are ~40 kB; correction batches can pass 2000 bytes too,
	// so either topic may be the first refused.
	if !errors.As(err, &pe) || (pe.Topic != "otlp_spans" && pe.Topic != "fusebox.corrections") || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("Run: %v, want a *ProduceError wrapping MESSAGE_TOO_LARGE", err)
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := testConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Start = time.Time{} }, "Start"},
		{func(c *Config) { c.Speedup = -1 }, "Speedup"},
		{func(c *Config) { c.Encoding = "avro" }, `Encoding: "avro"`},
		{func(c *Config) { c.SpansPerMessage = -1 }, "SpansPerMessage"},
		{func(c *Config) { c.CorrectionsTopic = c.SpansTopic }, "CorrectionsTopic"},
		{func(c *Config) { c.Step = time.Microsecond }, "Step"},
		{func(c *Config) { c.Scenario.Rate = 0 }, "scenario rate"},
	} {
		c := testConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want an error naming %s", err, tc.want)
		}
	}
}
