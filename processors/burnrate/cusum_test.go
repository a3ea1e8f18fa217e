package burnrate

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

func cusumConfig() Config {
	c := DefaultConfig()
	c.Method = MethodCUSUM
	return c
}

// firstPageBreach is the minute (1-based evaluation count from t0) of the
// first page breach with a window ending after from, 0 for none.
func firstPageBreach(vs []schemas.Verdict, t0, from int64) int {
	for _, v := range vs {
		if v.Metric == MetricPage && v.Status == schemas.StatusBreach && v.WindowEndUnixNano > from {
			return int((v.WindowEndUnixNano - t0) / minute)
		}
	}
	return 0
}

// TestCUSUMPagesModerateBurstInMinutes: 2% errors (a burn rate of 20 at
// 99.9%) after 2 h of a fifth of the budget. The CUSUM pages within 5
// evaluations (drift 0.040 nats per call, 200 calls a minute, h = 15); the
// workbook's 1h rule needs the hour's rate over 14.4, i.e. 43 minutes of
// the burst, and has not paged after 30. Neither pages before the burst,
// and the tickets are the same under both methods.
func TestCUSUMPagesModerateBurstInMinutes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	incident := t0 + 120*minute
	spans := sorted(traffic(r, t0, 180, 200, func(t int64) float64 {
		if t >= incident {
			return 0.02
		}
		return 0.0002
	}))
	cu := run(t, cusumConfig(), spans, t0, 180)
	mw := run(t, DefaultConfig(), spans, t0, 180)
	for name, vs := range map[string][]schemas.Verdict{"cusum": cu, "multiwindow": mw} {
		if m := firstPageBreach(vs, t0, t0); m != 0 && m <= 120 {
			t.Errorf("%s: page breach at minute %d, before the burst", name, m)
		}
	}
	c := firstPageBreach(cu, t0, incident) - 120
	m := firstPageBreach(mw, t0, incident) - 120
	t.Logf("evaluations from the burst to the page: cusum %d, multiwindow %d", c, m)
	if c < 1 || c > 5 {
		t.Errorf("cusum paged %d evaluations into the burst, want 1..5", c)
	}
	if m > 0 && m <= 30 {
		t.Errorf("multiwindow paged %d evaluations into the burst: the 1h rule should need ~43", m)
	}
	var tc, tm []schemas.Verdict
	for i := range cu {
		if cu[i].Metric == MetricTicket {
			tc = append(tc, cu[i])
		}
	}
	for i := range mw {
		if mw[i].Metric == MetricTicket {
			tm = append(tm, mw[i])
		}
	}
	if !reflect.DeepEqual(tc, tm) {
		t.Error("tickets differ between the methods")
	}
	for _, v := range cu {
		if v.Metric == MetricPage && v.Method != "bernoulli_cusum" {
			t.Fatalf("cusum page verdict with method %q", v.Method)
		}
	}
}

// TestCUSUMQuietAtTheBudget: a day of 200 calls a minute failing at
// exactly 1 - Target (the worst traffic the false-alarm bound covers:
// 1440·e^-15 = 4.4e-4 episodes a day) never pages, and the statistic
// recovers after a burst: back to ok within 10 minutes of its end.
func TestCUSUMQuietAtTheBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	burst := t0 + 1440*minute
	spans := sorted(traffic(r, t0, 1500, 200, func(t int64) float64 {
		if t >= burst && t < burst+10*minute {
			return 0.1
		}
		return 0.001
	}))
	vs := run(t, cusumConfig(), spans, t0, 1500)
	last := int64(0)
	for _, v := range vs {
		if v.Metric != MetricPage || v.Status != schemas.StatusBreach {
			continue
		}
		if v.WindowEndUnixNano <= burst {
			t.Fatalf("false page at minute %d at an error rate of exactly the budget", (v.WindowEndUnixNano-t0)/minute)
		}
		last = max(last, v.WindowEndUnixNano)
	}
	if last == 0 {
		t.Fatal("the 10% burst never paged")
	}
	if after := (last - burst - 10*minute) / minute; after > 10 {
		t.Errorf("still breached %d minutes after the burst ended", after)
	}
}

func TestCUSUMSnapshotContinuesIdentically(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	t0 := int64(1_700_000_000) / 60 * 60 * int64(time.Second)
	spans := sorted(traffic(r, t0, 120, 50, func(int64) float64 { return 0.01 }))
	cfg := cusumConfig()
	want := run(t, cfg, spans, t0, 120)
	p, got := runRestoredAt(t, cfg, spans, t0, 120, 60)
	if !reflect.DeepEqual(got, want) {
		t.Fatal("restored processor diverged")
	}
	breached := false
	for _, v := range want {
		breached = breached || (v.Metric == MetricPage && v.Status == schemas.StatusBreach)
	}
	if !breached {
		t.Fatal("1% errors (burn 10) never paged: the restore test holds no CUSUM state")
	}
	snap, _ := p.MarshalBinary()
	proctest.RejectsDamage(t, func() processors.Processor {
		q, _ := New(processors.Meta{SLO: "avail", ConfigVersion: "v1"}, cfg)
		return q
	}, snap, ErrCorrupt)
}

func TestCUSUMValidate(t *testing.T) {
	for _, tc := range []struct {
		edit  func(*Config)
		field string
	}{
		{func(c *Config) { c.Method = "sprt" }, "method"},
		{func(c *Config) { c.Method = MethodCUSUM; c.CUSUMFactor = 1 }, "cusum_factor"},
		{func(c *Config) { c.Method = MethodCUSUM; c.Target = 0.9; c.CUSUMFactor = 11 }, "cusum_factor"},
		{func(c *Config) { c.Method = MethodCUSUM; c.CUSUMThreshold = 0 }, "cusum_threshold"},
		{func(c *Config) { c.Method = MethodCUSUM; c.Page = nil }, "page"},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		err := c.Validate()
		var ce *processors.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: error %v, want one naming %s", c, err, tc.field)
		}
	}
	c := cusumConfig()
	if err := c.Validate(); err != nil {
		t.Errorf("cusum defaults: %v", err)
	}
}

// TestConfigJSONWithoutCUSUMFields: under multiwindow the configuration
// hash sees the fields it saw before method existed (no config version of
// an existing file changes); under cusum it sees them.
func TestConfigJSONWithoutCUSUMFields(t *testing.T) {
	b, err := json.Marshal(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"Target":0.999,"LatencyThresholdMs":0,"Every":60000000000,"Page":[{"Long":3600000000000,"Short":300000000000,"Factor":14.4},{"Long":21600000000000,"Short":1800000000000,"Factor":6}],"Ticket":[{"Long":86400000000000,"Short":7200000000000,"Factor":3},{"Long":259200000000000,"Short":21600000000000,"Factor":1}],"MinEvents":100,"MinBadEvents":5,"Confidence":0.95}`
	if string(b) != want {
		t.Errorf("default JSON\n%s\nwant\n%s", b, want)
	}
	b, _ = json.Marshal(cusumConfig())
	if !strings.Contains(string(b), `"Method":"cusum","CUSUMFactor":14.4,"CUSUMThreshold":15`) {
		t.Errorf("cusum JSON lacks the method's fields: %s", b)
	}
}
