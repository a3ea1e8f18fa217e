package scaling

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

var meta = processors.Meta{SLO: "capacity", ConfigVersion: "v1"}

func testConfig() Config {
	c := DefaultConfig()
	c.StdDevBudgetMs = 1500
	return c
}

// fastConfig judges one-minute windows and hints scale-in after two low
// ones: the configuration of a team that wants hints within two
// evaluations.
func fastConfig() Config {
	c := testConfig()
	c.Window = time.Minute
	c.ScaleInAfter = 2
	return c
}

func mustNew(t testing.TB, cfg Config) *Processor {
	t.Helper()
	p, err := New(meta, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecideTable(t *testing.T) {
	c := testConfig() // high 0.8, low 0.5, budget 1500, scale in after 3
	for _, tc := range []struct {
		name       string
		e, sd      float64
		prev       int
		want       Decision
		wantStatus schemas.Status
		wantStreak int
	}{
		{"wide mix, wide spread: scale out", 0.9, 1600, 0, ScaleOut, schemas.StatusBreach, 0},
		{"entropy exactly high counts as high", 0.8, 1501, 2, ScaleOut, schemas.StatusBreach, 0},
		{"spread exactly at budget is not above it", 0.95, 1500, 0, Hold, schemas.StatusOK, 0},
		{"wide mix, spread within budget", 0.95, 900, 0, Hold, schemas.StatusOK, 0},
		{"narrow mix, wide spread: hold", 0.2, 5000, 0, Hold, schemas.StatusOK, 0},
		{"middle mix, wide spread: hold", 0.6, 5000, 0, Hold, schemas.StatusOK, 0},
		{"first low window", 0.3, 500, 0, Hold, schemas.StatusOK, 1},
		{"second low window", 0.3, 500, 1, Hold, schemas.StatusOK, 2},
		{"third low window: scale-in hint", 0.3, 500, 2, ScaleIn, schemas.StatusWarn, 3},
		{"hint repeats while low", 0, 10, 7, ScaleIn, schemas.StatusWarn, 8},
		{"low entropy but spread over half the budget resets", 0.3, 750, 5, Hold, schemas.StatusOK, 0},
		{"entropy exactly low is not low", 0.5, 100, 5, Hold, schemas.StatusOK, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := c.Decide(tc.e, tc.sd, tc.prev)
			if j.Decision != tc.want || j.Status != tc.wantStatus || j.LowStreak != tc.wantStreak {
				t.Fatalf("Decide(%v, %v, %d) = %+v, want decision %d status %s streak %d", tc.e, tc.sd, tc.prev, j, tc.want, tc.wantStatus, tc.wantStreak)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	d := DefaultConfig()
	if err := d.Validate(); err == nil {
		t.Fatal("default config without stddev_budget_ms validated")
	}
	c := testConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	bad := testConfig()
	bad.MaxCategories = 1
	bad.Mix = []string{"route", "colour"}
	proctest.WantConfigErrors(t, bad.Validate(), "max_categories", "mix: unknown category colour")
	// max_samples_per_slot is deprecated and ignored: any value loads.
	old := testConfig()
	old.MaxSamplesPerSlot = 0
	if err := old.Validate(); err != nil {
		t.Fatalf("max_samples_per_slot 0 (ignored): %v", err)
	}
	if _, err := New(meta, bad); err == nil {
		t.Fatal("New accepted a bad config")
	}
}

func TestScopeKeyAggregates(t *testing.T) {
	p := mustNew(t, testConfig())
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 60 {
		m := []string{"a", "b"}[i%2]
		s := proctest.NewSpan(r, schemas.Key{Tenant: "t", Service: "s", Model: m, Variant: "v"}, "chat", t0+int64(i)*int64(time.Second), 100)
		p.ObserveSpan(s.Key, &s)
	}
	var out proctest.Collector
	p.Evaluate(t0+5*minute, &out)
	if len(out.Verdicts) != 1 {
		t.Fatalf("got %d verdicts, want 1 for the one scope key:\n%s", len(out.Verdicts), proctest.Lines(out.Verdicts, t0))
	}
	v := out.Verdicts[0]
	want := schemas.Key{Tenant: "t", Service: "s", Model: "*", Variant: "*"}
	if v.Key != want || v.N != 60 {
		t.Fatalf("key %v n %d, want %v and 60", v.Key, v.N, want)
	}
	// Mix is route and model: two categories, evenly split.
	if c, _ := v.Detail("categories"); c != 2 || v.Value != 1 {
		t.Fatalf("categories %v normalised entropy %v, want 2 and 1", c, v.Value)
	}
	if bits, _ := v.Detail("entropy_bits"); bits != 1 {
		t.Fatalf("entropy %v bits, want 1", bits)
	}
}

func TestEntropyAndVarianceValues(t *testing.T) {
	// Three categories with counts 50, 30, 20 and known latencies.
	p := mustNew(t, testConfig())
	r := rand.New(rand.NewPCG(2, 2))
	var lat []float64
	i := 0
	for _, c := range []struct {
		route string
		n     int
	}{{"a", 50}, {"b", 30}, {"c", 20}} {
		for range c.n {
			d := float64(100 + 7*i)
			lat = append(lat, d)
			s := proctest.NewSpan(r, schemas.Key{Tenant: "t", Service: "s"}, c.route, t0+int64(i)*int64(time.Second), d)
			p.ObserveSpan(s.Key, &s)
			i++
		}
	}
	var out proctest.Collector
	p.Evaluate(t0+5*minute, &out)
	v := out.Verdicts[0]
	h := -(0.5*math.Log2(0.5) + 0.3*math.Log2(0.3) + 0.2*math.Log2(0.2))
	mean := 0.0
	for _, x := range lat {
		mean += x
	}
	mean /= float64(len(lat))
	ss := 0.0
	for _, x := range lat {
		ss += (x - mean) * (x - mean)
	}
	variance := ss / float64(len(lat)-1)
	for _, c := range []struct {
		name string
		want float64
	}{
		{"entropy_bits", h}, {"normalized_entropy", h / math.Log2(3)}, {"categories", 3},
		{"variance_ms2", variance}, {"stddev_ms", math.Sqrt(variance)}, {"n", 100},
	} {
		got, ok := v.Detail(c.name)
		if !ok || math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %v (present %v), want %v", c.name, got, ok, c.want)
		}
	}
}

func TestInsufficientData(t *testing.T) {
	p := mustNew(t, testConfig())
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 10 {
		s := proctest.NewSpan(r, schemas.Key{Tenant: "t", Service: "s"}, "chat", t0+int64(i), 100)
		p.ObserveSpan(s.Key, &s)
	}
	var out proctest.Collector
	p.Evaluate(t0+minute, &out)
	if len(out.Verdicts) != 1 || out.Verdicts[0].Status != schemas.StatusInsufficientData || out.Verdicts[0].Value != 0 || out.Verdicts[0].N != 10 {
		t.Fatalf("want one insufficient_data verdict with n=10, got\n%s", proctest.Lines(out.Verdicts, t0))
	}
	// Five minutes later the window is empty: no verdict, state gone.
	out = proctest.Collector{}
	p.Evaluate(t0+6*minute, &out)
	if len(out.Verdicts) != 0 || p.Keys() != 0 {
		t.Fatalf("after the window passed: %d verdicts, %d keys; want 0, 0", len(out.Verdicts), p.Keys())
	}
}

func TestMixCapIndependentOfOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	hs := make([]uint64, 500)
	for i := range hs {
		hs[i] = r.Uint64() | 1
	}
	var stream []uint64
	for i, h := range hs {
		for range 1 + i%5 {
			stream = append(stream, h)
		}
	}
	count := func(xs []uint64) map[uint64]int64 {
		m := newMixSlot(0)
		for _, h := range xs {
			m.add(h, 50)
		}
		if m.n != int64(len(xs)) || len(m.counts) != 51 {
			t.Fatalf("n %d categories %d, want %d and 51", m.n, len(m.counts), len(xs))
		}
		return m.counts
	}
	a := count(stream)
	shuffled := slices.Clone(stream)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b := count(shuffled)
	for h, c := range a {
		if b[h] != c {
			t.Fatalf("category %x: %d in order, %d shuffled", h, c, b[h])
		}
	}
	// The kept categories are the 50 smallest hashes.
	sorted := slices.Clone(hs)
	slices.Sort(sorted)
	for _, h := range sorted[:50] {
		if _, ok := a[h]; !ok {
			t.Fatalf("category %x among the 50 smallest was pooled", h)
		}
	}
}

func TestObserveSpanDoesNotAllocate(t *testing.T) {
	p := mustNew(t, testConfig())
	r := rand.New(rand.NewPCG(5, 5))
	spans := generate(5, t0, t0+minute, script{})
	proctest.ObserveAll(p, spans)
	// Same slot, known categories.
	s := proctest.NewSpan(r, spans[0].Key, spans[0].Route, t0+30*int64(time.Second), 500)
	for range 3000 {
		p.ObserveSpan(s.Key, &s)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		s.SpanID[0]++
		p.ObserveSpan(s.Key, &s)
	})
	if allocs != 0 {
		t.Fatalf("ObserveSpan allocates %v times per call in steady state", allocs)
	}
}
