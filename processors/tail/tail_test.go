package tail

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

func testConfig() Config {
	c := DefaultConfig()
	c.Budget = 6000 // ms; the generated traffic's true P99.9 is about 3770 ms
	return c
}

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"no budget", func(c *Config) { c.Budget = 0 }, "budget"},
		{"metric", func(c *Config) { c.Metric = processors.MetricConfidence }, "metric"},
		{"p", func(c *Config) { c.P = 1 }, "p"},
		{"threshold above p", func(c *Config) { c.ThresholdQuantile = 0.9995 }, "threshold_quantile"},
		{"window not a multiple", func(c *Config) { c.Window = 90 * time.Second }, "window"},
		{"every", func(c *Config) { c.Every = 0 }, "every"},
		{"min exceedances", func(c *Config) { c.MinExceedances = 5 }, "min_exceedances"},
		{"min samples", func(c *Config) { c.MinSamples = 0 }, "min_samples"},
		{"cap", func(c *Config) { c.MaxSamplesPerSlot = 10 }, "max_samples_per_slot"},
		{"level", func(c *Config) { c.Level = 1 }, "level"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			tc.edit(&c)
			_, err := New(processors.Meta{SLO: "s"}, c)
			proctest.WantConfigErrors(t, err, tc.field)
		})
	}
	if _, err := New(processors.Meta{SLO: "s"}, testConfig()); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
}

func TestMetricName(t *testing.T) {
	cases := []struct {
		p    float64
		m    processors.Metric
		want string
	}{
		{0.999, processors.MetricDuration, "p999_duration_ms"},
		{0.99, processors.MetricTTFT, "p99_ttft_ms"},
		{0.9999, processors.MetricTPOT, "p9999_tpot_ms"},
		{0.9995, processors.MetricDuration, "p9995_duration_ms"},
		{0.995, processors.MetricDuration, "p995_duration_ms"},
		{0.95, processors.MetricDuration, "p95_duration_ms"},
		{0.5, processors.MetricDuration, "p50_duration_ms"},
		{0.05, processors.MetricDuration, "p5_duration_ms"},
	}
	for _, tc := range cases {
		if got := MetricName(Config{P: tc.p, Metric: tc.m}); got != tc.want {
			t.Errorf("MetricName(%v, %s) = %q, want %q", tc.p, tc.m, got, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		est, lower, budget float64
		want               schemas.Status
	}{
		{4000, 3500, 6000, schemas.StatusOK},
		{6000, 5000, 6000, schemas.StatusOK}, // at budget is within budget
		{6500, 5000, 6000, schemas.StatusWarn},
		{6500, 6000, 6000, schemas.StatusWarn}, // lower bound must exceed budget
		{9000, 6000.5, 6000, schemas.StatusBreach},
	}
	for _, tc := range cases {
		if got := decide(tc.est, tc.lower, tc.budget); got != tc.want {
			t.Errorf("decide(%v, %v, %v) = %s, want %s", tc.est, tc.lower, tc.budget, got, tc.want)
		}
	}
}

// spansAt makes n spans of one key at event times start + i*gap with the
// given latencies (cycled).
func spansAt(key schemas.Key, start, gap int64, n int, lat func(i int) float64) []schemas.Span {
	out := make([]schemas.Span, n)
	for i := range out {
		s := &out[i]
		s.Key = key
		s.EndUnixNano = start + int64(i)*gap
		s.DurationMs = lat(i)
		s.TraceID[0], s.TraceID[1], s.TraceID[2] = byte(i), byte(i>>8), byte(i>>16)
		s.SpanID[0] = 1
	}
	return out
}

func TestInsufficientThenEmpiricalThenGPD(t *testing.T) {
	key := schemas.Key{Tenant: "t", Service: "s", Model: "m"}
	// An exponential tail above 100 ms (mean excess 100 ms) drawn at the
	// quasi-random levels frac(i*phi): true P99.9 = 100 + 100*ln(1000).
	lat := func(i int) float64 {
		u := math.Mod(float64(i+1)*0.6180339887498949, 1)
		return 100 - 100*math.Log1p(-u)
	}
	const truth = 790.7755278982137
	cases := []struct {
		name      string
		perMinute int
		status    schemas.Status
		method    string
	}{
		{"below min_samples", 15, schemas.StatusInsufficientData, MethodNone}, // 150 < 200
		{"few exceedances", 60, schemas.StatusOK, stats.MethodEmpirical},      // 600: 30 above u < 50
		{"gpd", 300, schemas.StatusOK, stats.MethodGPDProfile},                // 3000: 150 above u
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			c.Budget = 5000
			p := newTail(t, c)
			gap := int64(time.Minute) / int64(tc.perMinute)
			spans := spansAt(key, t0, gap, tc.perMinute*10, lat)
			proctest.ObserveAll(p, spans)
			var col proctest.Collector
			p.Evaluate(t0+int64(10*time.Minute), &col)
			if len(col.Verdicts) != 1 {
				t.Fatalf("%d verdicts, want 1", len(col.Verdicts))
			}
			v := col.Verdicts[0]
			proctest.ValidateAll(t, col.Verdicts)
			if v.Status != tc.status || v.Method != tc.method {
				t.Fatalf("status %s method %s, want %s %s", v.Status, v.Method, tc.status, tc.method)
			}
			if v.Metric != "p999_duration_ms" || v.Processor != "tail" || v.Threshold != 5000 || v.N != int64(tc.perMinute*10) {
				t.Fatalf("verdict %+v", v)
			}
			if n, _ := v.Detail(DetailN); n != float64(tc.perMinute*10) {
				t.Fatalf("detail n = %v", n)
			}
			if v.Status == schemas.StatusInsufficientData {
				if v.Value != 0 || v.Lower != 0 || v.Upper != 0 {
					t.Fatalf("insufficient_data with numbers: %+v", v)
				}
				return
			}
			if !(v.Lower <= v.Value && v.Value <= v.Upper) || math.Abs(v.Value-truth) > 0.1*truth {
				t.Fatalf("estimate %v [%v, %v], want %v to 10%% inside its interval", v.Value, v.Lower, v.Upper, truth)
			}
			emp, _ := v.Detail(DetailEmpirical)
			if math.Abs(emp-truth) > 0.1*truth || v.IntervalLevel != 0.95 {
				t.Fatalf("empirical_quantile %v level %v", emp, v.IntervalLevel)
			}
			if tc.method == stats.MethodEmpirical && v.Value != emp {
				t.Fatalf("empirical method: value %v differs from the empirical_quantile detail %v", v.Value, emp)
			}
			if tc.method == stats.MethodGPDProfile {
				// An exponential tail: GPD shape 0, scale = the mean excess.
				xi, _ := v.Detail(DetailXi)
				sigma, _ := v.Detail(DetailSigma)
				if math.Abs(xi) > 0.15 || math.Abs(sigma-100) > 20 {
					t.Fatalf("xi %v sigma %v, want about 0 and 100", xi, sigma)
				}
				// The evidence: the exceedances of the fit, thinned, sorted,
				// positive, with plotting positions in (0, 1).
				nex, _ := v.Detail(DetailNExceedances)
				ev := v.Evidence
				if ev == nil || ev.Exceedances.N != int(nex) || len(ev.Exceedances.X) != min(int(nex), schemas.MaxEvidencePoints) {
					t.Fatalf("evidence %+v, want the %v exceedances thinned to at most %d", ev, nex, schemas.MaxEvidencePoints)
				}
				x, pp := ev.Exceedances.X, ev.Exceedances.P
				for i := range x {
					if x[i] <= 0 || i > 0 && (x[i] < x[i-1] || pp[i] <= pp[i-1]) || pp[i] <= 0 || pp[i] >= 1 {
						t.Fatalf("exceedance point %d: (%v, %v) after (%v, %v)", i, x[i], pp[i], x[max(i-1, 0)], pp[max(i-1, 0)])
					}
				}
			} else if v.Evidence != nil {
				t.Fatalf("empirical verdict with GPD evidence %+v", v.Evidence)
			}
		})
	}
}

func TestMetricSelectionSkipsMissingValues(t *testing.T) {
	c := testConfig()
	c.Metric = processors.MetricTTFT
	c.MinSamples = 1
	p := newTail(t, c)
	key := schemas.Key{Tenant: "t"}
	spans := spansAt(key, t0, int64(time.Second), 300, func(i int) float64 { return 1000 })
	for i := range spans {
		switch i % 3 {
		case 0: // has TTFT
			spans[i].Has |= schemas.HasTTFT
			spans[i].TTFTMs = 200 + float64(i)
		case 1: // no TTFT: skipped
			spans[i].TTFTMs = 1e9
		case 2: // NaN TTFT: skipped
			spans[i].Has |= schemas.HasTTFT
			spans[i].TTFTMs = math.NaN()
		}
		p.ObserveSpan(key, &spans[i])
	}
	var col proctest.Collector
	p.Evaluate(t0+int64(5*time.Minute), &col)
	proctest.ValidateAll(t, col.Verdicts)
	v := col.Verdicts[0]
	if v.Metric != "p999_ttft_ms" || v.N != 100 || v.Value > 500 {
		t.Fatalf("metric %s n %d value %v; want p999_ttft_ms over the 100 spans with a TTFT (<= 497 ms)", v.Metric, v.N, v.Value)
	}
}

func TestEvictionForgetsIdleKeys(t *testing.T) {
	c := testConfig()
	c.MinSamples = 1
	p := newTail(t, c)
	a, b := schemas.Key{Tenant: "a"}, schemas.Key{Tenant: "b"}
	for _, k := range []schemas.Key{b, a} {
		spans := spansAt(k, t0, int64(time.Second), 60, func(i int) float64 { return float64(i) })
		proctest.ObserveAll(p, spans)
	}
	var col proctest.Collector
	minute := int64(time.Minute)
	for m := int64(1); m <= 11; m++ {
		p.Evaluate(t0+m*minute, &col)
	}
	// Minute 0 is in the windows ending at 1..10 min: 10 evaluations × 2
	// keys, a before b; then nothing, and no state left.
	if len(col.Verdicts) != 20 || p.Keys() != 0 {
		t.Fatalf("%d verdicts, %d keys left; want 20 and 0", len(col.Verdicts), p.Keys())
	}
	if col.Verdicts[0].Key != a || col.Verdicts[1].Key != b {
		t.Fatalf("verdicts not in key order: %v, %v", col.Verdicts[0].Key, col.Verdicts[1].Key)
	}
}

func TestCappedSlotsGiveUniformSample(t *testing.T) {
	// One busy minute and nine quiet ones; with a cap of 100 per slot the
	// busy minute must not be under-weighted: every slot is thinned to the
	// busy slot's rate.
	c := testConfig()
	c.MaxSamplesPerSlot = 100
	c.MinSamples = 10
	c.MinExceedances = 10
	p := newTail(t, c)
	key := schemas.Key{Tenant: "t"}
	busy := spansAt(key, t0, int64(time.Minute)/1000, 1000, func(i int) float64 { return 5000 })
	quiet := spansAt(key, t0+int64(time.Minute), int64(time.Second), 540, func(i int) float64 { return 100 })
	for i := range quiet {
		quiet[i].SpanID[0] = 2 // distinct from the busy spans' ids
	}
	for _, s := range [][]schemas.Span{busy, quiet} {
		proctest.ObserveAll(p, s)
	}
	var col proctest.Collector
	p.Evaluate(t0+int64(10*time.Minute), &col)
	v := col.Verdicts[0]
	proctest.ValidateAll(t, col.Verdicts)
	n, _ := v.Detail(DetailN)
	rate, _ := v.Detail(DetailSampleRate)
	kept, _ := v.Detail(DetailKept)
	// 1540 spans, 1000 of them slow (65%); sampled at about 100/1000.
	if n != 1540 || rate > 0.2 || rate < 0.05 || math.Abs(kept-1540*rate) > 40 {
		t.Fatalf("n %v rate %v kept %v", n, rate, kept)
	}
	emp, _ := v.Detail(DetailEmpirical)
	if emp != 5000 {
		t.Fatalf("empirical P99.9 %v, want 5000 (the busy minute's latency)", emp)
	}
}

func TestSnapshotRejectsDamage(t *testing.T) {
	tr := baseTraffic(7)
	tr.duration = 12 * time.Minute
	p := newTail(t, testConfig())
	var col proctest.Collector
	proctest.Replay(p, tr.spans(), 0, 0, t0+int64(11*time.Minute), &col)
	snap, _ := p.MarshalBinary()
	proctest.RejectsDamage(t, func() processors.Processor { return newTail(t, testConfig()) }, snap, ErrSnapshot)
	other := testConfig()
	other.MaxSamplesPerSlot = 500
	if err := newTail(t, other).UnmarshalBinary(snap); !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), "max_samples_per_slot") {
		t.Fatalf("snapshot restored into another cap: %v", err)
	}
}

func TestSnapshotRoundTripContinuesIdentically(t *testing.T) {
	tr := baseTraffic(3)
	tr.duration = 40 * time.Minute
	tr.incident, tr.incidentKey, tr.incidentAt, tr.fraction, tr.xm, tr.alpha = true, 1, 25*time.Minute, 0.03, 3000, 1.2
	spans := tr.spans()
	newP := func() processors.Processor { return newTail(t, testConfig()) }
	from, to := proctest.Bounds(spans, int64(testConfig().Every))
	whole := proctest.Drive(t, newP(), spans, from, to)
	for _, cutMin := range []int64{3, 17, 26} {
		proctest.Resume(t, newP, proctest.SpanEvents(spans), from, to, t0+cutMin*int64(time.Minute), whole)
	}
}
