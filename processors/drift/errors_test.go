package drift

import (
	"math/rand/v2"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestLatencyDriftIgnoresErrorsByDefault: the successful calls' latency
// never changes, but after 70 minutes 20% of the calls start failing as
// 60 s timeouts. Drift on duration_ms with the default include_errors
// false sees no shift (the error rate is burn-rate's); with include_errors
// true it breaches on the timeouts.
func TestLatencyDriftIgnoresErrorsByDefault(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 2))
	key := schemas.Key{Tenant: "t", Service: "s", Model: "m", Variant: "baseline"}
	var spans []schemas.Span
	for i := range 90 * 60 * 5 { // 90 min at 5 calls/s
		end := proctest.T0 + int64(i)*proctest.Second/5
		s := proctest.NewSpan(r, key, "chat", end, proctest.Lognormal(r, 800, 0.5))
		if end >= proctest.T0+70*proctest.Minute && r.Float64() < 0.2 {
			s = proctest.NewSpan(r, key, "chat", end, 60000)
			s.Error, s.ErrorType = true, "timeout"
		}
		spans = append(spans, s)
	}
	breaches := func(include bool) int {
		c := DefaultConfig()
		c.Metric = processors.MetricDuration
		c.IncludeErrors = include
		p, err := New(processors.Meta{SLO: "s"}, c)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, v := range proctest.Drive(t, p, spans, proctest.T0, proctest.T0+90*proctest.Minute) {
			if v.Status == schemas.StatusBreach {
				n++
			}
		}
		return n
	}
	if DefaultConfig().IncludeErrors {
		t.Fatal("DefaultConfig().IncludeErrors is true, want false")
	}
	if n := breaches(false); n != 0 {
		t.Errorf("include_errors false: %d breaches, want 0 (successful latency never moved)", n)
	}
	if n := breaches(true); n == 0 {
		t.Error("include_errors true: no breach on a 20% share of 60 s timeouts")
	}
}
