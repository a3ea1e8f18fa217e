package observe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func serve(t *testing.T, opts Options) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Serve(ctx, "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := s.Wait(); err != nil {
			t.Errorf("Wait: %v", err)
		}
	})
	return s
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape GETs /metrics and parses the text format.
func scrape(t *testing.T, s *Server) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, "http://"+s.Addr()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d\n%s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams
}

// value returns the value of the series of family name whose labels are
// exactly labels ("k=v" pairs), and whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		var got []string
		for _, lp := range m.Label {
			if lp.GetValue() != "" {
				got = append(got, lp.GetName()+"="+lp.GetValue())
			}
		}
		if strings.Join(got, ",") != strings.Join(labels, ",") {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// pipelineSource stands in for a pipeline part: it reports fixed numbers
// and a scrape counter, from a second "worker" too.
func pipelineSource(scrapes *atomic.Int64, h *Histogram) SourceFunc {
	return func(s *Snapshot) {
		n := scrapes.Add(1)
		s.RecordsIn = append(s.RecordsIn, TopicCount{"otlp_spans", 1000 * n}, TopicCount{"fusebox.corrections", 30})
		s.DLQ = append(s.DLQ, KindCount{"malformed", 3}, KindCount{"too_large", 1})
		s.ConsumerLag = append(s.ConsumerLag, PartitionValue{"otlp_spans", 2, 40}, PartitionValue{"otlp_spans", 0, 7})
		s.Verdicts = append(s.Verdicts, VerdictCount{"tail", "breach", 4}, VerdictCount{"tail", "ok", 90})
		s.BreakerTargets = append(s.BreakerTargets, StateCount{"open", 2}, StateCount{"closed", 30})
		s.FuseCommands = append(s.FuseCommands, ActionCount{"trip", 5})
		s.BreakerOpen = append(s.BreakerOpen, SLOTargetCount{"chat-p999", "trip", "open", "i1", 2}, SLOTargetCount{"chat-p999", "trip", "half_open", "i1", 0})
		s.SinkRecordsOut = append(s.SinkRecordsOut, SinkCount{"kafka", "fusebox.verdicts", 10}, SinkCount{"clickhouse", "verdicts", 9})
		s.SinkErrors = append(s.SinkErrors, SinkCount{"clickhouse", "verdicts", 2})
		s.LateSpans += 6
		s.Duplicates += 8
		s.CardinalityOverflows = append(s.CardinalityOverflows, DimensionCount{"tenant", 12})
		s.Watermark = append(s.Watermark, PartitionTime{"otlp_spans", 2, 1_700_000_000_500_000_000}, PartitionTime{"otlp_spans", 5, 0})
		s.AddProcessingLatency(h.Snapshot())
		s.Extra = append(s.Extra,
			Sample{Name: "fusebox_sink_pending_records", Help: "Rows held.", Kind: GaugeSample, Labels: []Label{{"sink", "clickhouse"}}, Value: 17},
			Sample{Name: "fusebox_sink_pending_records", Kind: GaugeSample, Labels: []Label{{"sink", "kafka"}, {"topic", "fusebox.fuse"}}, Value: 3})
	}
}

// secondWorker reports the same keys again: counts add up, lag and
// watermark take the largest.
func secondWorker(h *Histogram) SourceFunc {
	return func(s *Snapshot) {
		s.RecordsIn = append(s.RecordsIn, TopicCount{"otlp_spans", 200})
		s.Verdicts = append(s.Verdicts, VerdictCount{"tail", "breach", 1})
		s.BreakerTargets = append(s.BreakerTargets, StateCount{"open", 1})
		s.ConsumerLag = append(s.ConsumerLag, PartitionValue{"otlp_spans", 2, 25})
		s.Watermark = append(s.Watermark, PartitionTime{"otlp_spans", 2, 1_600_000_000_000_000_000})
		s.LateSpans += 1
		s.AddProcessingLatency(h.Snapshot())
	}
}

func TestMetricsServeWhatTheSourcesGive(t *testing.T) {
	var scrapes atomic.Int64
	h1, _ := NewHistogram([]float64{0.01, 0.1, 1})
	h2, _ := NewHistogram([]float64{0.01, 0.1, 1})
	for _, v := range []float64{0.005, 0.01, 0.05, 0.5, 3} {
		h1.Observe(v)
	}
	h2.Observe(0.2)
	s := serve(t, Options{Sources: []Source{pipelineSource(&scrapes, h1), secondWorker(h2)}, Version: "v1.2.3"})

	fams := scrape(t, s)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{MetricBuildInfo, []string{"go_version=" + runtime.Version(), "revision=" + Revision(), "version=v1.2.3"}, 1},
		{MetricBreakerOpenTargets, []string{"action=trip", "incident=i1", "slo=chat-p999", "state=open"}, 2},
		{MetricBreakerOpenTargets, []string{"action=trip", "incident=i1", "slo=chat-p999", "state=half_open"}, 0},
		{MetricReady, nil, 1},
		{MetricRecordsIn, []string{"topic=otlp_spans"}, 1200},
		{MetricRecordsIn, []string{"topic=fusebox.corrections"}, 30},
		{MetricDLQRecords, []string{"kind=malformed"}, 3},
		{MetricDLQRecords, []string{"kind=too_large"}, 1},
		{MetricConsumerLag, []string{"partition=2", "topic=otlp_spans"}, 40},
		{MetricConsumerLag, []string{"partition=0", "topic=otlp_spans"}, 7},
		{MetricVerdicts, []string{"processor=tail", "status=breach"}, 5},
		{MetricVerdicts, []string{"processor=tail", "status=ok"}, 90},
		{MetricBreakerTargets, []string{"state=open"}, 3},
		{MetricBreakerTargets, []string{"state=closed"}, 30},
		{MetricFuseCommands, []string{"action=trip"}, 5},
		{MetricSinkRecords, []string{"destination=fusebox.verdicts", "sink=kafka"}, 10},
		{MetricSinkRecords, []string{"destination=verdicts", "sink=clickhouse"}, 9},
		{MetricSinkErrors, []string{"destination=verdicts", "sink=clickhouse"}, 2},
		{MetricLateSpans, nil, 7},
		{MetricDuplicates, nil, 8},
		{MetricCardinalityOverflows, []string{"dimension=tenant"}, 12},
		{MetricWatermark, []string{"partition=2", "topic=otlp_spans"}, 1_700_000_000.5},
		{"fusebox_sink_pending_records", []string{"sink=clickhouse"}, 17},
		{"fusebox_sink_pending_records", []string{"sink=kafka", "topic=fusebox.fuse"}, 3},
	} {
		got, ok := value(fams, tc.name, tc.labels...)
		if !ok {
			t.Errorf("%s{%s} missing", tc.name, strings.Join(tc.labels, ","))
			continue
		}
		if math.Abs(got-tc.want) > 1e-6*math.Abs(tc.want) {
			t.Errorf("%s{%s} = %v, want %v", tc.name, strings.Join(tc.labels, ","), got, tc.want)
		}
	}
	if _, ok := value(fams, MetricWatermark, "partition=5", "topic=otlp_spans"); ok {
		t.Error("a partition without a watermark is exported")
	}
	for _, f := range Families() {
		mf := fams[f.Name]
		if mf == nil {
			t.Errorf("family %s missing", f.Name)
			continue
		}
		if got := strings.ToLower(mf.GetType().String()); got != f.Type {
			t.Errorf("%s has type %s, want %s", f.Name, got, f.Type)
		}
		for _, m := range mf.Metric {
			if len(m.Label) != len(f.Labels) {
				t.Errorf("%s series has %d labels, want %v", f.Name, len(m.Label), f.Labels)
			}
			for i, lp := range m.Label {
				if i < len(f.Labels) && !containsString(f.Labels, lp.GetName()) {
					t.Errorf("%s has label %s, want only %v", f.Name, lp.GetName(), f.Labels)
				}
			}
		}
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("%s missing: the Go and process collectors are not registered", name)
		}
	}

	hist := fams[MetricProcessingLatency].Metric[0].Histogram
	if hist.GetSampleCount() != 6 || math.Abs(hist.GetSampleSum()-(0.005+0.01+0.05+0.5+3+0.2)) > 1e-9 {
		t.Errorf("latency count %d sum %v, want 6 and 3.765", hist.GetSampleCount(), hist.GetSampleSum())
	}
	wantCum := map[float64]uint64{0.01: 2, 0.1: 3, 1: 5} // cumulative; 0.01 is inclusive
	for _, b := range hist.Bucket {
		if w, ok := wantCum[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("latency bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}

	// Every scrape asks the sources again.
	fams = scrape(t, s)
	if got, _ := value(fams, MetricRecordsIn, "topic=otlp_spans"); got != 2200 {
		t.Errorf("second scrape: records in %v, want 2200", got)
	}
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestReadyzFollowsTheReadinessFunc(t *testing.T) {
	var ready atomic.Bool
	s := serve(t, Options{Ready: func() error {
		if !ready.Load() {
			return errors.New("consumer group fusebox.engine not joined")
		}
		return nil
	}})
	base := "http://" + s.Addr()
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q, want 200 ok", code, body)
	}
	code, body := get(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "consumer group fusebox.engine not joined") {
		t.Errorf("/readyz before ready: %d %q, want 503 with the reason", code, body)
	}
	if v, _ := value(scrape(t, s), MetricReady); v != 0 {
		t.Errorf("%s = %v before ready, want 0", MetricReady, v)
	}
	ready.Store(true)
	if code, body := get(t, base+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz when ready: %d %q, want 200 ready", code, body)
	}
	if v, _ := value(scrape(t, s), MetricReady); v != 1 {
		t.Errorf("%s = %v when ready, want 1", MetricReady, v)
	}
	if code, _ := get(t, base+"/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing: %d, want 404", code)
	}
}

func TestPprofOnlyWhenEnabled(t *testing.T) {
	off := serve(t, Options{})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, _ := get(t, "http://"+off.Addr()+p); code != http.StatusNotFound {
			t.Errorf("pprof off: %s answers %d, want 404", p, code)
		}
	}
	on := serve(t, Options{Pprof: true})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap?debug=1"} {
		if code, body := get(t, "http://"+on.Addr()+p); code != http.StatusOK || body == "" {
			t.Errorf("pprof on: %s answers %d (%d bytes), want 200 with a body", p, code, len(body))
		}
	}
}

// A bad sample is logged and the rest of the scrape is served.
func TestBadSamplesAreLoggedNotFatal(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	h, _ := NewHistogram([]float64{1, 2})
	other, _ := NewHistogram([]float64{1, 3})
	s := serve(t, Options{Logger: logger, Sources: []Source{SourceFunc(func(s *Snapshot) {
		s.RecordsIn = append(s.RecordsIn, TopicCount{"otlp_spans", 5})
		s.AddProcessingLatency(h.Snapshot())
		s.AddProcessingLatency(other.Snapshot())
		s.Extra = append(s.Extra,
			Sample{Name: "bad name", Value: 1},
			Sample{Name: MetricRecordsIn, Labels: []Label{{"topic", "x"}}, Value: 1},
			Sample{Name: "fusebox_ok_total", Labels: []Label{{"__reserved", "x"}}, Value: 1},
			Sample{Name: "fusebox_ok_total", Value: 2})
	})}})
	fams := scrape(t, s)
	if v, _ := value(fams, MetricRecordsIn, "topic=otlp_spans"); v != 5 {
		t.Errorf("records in %v, want 5 despite the bad samples", v)
	}
	if v, ok := value(fams, "fusebox_ok_total"); !ok || v != 2 {
		t.Errorf("fusebox_ok_total %v (present %v), want 2", v, ok)
	}
	if v, ok := value(fams, MetricRecordsIn, "topic=x"); ok {
		t.Errorf("an Extra sample overrode a fixed family: %v", v)
	}
	for _, want := range []string{`\"bad name\" is not a valid metric name`, "belongs to fusebox's fixed metrics", `\"__reserved\" is not a valid label name`, "different buckets"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

func TestServeStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Serve(ctx, "127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if code, _ := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d", code)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Wait after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop after its context was cancelled")
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("still answering after stop")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after stop: %v", err)
	}
}

func TestServeErrors(t *testing.T) {
	if _, err := Serve(context.Background(), "nohost", Options{}); err == nil || !strings.Contains(err.Error(), `"nohost"`) {
		t.Errorf("bad address: %v, want an error naming it", err)
	}
	if _, err := Serve(context.Background(), "127.0.0.1:0", Options{Sources: []Source{nil}}); err == nil || !strings.Contains(err.Error(), "Sources[0]") {
		t.Errorf("nil source: %v, want an error naming Sources[0]", err)
	}
	if err := (Options{ShutdownTimeout: -time.Second}).Validate(); err == nil {
		t.Error("negative ShutdownTimeout accepted")
	}
}

// TestRoutesServeBesideTheEndpoints checks Options.Routes: extra handlers
// on the same listener (the live page), nothing of them without Routes,
// and a pattern that conflicts with an endpoint is an error, not a panic.
func TestRoutesServeBesideTheEndpoints(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "page") })
	off := serve(t, Options{})
	if code, _ := get(t, "http://"+off.Addr()+"/ui/"); code != http.StatusNotFound {
		t.Errorf("no routes: /ui/ answers %d, want 404", code)
	}
	on := serve(t, Options{Routes: map[string]http.Handler{"GET /ui/": page}})
	if code, body := get(t, "http://"+on.Addr()+"/ui/x"); code != http.StatusOK || body != "page" {
		t.Errorf("/ui/x: %d %q", code, body)
	}
	if code, _ := get(t, "http://"+on.Addr()+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz beside the routes: %d", code)
	}
	for _, bad := range []map[string]http.Handler{{"GET /metrics": page}, {"GET /x": nil}} {
		if _, err := NewHandler(Options{Routes: bad}); err == nil {
			t.Errorf("routes %v accepted", bad)
		}
	}
}
