package tail

import (
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// errorTraffic is 10 minutes at 20 calls/s of lognormal latency (median
// 800 ms, true P99.9 ~ 3.8 s) where 0.5% of the calls are provider
// timeouts at 60 s with an ERROR status: the traffic of the SRE.
func errorTraffic() []schemas.Span {
	r := rand.New(rand.NewPCG(18, 1))
	key := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "baseline"}
	var spans []schemas.Span
	for i := range 12000 {
		end := proctest.T0 + int64(i)*proctest.Second/20
		d := proctest.Lognormal(r, 800, 0.5)
		failed := r.Float64() < 0.005
		if failed {
			d = 60000
		}
		s := proctest.NewSpan(r, key, "chat", end, d)
		s.Error = failed
		if failed {
			s.ErrorType = "timeout"
		}
		spans = append(spans, s)
	}
	return spans
}

// TestErrorsExcludedByDefault: with the default include_errors false, a
// healthy service whose failed calls are 60 s timeouts stays within a 6 s
// budget (the timeouts are burn-rate's business); with include_errors true
// the same traffic's P99.9 is the timeout and breaches. Before the option
// existed, every verdict breached.
func TestErrorsExcludedByDefault(t *testing.T) {
	spans := errorTraffic()
	last := func(cfg Config) schemas.Verdict {
		p, err := New(processors.Meta{SLO: "s"}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		vs := proctest.Drive(t, p, spans, proctest.T0, proctest.T0+10*proctest.Minute)
		if len(vs) == 0 {
			t.Fatal("no verdicts")
		}
		return vs[len(vs)-1]
	}
	def := testConfig()
	if def.IncludeErrors {
		t.Fatal("DefaultConfig().IncludeErrors is true, want false")
	}
	v := last(def)
	if v.Status != schemas.StatusOK || v.Value > 6000 {
		t.Errorf("successful calls only: status %s P99.9 %.0f ms, want ok under 6000", v.Status, v.Value)
	}
	with := testConfig()
	with.IncludeErrors = true
	v = last(with)
	if v.Status != schemas.StatusBreach || v.Value < 30000 {
		t.Errorf("include_errors: status %s P99.9 %.0f ms, want a breach near the 60 s timeout", v.Status, v.Value)
	}
}
