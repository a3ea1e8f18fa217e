package pipeline_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/sinks"
	"github.com/fusebox-dev/fusebox/sinks/jsonlsink"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { testharness.Main(m) }

const slos = `
slos:
  - name: availability
    burnrate: {min_events: 50}
  - name: latency
    tail: {budget: 20000, window: 5m}
`

func loadConfig(t *testing.T, brokers []string, extra string) *config.File {
	t.Helper()
	y := "kafka:\n  brokers: [" + strings.Join(brokers, ", ") + "]\n" +
		"time: {idle_source_timeout: 1s, checkpoint_every: 500ms, allowed_lateness: 5s}\n" +
		"topics: {keyed_partitions: 4}\n" +
		"signing: {insecure_unsigned: true}\n" + extra + slos
	f, err := config.Parse("test.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// createTopics creates the topics of cfg (loadConfig's) ahead of the
// pipeline, as an operator would: the keyed topic with its partitions,
// the DLQ, the span topic with 3 partitions and the correction topic.
func createTopics(t *testing.T, k *testharness.Kafka, cfg *config.File) {
	t.Helper()
	for _, tp := range []struct {
		name string
		n    int32
	}{{cfg.Topics.Keyed, cfg.Topics.KeyedPartitions}, {cfg.Topics.DLQ, 1}, {"otlp_spans", 3}, {"fusebox.corrections", 1}} {
		k.CreateTopic(t, tp.name, tp.n, nil)
	}
}

// publish writes d of event time of sc's traffic to the span and
// correction topics as a service (OTLP protobuf, 100 spans a message) and
// an app would, and returns the event time reached.
func publish(t *testing.T, k *testharness.Kafka, sc traffic.Scenario, start time.Time, d time.Duration) time.Time {
	t.Helper()
	g, err := traffic.New(sc, start)
	if err != nil {
		t.Fatal(err)
	}
	cl := k.Client(t, kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(10*time.Millisecond))
	var recs []*kgo.Record
	var pending []schemas.Span
	names := schemas.DefaultAttributeNames()
	for g.Offset() < d {
		b := g.Next(time.Second)
		pending = append(append(pending, b.Spans...), b.Other...)
		for len(pending) >= 100 {
			// Stamped with the simulated producer's clock (the generator's now):
			// event time is judged against the record timestamp.
			recs = append(recs, &kgo.Record{Topic: "otlp_spans", Value: schemas.EncodeOTLPProto(nil, pending[:100], names),
				Timestamp: g.Now()})
			pending = pending[100:]
		}
		for _, c := range b.Corrections {
			v, err := schemas.EncodeCorrection(c)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, &kgo.Record{Topic: "fusebox.corrections", Value: v, Timestamp: time.Unix(0, c.TimeUnixNano)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return g.Now()
}

// readJSONL returns the verdicts and commands in a JSONL sink file.
func readJSONL(t *testing.T, path string) ([]schemas.Verdict, []schemas.FuseCommand) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	vs, cs, err := jsonlsink.Read(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return vs, cs
}

// pollJSONLReaches polls the JSONL sink file at path until the newest
// window end of its verdicts reaches want (Unix ns), for d at the most. It
// returns that newest window end and whether it reached want.
func pollJSONLReaches(t *testing.T, path string, want int64, d time.Duration) (reached int64, ok bool) {
	t.Helper()
	ok = testharness.Poll(d, func() bool {
		vs, _ := readJSONL(t, path)
		for _, v := range vs {
			reached = max(reached, v.WindowEndUnixNano)
		}
		return reached >= want
	})
	return reached, ok
}

func TestKafkaPipelineEndToEnd(t *testing.T) {
	k := testharness.StartBroker(t)
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "out.jsonl")
	cfg := loadConfig(t, k.Brokers, "sinks: {jsonl: {path: "+jsonl+"}}\n")

	sc := traffic.Demo()
	sc.Rate = 60
	sc.Incidents = []traffic.Incident{{Name: "errors", Kind: traffic.ErrorBurst, Start: 6 * time.Minute, End: 12 * time.Minute,
		Target: traffic.Target{Tenant: "acme", Service: "chat"}, Magnitude: 0.5}}
	start := time.Unix(1_800_000_000, 0)
	end := publish(t, k, sc, start, 15*time.Minute)

	var kopts []kgo.Opt
	if os.Getenv("FUSEBOX_TEST_KGO_DEBUG") != "" {
		kopts = append(kopts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, nil)))
	}
	run := startRunWith(t, pipeline.Options{Config: cfg, Logger: testLogger(t), KgoOpts: kopts})
	p := run.p

	// Wait for evaluations up to a few minutes before the end of the
	// traffic: the watermark lags by the allowed lateness.
	want := end.Add(-2 * time.Minute).UnixNano()
	if reached, ok := pollJSONLReaches(t, jsonl, want, 25*time.Second); !ok {
		seen := map[string]int{}
		all := k.ReadAll(t, "fusebox.keyed", 4988, 10*time.Second)
		if dump := os.Getenv("FUSEBOX_DUMP_KEYED"); dump != "" {
			var recs []map[string]any
			for _, r := range all {
				h := map[string]string{}
				for _, x := range r.Headers {
					h[x.Key] = string(x.Value)
				}
				recs = append(recs, map[string]any{"p": r.Partition, "o": r.Offset, "h": h, "v": r.Value})
			}
			b, _ := json.Marshal(recs)
			os.WriteFile(dump, b, 0o644)
		}
		for _, r := range all {
			var src, idle string
			for _, h := range r.Headers {
				if h.Key == "fb.src" {
					src = string(h.Value)
					src = src[:strings.LastIndexByte(src[:strings.LastIndexByte(src, '/')], '/')]
				}
				if h.Key == "fb.idle" {
					idle = "idle"
				}
			}
			seen[strconv.Itoa(int(r.Partition))+" "+src+" "+idle]++
		}
		t.Logf("keyed records by partition/source: %v", seen)
		t.Fatalf("after 25s verdicts reached %v, want %v; keyed stage %+v, watermarks %v, router ingest %+v",
			time.Unix(0, reached), time.Unix(0, want), p.Keyed().Stats(), p.Keyed().Partitions(), p.Source().Stats())
	}
	run.stop(t)

	vs, cmds := readJSONL(t, jsonl)
	onKafka := map[string]bool{}
	for _, r := range k.ReadAll(t, "fusebox.verdicts", len(vs), 30*time.Second) {
		v, err := sinks.UnmarshalVerdictJSON(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		onKafka[v.ID] = true
	}
	pages := 0
	for _, v := range vs {
		if !onKafka[v.ID] {
			t.Fatalf("verdict %s in the JSONL sink is not on fusebox.verdicts", v.ID)
		}
		if v.Status == schemas.StatusBreach {
			if v.Key.Tenant != "acme" || v.Key.Service != "chat" {
				t.Fatalf("breach outside the incident: %+v", v)
			}
			if v.Metric == "burn_rate_page" {
				pages++
			}
		}
	}
	if pages == 0 {
		t.Fatal("no page for the error burst")
	}
	trips := 0
	for _, c := range cmds {
		if c.Action == schemas.ActionTrip && c.State == schemas.StateOpen {
			trips++
		}
	}
	if trips == 0 {
		t.Fatalf("no trip command among %d commands", len(cmds))
	}
	if dlq := k.ReadAll(t, "fusebox.dlq", 1, 2*time.Second); len(dlq) != 0 {
		t.Fatalf("%d records in the DLQ from valid traffic", len(dlq))
	}
	st := p.Keyed().Stats()
	t.Logf("keyed stage: %+v", st)
	if st.LateSpans != 0 {
		t.Fatalf("%d late spans from in-order traffic", st.LateSpans)
	}
}

// testLogger logs to the test's output when FUSEBOX_TEST_LOG is set.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("FUSEBOX_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
