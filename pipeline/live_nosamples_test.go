package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLiveNoSamplesIsLoud: a ttft_ms tail SLO, a confidence drift SLO
// and an alignment decay SLO over live spans that carry no time to first
// token and no scores (as the official OpenAI instrumentation writes
// them). On main they stayed silent: no verdict, no line (drift and decay
// until this branch). Now, from its
// no_samples_evaluations-th evaluation (3 here) with calls and no sample,
// every key gets a no_samples verdict (status insufficient_data, method
// no_samples, the calls) in the sinks, the pipeline logs one WARN for the
// SLO — naming it, the metric, the calls and the instrumentation scope —
// not one per verdict, and fusebox_slo_no_samples_total{slo} counts the
// verdicts; ClickHouse has them (method no_samples). The
// duration SLO on the same spans is judged and
// not reported.
func TestLiveNoSamplesIsLoud(t *testing.T) {
	k := testharness.StartKafka(t)
	ch := testharness.StartClickHouse(t)
	db := ch.NewDatabase(t)
	o := liveOpts{brokers: k.Brokers, suffix: ".nosamples",
		sinks: fmt.Sprintf("  clickhouse: {addr: [%s], database: %s, username: %q, password: %q, flush_every: 200ms, dial_timeout: 1s}\n", ch.Addr, db, ch.Username, ch.Password)}
	yml := liveYAML(o) + "  - name: ttft\n    tail: {metric: ttft_ms, budget: 2000, window: 4s, every: 1s, min_samples: 5, no_samples_evaluations: 3}\n" +
		"  - name: conf\n    drift: {metric: confidence, window: 4s, every: 1s, reference_window: 4s, min_samples: 5, no_samples_evaluations: 3}\n" +
		"  - name: align\n    decay: {metric: alignment, window: 4s, every: 1s, min_samples: 5, no_samples_evaluations: 3}\n"
	cfg, err := config.Parse("live-nosamples.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	vlog := &verdictLog{}
	run := startRunWith(t, pipeline.Options{Config: cfg, InsecureUnsigned: true, ExtraSinks: []engine.Sink{vlog}, Logger: logs.logger()})

	const scope = "opentelemetry.instrumentation.openai_v2"
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	names := schemas.DefaultAttributeNames()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for seq := uint64(1); ; {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			now := time.Now()
			for part := int32(0); part < liveSourcePartitions; part++ {
				var spans []schemas.Span
				for _, tn := range []string{"acme", "globex"} {
					s := liveSpan(seq, tn, "gpt-4o", now)
					s.Scope = scope
					spans = append(spans, s)
					seq++
				}
				cl.Produce(context.Background(), &kgo.Record{Topic: "otlp_spans", Partition: part, Value: schemas.EncodeOTLPProto(nil, spans, names)}, nil)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	// The SLOs blind on these spans, and the span metric each WARN names.
	blind := []struct{ slo, metric string }{{"ttft", "ttft_ms"}, {"conf", "confidence"}, {"align", "alignment"}}
	noSamples := func(slo string) (n int, calls float64) {
		vlog.mu.Lock()
		defer vlog.mu.Unlock()
		for _, v := range vlog.verdicts {
			if v.SLO == slo && v.Method == processors.MethodNoSamples && v.Status == schemas.StatusInsufficientData {
				n++
				c, _ := v.Detail(processors.DetailNoSamplesCalls)
				calls = max(calls, c)
			}
		}
		return n, calls
	}
	conn := ch.ConnDatabase(t, db)
	var report []string
	for _, b := range blind {
		testharness.Eventually(t, 30*time.Second, "no_samples verdicts of the "+b.slo+" SLO for both tenants, three evaluations apart", func() bool {
			n, _ := noSamples(b.slo)
			return n >= 6
		})
		n, calls := noSamples(b.slo)
		if calls < 100 {
			t.Errorf("%s: no_samples verdicts count at most %v calls in a 4s window of 60 calls/s per tenant", b.slo, calls)
		}
		testharness.Eventually(t, 10*time.Second, "the WARN of "+b.slo, func() bool {
			return logs.count(`"level":"WARN"`, "no samples of its metric", `"slo":"`+b.slo+`"`) > 0
		})
		line := ""
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "no samples of its metric") && strings.Contains(l, `"slo":"`+b.slo+`"`) {
				line = l
				break
			}
		}
		for _, want := range []string{`"metric":"` + b.metric + `"`, `"scopes":"` + scope + `"`, `"calls":`, `"evaluations":`} {
			if !strings.Contains(line, want) {
				t.Errorf("the WARN of %s lacks %s: %s", b.slo, want, line)
			}
		}
		if c := logs.count("no samples of its metric", `"slo":"`+b.slo+`"`); c != 1 {
			t.Errorf("%d WARN lines for %d no_samples verdicts of %s, want 1 (then one per 10 minutes)", c, n, b.slo)
		}
		var s observe.Snapshot
		run.p.Metrics().Collect(&s)
		var counted float64
		for _, x := range s.Extra {
			if x.Name == "fusebox_slo_no_samples_total" && len(x.Labels) == 1 && x.Labels[0].Value == b.slo {
				counted = x.Value
			}
		}
		if counted < float64(n) {
			t.Errorf("fusebox_slo_no_samples_total{slo=%q} = %v, want at least the %d no_samples verdicts seen", b.slo, counted, n)
		}
		// ClickHouse keeps them as verdicts of method no_samples, the calls
		// in the details.
		var rows uint64
		var chCalls float64
		testharness.Eventually(t, 20*time.Second, "no_samples rows of "+b.slo+" in ClickHouse", func() bool {
			err := conn.QueryRow(context.Background(), `SELECT count(), max(detail_values[indexOf(detail_names, 'calls')]) FROM verdicts FINAL
				WHERE slo = ? AND method = 'no_samples' AND status = 'insufficient_data'`, b.slo).Scan(&rows, &chCalls)
			return err == nil && rows > 0
		})
		if chCalls < 100 {
			t.Errorf("ClickHouse: %d no_samples rows of %s with at most %v calls", rows, b.slo, chCalls)
		}
		report = append(report, fmt.Sprintf("%s: %d no_samples verdicts (up to %v calls each; %d rows in ClickHouse), fusebox_slo_no_samples_total %v; WARN: %s", b.slo, n, calls, rows, counted, line))
	}
	if logs.count("no samples of its metric", `"slo":"latency"`) > 0 {
		t.Error("the duration SLO, whose calls carry their duration, was reported")
	}
	if vlog.newest("acme", true) == 0 {
		t.Error("no judged verdict of the duration SLO")
	}
	t.Log(strings.Join(report, "\n"))
}
