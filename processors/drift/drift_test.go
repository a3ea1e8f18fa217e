package drift

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
	"github.com/fusebox-dev/fusebox/stats"
)

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"metric", func(c *Config) { c.Metric = "latency" }, "metric"},
		{"mode", func(c *Config) { c.Mode = "ab" }, "mode"},
		{"window", func(c *Config) { c.Window = 90 * time.Second }, "window"},
		{"reference window", func(c *Config) { c.ReferenceWindow = 0 }, "reference_window"},
		{"alpha", func(c *Config) { c.Alpha = 1 }, "alpha"},
		{"false alarms", func(c *Config) { c.FalseAlarms = 0 }, "false_alarms"},
		{"detector", func(c *Config) { c.Detectors = []string{"adwin"} }, "detectors"},
		{"repeated detector", func(c *Config) { c.Detectors = []string{"ks", "ks"} }, "detectors"},
		{"canary cusum", func(c *Config) { c.Mode = ModeCanary; c.Detectors = []string{"cusum"} }, "detectors"},
		{"step", func(c *Config) { c.Step = 25 * time.Second }, "step"},
		{"max window", func(c *Config) { c.MaxWindow = time.Minute }, "max_window"},
		{"min window samples", func(c *Config) { c.MinWindowSamples = 0 }, "min_window_samples"},
		{"cusum shift", func(c *Config) { c.CUSUMShift = 0 }, "cusum_shift"},
		{"sequential min reference", func(c *Config) { c.SequentialMinReference = 3 }, "sequential_min_reference"},
		{"slice quantile", func(c *Config) { c.SliceQuantile = 0.5 }, "slice_quantile"},
		{"slice factor", func(c *Config) { c.SliceFactor = 1 }, "slice_factor"},
		{"slice tail", func(c *Config) { c.SliceTail = "left" }, "slice_tail"},
		{"consecutive", func(c *Config) { c.Consecutive = -1 }, "consecutive"},
		{"min effect", func(c *Config) { c.MinEffect = ptr(1) }, "min_effect"},
		{"min samples", func(c *Config) { c.MinSamples = 4 }, "min_samples"},
		{"cap", func(c *Config) { c.MaxSamplesPerSlot = 5 }, "max_samples_per_slot"},
		{"same variants", func(c *Config) { c.Mode = ModeCanary; c.BaselineVariant = "canary" }, "canary_variant"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			_, err := New(processors.Meta{SLO: "s"}, c)
			proctest.WantConfigErrors(t, err, tc.field)
		})
	}
	fast := DefaultConfig() // every 1s: the step's default follows (Every)
	fast.Window, fast.Every, fast.ReferenceWindow = 4*time.Second, time.Second, 4*time.Second
	for _, c := range []Config{DefaultConfig(), canaryConfig(), fast} {
		if _, err := New(processors.Meta{SLO: "s"}, c); err != nil {
			t.Fatalf("valid config rejected: %v", err)
		}
	}
	if p, _ := New(processors.Meta{SLO: "s"}, fast); p.Interval() != time.Second || fast.maxWindow() != 24*time.Second {
		t.Fatalf("every 1s: interval %v, max window %v; want 1s and 6 × window", p.Interval(), fast.maxWindow())
	}
	if p, _ := New(processors.Meta{SLO: "s"}, DefaultConfig()); p.Interval() != 15*time.Second {
		t.Fatalf("defaults: interval %v, want the 15s step", p.Interval())
	}
}

func TestMetricName(t *testing.T) {
	c := DefaultConfig()
	if got := MetricName(c); got != "ks_confidence" {
		t.Errorf("reference: %q", got)
	}
	c.Mode, c.Metric = ModeCanary, processors.MetricOutputTokens
	if got := MetricName(c); got != "canary_ks_output_tokens" {
		t.Errorf("canary: %q", got)
	}
}

// TestConsecutiveRule runs the decision rule over scripted test results
// with alpha 0.01, min_effect 0.1, k 3.
func TestConsecutiveRule(t *testing.T) {
	type step struct {
		d, p  float64
		count int
		want  schemas.Status
	}
	steps := []step{
		{0.05, 0.5, 0, schemas.StatusOK},
		{0.2, 1e-6, 1, schemas.StatusWarn},     // significant and large
		{0.09, 1e-9, 0, schemas.StatusOK},      // significant but below min_effect: resets
		{0.3, 0.02, 0, schemas.StatusOK},       // large but not significant
		{0.15, 0.0099, 1, schemas.StatusWarn},  //
		{0.1, 1e-4, 2, schemas.StatusWarn},     // d == min_effect counts
		{0.25, 1e-20, 3, schemas.StatusBreach}, // the k-th in a row
		{0.25, 1e-20, 4, schemas.StatusBreach}, // stays breached
		{0.25, 0.01, 0, schemas.StatusOK},      // p == alpha is not significant
	}
	count := 0
	for i, s := range steps {
		count = nextCount(count, significant(s.d, s.p, 0.01, 0.1))
		if got := decide(count, 3); count != s.count || got != s.want {
			t.Fatalf("step %d (d=%v p=%v): count %d status %s, want %d %s", i, s.d, s.p, count, got, s.count, s.want)
		}
	}
	if decide(1, 1) != schemas.StatusBreach {
		t.Fatal("k=1: the first significant evaluation must breach")
	}
}

// mkSpans makes n spans of key with confidence vals(i), one every gap ns
// from start.
func mkSpans(key schemas.Key, start, gap int64, n int, id byte, vals func(i int) float64) []schemas.Span {
	out := make([]schemas.Span, n)
	for i := range out {
		s := &out[i]
		s.Key, s.EndUnixNano = key, start+int64(i)*gap
		s.Confidence, s.Has = vals(i), schemas.HasConfidence
		s.TraceID[0], s.TraceID[1], s.TraceID[2], s.SpanID[0] = byte(i), byte(i>>8), byte(i>>16), id
	}
	return out
}

func TestCanaryPairsVariantsAndIgnoresOthers(t *testing.T) {
	cfg := canaryConfig()
	cfg.Consecutive, cfg.MinEffect = 3, ptr(0.1) // a warn first, the threshold reported
	p := newDrift(t, cfg)
	k := schemas.Key{Tenant: "t", Service: "s", Model: "m"}
	base, can, shadow, lone := k, k, k, k
	base.Variant, can.Variant, shadow.Variant = "baseline", "canary", "shadow"
	lone.Model, lone.Variant = "other", "canary" // a canary without baseline
	sec := int64(time.Second)
	spread := func(i int) float64 { return float64(i%100) / 100 }
	proctest.ObserveAll(p,
		mkSpans(base, t0, sec, 300, 1, spread),
		mkSpans(can, t0, sec, 300, 2, func(i int) float64 { return spread(i) / 2 }), // shifted down
		mkSpans(shadow, t0, sec, 300, 3, spread),
		mkSpans(lone, t0, sec, 300, 4, spread))
	if p.Keys() != 3 {
		t.Fatalf("%d keys, want 3 (the shadow variant is ignored)", p.Keys())
	}
	var col proctest.Collector
	p.Evaluate(t0+int64(5*time.Minute), &col)
	proctest.ValidateAll(t, col.Verdicts)
	if len(col.Verdicts) != 2 || col.Verdicts[0].Key != can || col.Verdicts[1].Key != lone {
		t.Fatalf("verdicts %v; want one per canary key, in key order", col.Verdicts)
	}
	if v := col.Verdicts[1]; v.Status != schemas.StatusInsufficientData || v.Value != 0 || v.Method != MethodNone {
		t.Fatalf("canary without baseline: %+v", v)
	}
	v := col.Verdicts[0]
	if v.Status != schemas.StatusWarn || v.Metric != "canary_ks_confidence" || v.Method != stats.MethodKSExact || v.Threshold != 0.1 {
		t.Fatalf("shifted canary: %+v", v)
	}
	// Half the canary's values are below 0.5 vs all the baseline's below
	// 1: D = 0.5 at x = 0.49; Hodges–Lehmann sees the downward shift.
	if d, _ := v.Detail(DetailD); d != 0.5 || v.Value != d {
		t.Fatalf("d = %v, value %v; want 0.5", d, v.Value)
	}
	if hl, _ := v.Detail(DetailHLShift); hl >= 0 {
		t.Fatalf("hl_shift %v, want negative (canary lower)", hl)
	}
	if mp, _ := v.Detail(DetailMWP); mp > 1e-6 {
		t.Fatalf("mw_p %v", mp)
	}
	if nc, _ := v.Detail(DetailNCurrent); nc != 300 {
		t.Fatalf("n_current %v", nc)
	}
}

func TestInsufficientDataResetsTheCount(t *testing.T) {
	cfg := canaryConfig()
	cfg.Consecutive = 3
	p := newDrift(t, cfg) // window 5m, min_samples 50, k 3
	k := schemas.Key{Tenant: "t", Service: "s", Model: "m"}
	base, can := k, k
	base.Variant, can.Variant = "baseline", "canary"
	minute := int64(time.Minute)
	low := func(i int) float64 { return float64(i%100) / 400 }      // [0, 0.25)
	high := func(i int) float64 { return 0.5 + float64(i%100)/200 } // [0.5, 1): D = 1
	// The baseline runs throughout at 1/s; the canary at 30/min in
	// minutes 0-2, then from minute 8 on.
	proctest.ObserveAll(p, mkSpans(base, t0, minute/60, 16*60, 1, low),
		mkSpans(can, t0, minute/30, 3*30, 2, high),
		mkSpans(can, t0+8*minute, minute/30, 8*30, 3, high))
	var got []string
	for m := int64(1); m <= 12; m++ {
		var col proctest.Collector
		p.Evaluate(t0+m*minute, &col)
		proctest.ValidateAll(t, col.Verdicts)
		if len(col.Verdicts) == 0 {
			got = append(got, "none")
			continue
		}
		n, _ := col.Verdicts[0].Detail(DetailConsecutive)
		got = append(got, string(col.Verdicts[0].Status)[:2]+string(rune('0'+int(n))))
	}
	// 30 canary values (< 50) at minute 1; 60 and 90 at 2..6; 30 again at
	// 7 (insufficient: the count of 5 resets), none at 8, 30 at 9, and the
	// rule starts again from 0 at 10.
	want := "in0 wa1 wa2 br3 br4 br5 in0 none in0 wa1 wa2 br3"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("statuses+counts\n got %s\nwant %s", s, want)
	}
}

// ptr returns a pointer to v (Config's optional fields).
func ptr(v float64) *float64 { return &v }
