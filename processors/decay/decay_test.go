package decay

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/processors/window"
	"github.com/fusebox-dev/fusebox/schemas"
)

var meta = processors.Meta{SLO: "quality", ConfigVersion: "v1"}

const (
	hour     = int64(time.Hour)
	twoHours = 2 * hour
)

func mustNew(t testing.TB, cfg Config) *Processor {
	t.Helper()
	p, err := New(meta, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestJudgeTable(t *testing.T) {
	c := DefaultConfig() // limit -0.12, alpha 0.01
	for _, tc := range []struct {
		name             string
		decline, p, high float64
		want             schemas.Status
	}{
		{"big significant decline", -0.2, 1e-6, -0.1, schemas.StatusBreach},
		{"just past the limit, significant", -0.1201, 0.009, -1e-9, schemas.StatusBreach},
		{"past the limit, OLS not significant", -0.2, 0.02, -0.1, schemas.StatusWarn},
		{"past the limit, Theil–Sen bound reaches 0", -0.2, 1e-6, 0, schemas.StatusWarn},
		{"half the limit, significant", -0.07, 1e-4, -0.01, schemas.StatusWarn},
		{"half the limit, not significant", -0.07, 0.5, 0.1, schemas.StatusOK},
		{"small significant decline", -0.05, 1e-9, -0.01, schemas.StatusOK},
		{"exactly at the limit is not below it", -0.12, 1e-9, -0.1, schemas.StatusWarn},
		{"rising score", 0.3, 1e-9, 0.4, schemas.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Judge(tc.decline, tc.p, tc.high); got != tc.want {
				t.Fatalf("Judge(%v, %v, %v) = %s, want %s", tc.decline, tc.p, tc.high, got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	bad := DefaultConfig()
	bad.Metric = processors.MetricDuration
	bad.Limit = 0.1
	bad.TheilSenMaxPoints = 1_000_000
	proctest.WantConfigErrors(t, bad.Validate(), "metric", "limit", "theil_sen_max_points")
	if _, err := New(meta, bad); err == nil {
		t.Fatal("New accepted a bad config")
	}
}

// TestExactLine: scores on an exact line fall 0.3 per hour; every estimate
// recovers it, and the decline over the 1h window is -0.3.
func TestExactLine(t *testing.T) {
	p := mustNew(t, DefaultConfig())
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 120 {
		end := t0 + int64(i)*30*int64(time.Second) // every 30 s over the hour
		s := proctest.NewSpan(r, keyLarge, "chat", end, 100)
		s.Alignment = 0.9 - 0.3*float64(end-t0)/float64(hour)
		s.Has |= schemas.HasAlignment
		p.ObserveSpan(s.Key, &s)
	}
	var out proctest.Collector
	p.Evaluate(t0+hour, &out)
	if len(out.Verdicts) != 1 {
		t.Fatalf("%d verdicts", len(out.Verdicts))
	}
	v := out.Verdicts[0]
	if v.Metric != "decline_alignment" || v.Status != schemas.StatusBreach || v.N != 120 {
		t.Fatalf("got %s", proctest.Line(&v, t0))
	}
	for _, c := range []struct {
		name string
		want float64
	}{{"ols_slope_per_h", -0.3}, {"theil_slope_per_h", -0.3}, {"theil_low", -0.3}, {"theil_high", -0.3}, {"theil_decline", -0.3}, {"span_h", 1}} {
		if got, _ := v.Detail(c.name); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	if math.Abs(v.Value+0.3) > 1e-9 || math.Abs(v.Lower+0.3) > 1e-9 || math.Abs(v.Upper+0.3) > 1e-9 || v.IntervalLevel != 0.95 {
		t.Errorf("value %v interval [%v, %v] level %v, want -0.3 [-0.3, -0.3] 0.95", v.Value, v.Lower, v.Upper, v.IntervalLevel)
	}
}

// TestDecayRate: confidence y = 0.9·exp(-0.5 t), t in hours, with some
// zeros mixed in: lambda 0.5 per hour, zeros excluded and counted.
func TestDecayRate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Metric = processors.MetricConfidence
	p := mustNew(t, cfg)
	r := rand.New(rand.NewPCG(2, 2))
	for i := range 100 {
		end := t0 + int64(i)*36*int64(time.Second)
		s := proctest.NewSpan(r, keySmall, "chat", end, 100)
		s.Confidence = 0.9 * math.Exp(-0.5*float64(end-t0)/float64(hour))
		if i%10 == 3 {
			s.Confidence = 0
		}
		s.Has |= schemas.HasConfidence
		p.ObserveSpan(s.Key, &s)
	}
	var out proctest.Collector
	p.Evaluate(t0+hour, &out)
	v := out.Verdicts[0]
	if v.Metric != "decline_confidence" {
		t.Fatalf("metric %s", v.Metric)
	}
	lambda, _ := v.Detail("lambda_per_h")
	ln, _ := v.Detail("lambda_n")
	zeros, _ := v.Detail("zero_scores")
	if math.Abs(lambda-0.5) > 1e-9 || ln != 90 || zeros != 10 {
		t.Fatalf("lambda %v over %v scores with %v zeros, want 0.5, 90, 10", lambda, ln, zeros)
	}
}

func TestInsufficientAndEviction(t *testing.T) {
	p := mustNew(t, DefaultConfig())
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 10 {
		s := proctest.NewSpan(r, keyLarge, "chat", t0+int64(i)*int64(time.Second), 100)
		s.Alignment, s.Has = 0.8, schemas.HasAlignment
		p.ObserveSpan(s.Key, &s)
		s2 := proctest.NewSpan(r, keySmall, "chat", t0+int64(i)*int64(time.Second), 100) // no score: a call without one
		p.ObserveSpan(s2.Key, &s2)
	}
	var out proctest.Collector
	p.Evaluate(t0+5*minute, &out)
	if len(out.Verdicts) != 1 {
		t.Fatalf("want 1 verdict (spans without a score are no scores; a no_samples verdict needs 5 evaluations), got\n%s", proctest.Lines(out.Verdicts, t0))
	}
	if v := out.Verdicts[0]; v.Status != schemas.StatusInsufficientData || v.Value != 0 || v.N != 10 {
		t.Fatalf("got %s", proctest.Line(&v, t0))
	}
	// The scores stay in the window for an hour, then go; keySmall's run
	// of evaluations with calls and no score (2) is kept until an
	// evaluation finds none.
	out = proctest.Collector{}
	p.Evaluate(t0+hour, &out)
	if len(out.Verdicts) != 1 || p.Keys() != 1 {
		t.Fatalf("at +60m: %d verdicts, %d keys; want 1 and 1 (the slot leaves after this evaluation, keySmall's run stays)", len(out.Verdicts), p.Keys())
	}
	p.Evaluate(t0+hour+5*minute, &proctest.Collector{})
	if p.Keys() != 0 {
		t.Fatalf("at +65m: %d keys, want 0", p.Keys())
	}
	// All scores at one instant: they span none of the window.
	for range 40 {
		s := proctest.NewSpan(r, keyLarge, "chat", t0+2*hour, 100)
		s.Alignment, s.Has = r.Float64(), schemas.HasAlignment
		p.ObserveSpan(s.Key, &s)
	}
	out = proctest.Collector{}
	p.Evaluate(t0+2*hour+5*minute, &out)
	if v := out.Verdicts[0]; v.Status != schemas.StatusInsufficientData || v.Method != MethodShortSpan {
		t.Fatalf("one instant: got %s", proctest.Line(&v, t0))
	}
}

func TestSnapshotRoundTripAndCorruption(t *testing.T) {
	spans := generate(4, t0, t0+30*minute, script{})
	p := mustNew(t, DefaultConfig())
	proctest.Drive(t, p, spans, t0, t0+25*minute)
	b, _ := p.MarshalBinary()
	q := mustNew(t, DefaultConfig())
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	b2, _ := q.MarshalBinary()
	if !bytes.Equal(b, b2) || q.Keys() != p.Keys() {
		t.Fatal("restore changed the state")
	}
	proctest.RejectsDamage(t, func() processors.Processor { return mustNew(t, DefaultConfig()) }, b, ErrCorrupt)
	// A failed restore leaves the processor empty.
	for _, bad := range [][]byte{nil, {2, 0, 0, 0, 0}, b[:len(b)-3], append(bytes.Clone(b), 0)} {
		if err := q.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if err := q.UnmarshalBinary(bad); !errors.Is(err, ErrCorrupt) || q.Keys() != 0 {
			t.Errorf("corrupt snapshot of %d bytes: err %v, %d keys", len(bad), err, q.Keys())
		}
	}
	other := DefaultConfig()
	other.MaxSamplesPerSlot = 50
	if err := mustNew(t, other).UnmarshalBinary(b); err == nil {
		t.Error("snapshot taken with another slot cap accepted")
	}
}

func TestThinByHash(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	spans := generate(5, t0, t0+10*minute, script{})
	p := mustNew(t, DefaultConfig())
	proctest.ObserveAll(p, spans)
	all, _ := p.keys[keyLarge].Collect(t0, t0+10*minute, nil)
	a := thinByHash(all, 100, nil)
	shuffled := append([]window.Sample(nil), all...)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b := thinByHash(shuffled, 100, nil)
	if len(a) != 100 {
		t.Fatalf("kept %d", len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("thinning depends on input order")
		}
		if i > 0 && a[i-1].T > a[i].T {
			t.Fatal("thinned sample not in time order")
		}
	}
}
