package main

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/engine"
	"github.com/fusebox-dev/fusebox/engine/statestore"
	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/internal/sim/gen"
	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
	"github.com/fusebox-dev/fusebox/internal/testharness"
	"github.com/fusebox-dev/fusebox/pipeline"
	"github.com/fusebox-dev/fusebox/sinks"
)

// sigtermSLOs are the SLOs of the SIGTERM test: enough processors that a
// lost output would show.
const sigtermSLOs = `
slos:
  - name: availability
    burnrate: {min_events: 50}
  - name: latency
    tail: {budget: 20000, window: 5m}
  - name: corrections
    corrections: {window: 5m}
`

// sigtermConfig is an SLO file with its own group and output topics (the
// source topics are shared).
func sigtermConfig(brokers []string, prefix, extra string) string {
	return "version: sigterm-1\n" +
		"kafka: {brokers: [" + strings.Join(brokers, ", ") + "], group: " + prefix + "}\n" +
		// A long idle timeout: a source partition declared idle while its
		// backlog waits (a slow machine) makes its records late, and then
		// the two runs' verdicts differ for reasons other than the stop.
		"time: {idle_source_timeout: 5s, checkpoint_every: 300ms, allowed_lateness: 5s}\n" +
		"topics: {keyed_partitions: 3, keyed: " + prefix + ".keyed, state: " + prefix + ".state, verdicts: " + prefix +
		".verdicts, fuse: " + prefix + ".fuse, dlq: " + prefix + ".dlq}\n" +
		"signing: {insecure_unsigned: true}\n" + extra + sigtermSLOs
}

// TestKafkaRunSIGTERMLosesNothing publishes traffic, computes the verdicts of
// an uninterrupted reference run (in-process, its own group and topics),
// then runs `fusebox run` as a process on the same traffic and sends it
// SIGTERM while it is still working through the backlog. It must exit 0;
// afterwards, for every keyed partition, the keyed stage's committed
// offset equals the position of its saved checkpoint, and the sinks (the
// JSONL file and the verdict topic) hold every verdict of the reference
// run that the checkpoint covers (evaluated at or before its watermark),
// with the same ids, and nothing the reference run does not have.
func TestKafkaRunSIGTERMLosesNothing(t *testing.T) {
	k := testharness.StartBroker(t)
	dir := t.TempDir()
	sc := traffic.Demo()
	sc.Rate = 150
	sc.Duration = 25 * time.Minute
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	// The run under test, as a process.
	jsonl := filepath.Join(dir, "run.jsonl")
	cfgText := sigtermConfig(k.Brokers, "real", "sinks: {jsonl: {path: "+jsonl+"}}\nhttp: {listen: 127.0.0.1:0}\n")
	cfgPath := writeFile(t, dir, "real.yaml", cfgText)
	run := startRunProcess(t, cfgPath)
	stderr, addr := run.stderr, run.addr

	// The traffic arrives while the process runs (25 minutes of event time
	// in about 8 s of wall time), so the SIGTERM lands mid-stream.
	published := make(chan gen.Summary, 1)
	go func() { published <- publishScenarioPaced(t, k.Brokers, sc, start, 180) }()

	// Mid-run: a tenth of the reference's verdicts written, the rest not.
	var m map[string]float64
	verdicts := func() float64 {
		n := 0.0
		for k, v := range m {
			if strings.HasPrefix(k, "fusebox_verdicts_total{") {
				n += v
			}
		}
		return n
	}
	testharness.Eventually(t, 60*time.Second, "some verdicts", func() bool {
		m = scrape(t, addr)
		return verdicts() >= 100
	})
	run.sigterm(t)
	t.Logf("SIGTERM after %v verdicts, %v spans decoded, %v late, %v checkpoints", verdicts(),
		m["fusebox_spans_decoded_total"], m["fusebox_late_spans_total"], m["fusebox_checkpoints_total"])
	run.waitClean(t)
	if !strings.Contains(stderr.String(), "offsets committed") {
		t.Errorf("no clean-stop log line; stderr:\n%s", stderr.String())
	}
	// A normal shutdown logs no ERROR (a handler Start cut short by the
	// shutdown once did), and franz-go's chatter stays at debug.
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("ERROR line on a normal shutdown: %s", line)
		}
		if strings.Contains(line, `"msg":"kgo: `) && strings.Contains(line, `"level":"INFO"`) {
			t.Errorf("franz-go line at INFO: %s", line)
		}
	}

	// The reference: the same SLOs over all of the traffic, uninterrupted.
	sum := <-published
	t.Logf("published %d spans in %d messages and %d corrections", sum.Spans, sum.SpanMessages, sum.Corrections)
	refJSONL := filepath.Join(dir, "ref.jsonl")
	referenceRun(t, k.Brokers, sigtermConfig(k.Brokers, "ref", "sinks: {kafka: {enabled: false}, jsonl: {path: "+refJSONL+"}}\nhttp: {listen: \"\"}\n"),
		sum.EventEnd)
	refVerdicts, _ := readJSONL(t, refJSONL)
	if len(refVerdicts) < 100 {
		t.Fatalf("the reference run made only %d verdicts", len(refVerdicts))
	}

	// Committed offsets against the saved checkpoints.
	f, err := config.Parse("real.yaml", []byte(cfgText))
	if err != nil {
		t.Fatal(err)
	}
	wc, err := config.WorkerConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	cl := k.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	committed, err := kadm.NewClient(cl).FetchOffsets(ctx, "real.engine")
	if err != nil {
		t.Fatal(err)
	}
	store := statestore.New(cl, "real.state", k.Brokers)
	store.SetDeployment(f.Deployment(), pipeline.LegacyState(f), nil)
	watermark := map[int32]int64{}
	for p := int32(0); p < 3; p++ {
		snap, found, err := store.Load(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		c, hasCommit := committed.Lookup("real.keyed", p)
		if !found {
			if hasCommit && c.At >= 0 {
				t.Errorf("keyed partition %d: committed offset %d but no checkpoint", p, c.At)
			}
			continue
		}
		w, _, err := engine.RestoreWorker(wc, p, snap)
		if err != nil {
			t.Fatal(err)
		}
		if !hasCommit || c.At != w.NextOffset() {
			t.Errorf("keyed partition %d: committed offset %v (found %v), checkpoint position %d", p, c.At, hasCommit, w.NextOffset())
		}
		watermark[p] = w.Stats().Watermark
		t.Logf("keyed partition %d: checkpoint at offset %d, watermark +%v", p, w.NextOffset(), time.Duration(watermark[p]-start.UnixNano()))
	}

	// The sinks hold every reference verdict the checkpoints cover.
	got, _ := readJSONL(t, jsonl)
	inFile := map[string]bool{}
	for _, v := range got {
		inFile[v.ID] = true
	}
	inRef := map[string]bool{}
	for _, v := range refVerdicts {
		inRef[v.ID] = true
	}
	onKafka := map[string]bool{}
	for _, r := range k.ReadAll(t, "real.verdicts", len(got), 30*time.Second) {
		v, err := sinks.UnmarshalVerdictJSON(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		onKafka[v.ID] = true
	}
	covered, missing := 0, 0
	for _, v := range refVerdicts {
		wm, ok := watermark[verdictPartition(&v, 3)]
		if !ok || wm == math.MinInt64 || v.WindowEndUnixNano > wm {
			continue
		}
		covered++
		if !inFile[v.ID] || !onKafka[v.ID] {
			missing++
			if missing <= 5 {
				t.Errorf("verdict lost: %s %s %s at +%v (in JSONL %v, on Kafka %v)", v.Processor, v.Metric, v.Key,
					time.Duration(v.WindowEndUnixNano-start.UnixNano()), inFile[v.ID], onKafka[v.ID])
			}
		}
	}
	// Nothing the reference does not have either (determinism).
	for _, v := range got {
		if !inRef[v.ID] {
			t.Errorf("verdict %s (%s %s at +%v) is not in the reference run", v.ID, v.Processor, v.Key, time.Duration(v.WindowEndUnixNano-start.UnixNano()))
		}
	}
	t.Logf("reference %d verdicts, %d covered by the checkpoints; the interrupted run wrote %d; %d lost", len(refVerdicts), covered, len(got), missing)
	if covered == 0 || covered == len(refVerdicts) {
		t.Errorf("the checkpoints cover %d of %d reference verdicts: the test did not stop the run mid-way", covered, len(refVerdicts))
	}
}

// referenceRun runs the pipeline in-process on everything published until
// its keyed partitions' watermarks reach eventEnd (less the lateness), then
// stops it.
func referenceRun(t *testing.T, brokers []string, cfgText string, eventEnd time.Time) {
	t.Helper()
	f, err := config.Parse("ref.yaml", []byte(cfgText))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := pipeline.New(ctx, pipeline.Options{Config: f})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	want := eventEnd.Add(-f.Time.AllowedLateness - time.Second).UnixNano()
	testharness.Eventually(t, 90*time.Second, "the reference run to reach the end", func() bool {
		parts := p.Keyed().Partitions()
		if len(parts) < int(f.Topics.KeyedPartitions) {
			return false
		}
		for _, wm := range parts {
			if wm < want {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("reference run: %v", err)
	}
}
