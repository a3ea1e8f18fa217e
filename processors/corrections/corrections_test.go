package corrections

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

var meta = processors.Meta{SLO: "satisfaction", ConfigVersion: "v1"}

func mustNew(t testing.TB, cfg Config) *Processor {
	t.Helper()
	p, err := New(meta, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func find(vs []schemas.Verdict, key schemas.Key, metric string) *schemas.Verdict {
	for i := range vs {
		if vs[i].Key == key && vs[i].Metric == metric {
			return &vs[i]
		}
	}
	return nil
}

func detail(v *schemas.Verdict, name string) float64 {
	x, ok := v.Detail(name)
	if !ok {
		panic("no detail " + name)
	}
	return x
}

func TestJudgeRateTable(t *testing.T) {
	c := DefaultConfig() // max rate 0.05
	for _, tc := range []struct {
		rate, low float64
		want      schemas.Status
	}{
		{0.2, 0.1, schemas.StatusBreach},
		{0.07, 0.0501, schemas.StatusBreach},
		{0.07, 0.05, schemas.StatusWarn},
		{0.0501, 0.01, schemas.StatusWarn},
		{0.05, 0.01, schemas.StatusOK},
		{0, 0, schemas.StatusOK},
	} {
		if got := c.JudgeRate(tc.rate, tc.low); got != tc.want {
			t.Errorf("JudgeRate(%v, %v) = %s, want %s", tc.rate, tc.low, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := DefaultConfig()
	bad.MaxPendingCorrections = 0
	bad.MaxUnjoinedKeys = 0
	bad.CanaryVariant = "baseline"
	proctest.WantConfigErrors(t, bad.Validate(), "max_pending_corrections", "max_unjoined_keys", "canary_variant")
}

// joinFixture: one key, spans at known times sharing trace and session
// ids, and a helper to add corrections.
type joinFixture struct {
	p   *Processor
	r   *rand.Rand
	out proctest.Collector
}

func newFixture(t *testing.T) *joinFixture {
	cfg := DefaultConfig()
	cfg.MinResponses = 1
	return &joinFixture{p: mustNew(t, cfg), r: rand.New(rand.NewPCG(1, 2))}
}

func (f *joinFixture) span(key schemas.Key, end int64, trace byte, session string) schemas.Span {
	s := proctest.NewSpan(f.r, key, "chat", end, 100)
	s.TraceID = schemas.TraceID{trace}
	s.SessionID = session
	f.p.ObserveSpan(s.Key, &s)
	return s
}

func (f *joinFixture) correct(tenant string, tc int64, trace byte, session string, kind schemas.CorrectionKind) {
	c := schemas.Correction{EventID: "e" + string(rune('a'+len(f.p.pending))), TimeUnixNano: tc, Tenant: tenant, SessionID: session, Kind: kind, Model: "m-from-event"}
	if trace != 0 {
		c.TraceID = schemas.TraceID{trace}
	}
	f.p.ObserveCorrection(&c)
}

func TestJoinRules(t *testing.T) {
	f := newFixture(t)
	other := schemas.Key{Tenant: "acme", Service: "other", Model: "m", Variant: "baseline"}
	// Trace 1: spans of keyBase at +10s and of other at +50s, and one
	// ending after the correction (+100s) that must not be chosen.
	f.span(keyBase, t0+10*sec, 1, "")
	f.span(other, t0+50*sec, 1, "")
	f.span(keyBase, t0+100*sec, 1, "")
	f.correct("acme", t0+59*sec, 1, "", schemas.KindReject) // joins other (latest ended before +59s)
	// Trace 2 exists only for tenant globex: an acme correction with it
	// joins nothing by trace, then falls back to the session.
	f.span(keySearch, t0+5*sec, 2, "")
	f.span(keyBase, t0+20*sec, 3, "sess-A")
	f.correct("acme", t0+30*sec, 2, "sess-A", schemas.KindRephrase) // joins keyBase via session
	// Too old: the span ended more than JoinWindow before.
	f.span(keyOther, t0+1*sec, 4, "")
	f.correct("initech", t0+1*sec+11*int64(time.Minute), 4, "", schemas.KindEdit) // unjoined
	// A repeat: the rephrase above already corrected the sess-A span.
	f.correct("acme", t0+40*sec, 0, "sess-A", schemas.KindReject)

	f.p.Evaluate(t0+minute, &f.out)
	vs := f.out.Verdicts
	if v := find(vs, other, MetricRate); v == nil || detail(v, "corrections") != 1 || detail(v, "reject") != 1 {
		t.Fatalf("trace join to the latest span before the correction failed:\n%s", proctest.Lines(vs, t0))
	}
	v := find(vs, keyBase, MetricRate)
	if v == nil || detail(v, "corrections") != 1 || detail(v, "rephrase") != 1 || detail(v, "repeats") != 1 || detail(v, "responses") != 2 {
		t.Fatalf("session fallback or repeat counting failed:\n%s", proctest.Lines(vs, t0))
	}
	if v := find(vs, keySearch, MetricRate); v == nil || detail(v, "corrections") != 0 {
		t.Fatalf("a correction joined a span of another tenant:\n%s", proctest.Lines(vs, t0))
	}
	// The too-old correction is at +11m: pending until then.
	if _, _, pend := f.p.IndexStats(); pend != 1 {
		t.Fatalf("pending %d, want 1", pend)
	}
	for m := int64(2); m <= 12; m++ {
		f.p.Evaluate(t0+m*minute, &f.out)
	}
	uk := schemas.Key{Tenant: "initech", Model: "m-from-event"}
	if v := find(f.out.Verdicts, uk, MetricUnjoined); v == nil || v.Value != 1 || v.Status != schemas.StatusOK {
		t.Fatalf("unjoined correction not attributed to %v:\n%s", uk, proctest.Lines(f.out.Verdicts, t0))
	}
}

func TestJoinTieBreakAndArrivalOrder(t *testing.T) {
	// Two spans of one trace end at the same instant: the smaller span
	// hash wins whatever the order they and the correction arrive in.
	var winners []schemas.Key
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		f := newFixture(t)
		a := proctest.NewSpan(f.r, keyBase, "chat", t0+10*sec, 100)
		b := proctest.NewSpan(f.r, keyCanary, "chat", t0+10*sec, 100)
		a.TraceID, b.TraceID = schemas.TraceID{7}, schemas.TraceID{7}
		a.SpanID, b.SpanID = schemas.SpanID{1}, schemas.SpanID{2}
		c := schemas.Correction{EventID: "x", TimeUnixNano: t0 + 20*sec, Tenant: "acme", TraceID: schemas.TraceID{7}, Kind: schemas.KindReject}
		for _, i := range order {
			switch i {
			case 0:
				f.p.ObserveSpan(a.Key, &a)
			case 1:
				f.p.ObserveSpan(b.Key, &b)
			case 2:
				f.p.ObserveCorrection(&c)
			}
		}
		f.p.Evaluate(t0+minute, &f.out)
		for _, v := range f.out.Verdicts {
			if v.Metric == MetricRate && detail(&v, "corrections") == 1 {
				winners = append(winners, v.Key)
			}
		}
	}
	ha := processors.SpanHash(&schemas.Span{TraceID: schemas.TraceID{7}, SpanID: schemas.SpanID{1}})
	hb := processors.SpanHash(&schemas.Span{TraceID: schemas.TraceID{7}, SpanID: schemas.SpanID{2}})
	want := keyBase
	if hb < ha {
		want = keyCanary
	}
	if len(winners) != 3 || winners[0] != want || winners[1] != want || winners[2] != want {
		t.Fatalf("winners %v, want %v each time", winners, want)
	}
}

func TestRateAndWilson(t *testing.T) {
	f := newFixture(t)
	f.p.cfg.MinResponses = 50
	for i := range 200 {
		f.span(keyOther, t0+int64(i)*sec/4, byte(i%250+1), "")
	}
	// 20 corrections of 20 distinct traces.
	for i := range 20 {
		f.correct("initech", t0+55*sec, byte(i+1), "", schemas.KindThumbsDown)
	}
	f.p.Evaluate(t0+minute, &f.out)
	v := find(f.out.Verdicts, keyOther, MetricRate)
	lo, hi := wilson(20, 200)
	if v.Value != 0.1 || math.Abs(v.Lower-lo) > 1e-12 || math.Abs(v.Upper-hi) > 1e-12 || v.Status != schemas.StatusBreach || v.N != 200 {
		t.Fatalf("got %s; want rate 0.1 Wilson [%v, %v] breach", proctest.Line(v, t0), lo, hi)
	}
	if detail(v, "thumbs_down") != 20 {
		t.Fatal("kind not counted")
	}
	// Below MinResponses: insufficient_data with Value 0, counts kept.
	g := newFixture(t)
	g.p.cfg.MinResponses = 50
	g.span(keyOther, t0, 1, "")
	g.correct("initech", t0+sec, 1, "", schemas.KindEdit)
	g.p.Evaluate(t0+minute, &g.out)
	v = find(g.out.Verdicts, keyOther, MetricRate)
	if v.Status != schemas.StatusInsufficientData || v.Value != 0 || v.IntervalLevel != 0 || detail(v, "corrections") != 1 {
		t.Fatalf("got %s", proctest.Line(v, t0))
	}
}

// wilson is the Wilson score interval at 95%, written out.
func wilson(k, n float64) (float64, float64) {
	z := 1.959963984540054
	p := k / n
	c := (p + z*z/(2*n)) / (1 + z*z/n)
	h := z / (1 + z*z/n) * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	return c - h, c + h
}

func TestCanaryVerdict(t *testing.T) {
	p := mustNew(t, DefaultConfig())
	for _, tc := range []struct {
		name         string
		c, b         tally
		want         schemas.Status
		wantPositive bool
	}{
		{"canary much worse", tally{responses: 500, corrections: 50}, tally{responses: 2000, corrections: 30}, schemas.StatusBreach, true},
		{"canary much better", tally{responses: 500, corrections: 1}, tally{responses: 2000, corrections: 200}, schemas.StatusOK, false},
		{"same rate", tally{responses: 500, corrections: 8}, tally{responses: 2000, corrections: 30}, schemas.StatusOK, true},
		{"no corrections anywhere", tally{responses: 500}, tally{responses: 2000}, schemas.StatusOK, false},
		{"canary too small", tally{responses: 49, corrections: 40}, tally{responses: 2000}, schemas.StatusInsufficientData, false},
		{"no baseline", tally{responses: 500, corrections: 40}, tally{}, schemas.StatusInsufficientData, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := p.canaryVerdict(keyCanary, tc.c, tc.b, t0, t0+10*minute)
			if err := v.Validate(); err != nil {
				t.Fatal(err)
			}
			if v.Status != tc.want || (v.Value > 0) != tc.wantPositive {
				t.Fatalf("got %s", proctest.Line(&v, t0))
			}
			if v.Status != schemas.StatusInsufficientData && !(v.Lower <= v.Value && v.Value <= v.Upper) {
				t.Fatalf("value outside its interval: %s", proctest.Line(&v, t0))
			}
		})
	}
}

func TestIndexCapKeepsNewestWhateverTheOrder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxIndexedSpans = 1000
	r := rand.New(rand.NewPCG(3, 3))
	var spans []schemas.Span
	for i := range 3000 {
		s := proctest.NewSpan(r, keyBase, "chat", t0+int64(i)*sec/100, 10)
		spans = append(spans, s)
	}
	snap := func(order []schemas.Span) string {
		p := mustNew(t, cfg)
		proctest.ObserveAll(p, order)
		n, ev, _ := p.IndexStats()
		if n != 1000 || ev != 2000 {
			t.Fatalf("indexed %d evicted %d, want 1000 and 2000", n, ev)
		}
		for _, e := range p.index.live() {
			if e.end < spans[2000].EndUnixNano {
				t.Fatal("an old span survived the cap")
			}
		}
		b, _ := p.MarshalBinary()
		return string(b)
	}
	a := snap(spans)
	sh := append([]schemas.Span(nil), spans...)
	r.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
	if b := snap(sh); a != b {
		t.Fatal("index content depends on arrival order")
	}
}

func TestPendingOverflowCountedNotDropped(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPendingCorrections = 100
	p := mustNew(t, cfg)
	for i := range 150 {
		c := schemas.Correction{EventID: string(rune(i + 1000)), TimeUnixNano: t0 + int64(i)*sec/10, Tenant: "acme", TraceID: schemas.TraceID{byte(i)}, Kind: schemas.KindReject}
		p.ObserveCorrection(&c)
	}
	var out proctest.Collector
	p.Evaluate(t0+minute, &out)
	v := find(out.Verdicts, schemas.Key{Tenant: "acme"}, MetricUnjoined)
	if v == nil || v.Value != 150 || detail(v, "pending_overflow") != 50 {
		t.Fatalf("got\n%s", proctest.Lines(out.Verdicts, t0))
	}
}

func TestEvictionForgetsEverything(t *testing.T) {
	evs := generate(4, t0, t0+20*minute, script{})
	p := mustNew(t, DefaultConfig())
	proctest.DriveEvents(t, p, evs, t0, t0+20*minute)
	if p.Keys() == 0 {
		t.Fatal("no state")
	}
	var out proctest.Collector
	for m := int64(21); m <= 40; m++ {
		p.Evaluate(t0+m*minute, &out)
	}
	n, _, pend := p.IndexStats()
	if p.Keys() != 0 || n != 0 || pend != 0 {
		t.Fatalf("after 20 quiet minutes: %d keys, %d indexed spans, %d pending", p.Keys(), n, pend)
	}
}
