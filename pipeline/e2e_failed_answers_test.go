package pipeline_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/schemas"
)

// failedAnswerSLOs: the same burn-rate SLO twice, once counting failed
// answers as bad events and once with the default (errors only); the
// breaker trips on a page.
const failedAnswerSLOs = `
breaker:
  k: 2
  n: 4
  rules:
    - {processor: burnrate, action: trip}
slos:
  - name: answers
    burnrate: {min_events: 50, bad_events: [errors, failed_answers], ticket: []}
  - name: availability
    burnrate: {min_events: 50, ticket: []}
`

// TestFailedAnswersStormTripsWhereConfigured runs the pipeline on kfake
// with the JSONL and ClickHouse sinks over 14 minutes of event time: four
// keys at 8 calls/s, every call a success (no error status); from minute 6
// to 10 three in ten of one key's calls are filtered (finish reason
// content_filter, Gemini's SAFETY for half of them, 0 output tokens),
// while the other keys carry their usual traffic (one in 500 cut off at
// max_tokens, one in 500 empty). The SLO with bad_events [errors,
// failed_answers] pages on the storm key only and the breaker trips it;
// the healthy keys keep ok verdicts throughout; the errors-only SLO never
// pages; ClickHouse's span_rollups count every closed minute's failed
// answers per key exactly, by reason.
func TestFailedAnswersStormTripsWhereConfigured(t *testing.T) {
	k := testharness.StartKafka(t)
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t)
	conn := ch.ConnDatabase(t, db)
	jsonl := filepath.Join(t.TempDir(), "out.jsonl")
	y := "version: answers-v1\nkafka:\n  brokers: [" + strings.Join(k.Brokers, ", ") + "]\n" +
		"time: {idle_source_timeout: 1s, checkpoint_every: 500ms, allowed_lateness: 5s}\n" +
		"topics: {keyed_partitions: 2}\n" +
		"signing: {insecure_unsigned: true}\n" +
		"sinks:\n  jsonl: {path: " + jsonl + "}\n" +
		"  clickhouse: {addr: [" + ch.Addr + "], database: " + db + ", username: \"" + ch.Username + "\", password: \"" + ch.Password +
		"\", batch_rows: 500, buffer_rows: 20000, flush_every: 200ms, dial_timeout: 1s}\n" + failedAnswerSLOs
	cfg, err := config.Parse("answers.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}

	start := time.Unix(1_800_000_000, 0)
	storm := schemas.Key{Tenant: "acme", Service: "chat", Model: "gpt-4o", Variant: "baseline"}
	keys := []schemas.Key{storm,
		{Tenant: "acme", Service: "chat", Model: "claude", Variant: "baseline"},
		{Tenant: "beta", Service: "chat", Model: "gpt-4o", Variant: "baseline"},
		{Tenant: "beta", Service: "search", Model: "gemini", Variant: "baseline"}}
	stormFrom, stormTo := start.Add(6*time.Minute), start.Add(10*time.Minute)
	type counts struct{ n, failed, length, filtered, empty int64 }
	want := map[schemas.Key]map[int64]*counts{}
	r := rand.New(rand.NewPCG(23, 5))
	var spans []schemas.Span
	seq := uint64(0)
	const minutes, perSecond = 14, 8
	for sec := range minutes * 60 {
		for _, key := range keys {
			for range perSecond {
				seq++
				end := start.Add(time.Duration(sec)*time.Second + time.Duration(r.Int64N(int64(time.Second))))
				s := liveSpan(seq, key.Tenant, key.Model, end)
				s.Key = key
				s.FinishReason, s.OutputTokens, s.InputTokens = "stop", 50, 20
				s.Has |= schemas.HasOutputTokens | schemas.HasInputTokens
				minute := end.Truncate(time.Minute).UnixNano()
				if want[key] == nil {
					want[key] = map[int64]*counts{}
				}
				c := want[key][minute]
				if c == nil {
					c = &counts{}
					want[key][minute] = c
				}
				c.n++
				switch x := r.Float64(); {
				case key == storm && !end.Before(stormFrom) && end.Before(stormTo) && x < 0.3:
					s.FinishReason, s.OutputTokens = []string{"content_filter", "SAFETY"}[seq%2], 0
					c.failed++
					c.filtered++
				case x < 0.002:
					s.FinishReason, s.OutputTokens = "max_tokens", 64
					c.failed++
					c.length++
				case x < 0.004:
					s.OutputTokens = 0
					c.failed++
					c.empty++
				}
				spans = append(spans, s)
			}
		}
	}
	names := schemas.DefaultAttributeNames()
	var recs []*kgo.Record
	for i := 0; i < len(spans); i += 200 {
		batch := spans[i:min(i+200, len(spans))]
		// Stamped with the producer's clock: these event times are ahead
		// of the wall clock (time.max_future_skew).
		recs = append(recs, &kgo.Record{Topic: "otlp_spans", Value: schemas.EncodeOTLPProto(nil, batch, names),
			Timestamp: time.Unix(0, batch[len(batch)-1].EndUnixNano)})
	}
	cl := k.Client(t, kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(10*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	run := startRunWith(t, pipeline.Options{Config: cfg, Logger: testLogger(t)})
	end := start.Add(minutes * time.Minute)
	if reached, ok := pollJSONLReaches(t, jsonl, end.Add(-2*time.Minute).UnixNano(), 60*time.Second); !ok {
		t.Fatalf("after 60s verdicts reached %v, want %v", time.Unix(0, reached), end.Add(-2*time.Minute))
	}
	run.stop(t)

	vs, cmds := readJSONL(t, jsonl)
	var breaches, healthyOK, stormOKBefore int
	for _, v := range vs {
		if v.Processor != "burnrate" || v.Metric != "burn_rate_page" {
			continue
		}
		switch {
		case v.SLO == "availability" && (v.Status == schemas.StatusBreach || v.Status == schemas.StatusWarn):
			t.Errorf("errors-only SLO %s on %v at %v: every call succeeded", v.Status, v.Key, time.Unix(0, v.WindowEndUnixNano))
		case v.SLO != "answers":
		case v.Key != storm && v.Status != schemas.StatusOK && v.Status != schemas.StatusInsufficientData:
			t.Errorf("healthy key %v: %s at %v", v.Key, v.Status, time.Unix(0, v.WindowEndUnixNano))
		case v.Key != storm && v.Status == schemas.StatusOK:
			healthyOK++
		case v.Status == schemas.StatusBreach:
			if v.WindowEndUnixNano <= stormFrom.UnixNano() {
				t.Errorf("storm key breached before the storm, at %v", time.Unix(0, v.WindowEndUnixNano))
			}
			d := map[string]float64{}
			for _, x := range v.Details {
				d[x.Name] = x.Value
			}
			if d["failed_answers_1h"] < 5 || d["errors_1h"] != 0 {
				t.Errorf("breach details %v: want failed answers counted, no errors", d)
			}
			breaches++
		case v.Status == schemas.StatusOK && v.WindowEndUnixNano <= stormFrom.UnixNano():
			stormOKBefore++
		}
	}
	if breaches == 0 || healthyOK < 3*5 || stormOKBefore == 0 {
		t.Errorf("answers SLO: %d breaches on the storm key (want some), %d ok verdicts of healthy keys (want >= 15), %d ok on the storm key before it (want some)",
			breaches, healthyOK, stormOKBefore)
	}
	tripped := false
	for _, c := range cmds {
		if c.Action == schemas.ActionTrip && c.Target.Tenant == storm.Tenant && c.Target.Service == storm.Service {
			tripped = true
		}
	}
	if !tripped {
		t.Errorf("no trip of %s/%s among %d commands", storm.Tenant, storm.Service, len(cmds))
	}

	// The rollups: every row ClickHouse has is a closed minute, with the
	// counts generated for it.
	rows, err := conn.Query(ctx, `SELECT tenant, service, model, variant, minute_unix_nano, spans, failed_answers, failed_length,
		failed_content_filter, empty_answers FROM span_rollups FINAL ORDER BY tenant, service, model, minute_unix_nano`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	checked, stormFailed := 0, uint64(0)
	for rows.Next() {
		var key schemas.Key
		var minute int64
		var n, failed, length, filtered, empty uint64
		if err := rows.Scan(&key.Tenant, &key.Service, &key.Model, &key.Variant, &minute, &n, &failed, &length, &filtered, &empty); err != nil {
			t.Fatal(err)
		}
		c := want[key][minute]
		if c == nil || int64(n) != c.n || int64(failed) != c.failed || int64(length) != c.length || int64(filtered) != c.filtered || int64(empty) != c.empty {
			t.Errorf("rollup %v %v: spans %d, failed %d (length %d, content_filter %d, empty %d); want %+v",
				key, time.Unix(0, minute).UTC(), n, failed, length, filtered, empty, c)
		}
		if key == storm {
			stormFailed += failed
		}
		checked++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if checked < len(keys)*11 || stormFailed < 500 {
		t.Errorf("%d rollup rows checked (want >= %d: 11 closed minutes per key), %d failed answers on the storm key", checked, len(keys)*11, stormFailed)
	}
	t.Logf("%d spans, %d page verdicts breached on the storm key, %d rollup rows checked, %d failed answers on the storm key",
		len(spans), breaches, checked, stormFailed)
}
