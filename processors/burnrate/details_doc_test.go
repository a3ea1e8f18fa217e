package burnrate

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// detailNames runs cfg's method over spans for 90 minutes and returns, per
// metric, the detail names of its verdicts in order, joined by ", ".
func detailNames(t *testing.T, method string, spans []schemas.Span) map[string]string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Method = method
	out := map[string]string{}
	for _, v := range run(t, cfg, spans, 0, 90) {
		var ns []string
		for _, d := range v.Details {
			ns = append(ns, d.Name)
		}
		out[v.Metric] = strings.Join(ns, ", ")
	}
	return out
}

// TestDetailNamesAsDocumented: the detail names docs/verdicts.md gives for
// the default rules are the ones the verdicts carry, in order (the page
// once said `calls` and `budget_remaining` where the verdicts carry
// `calls_1h`, `budget_remaining_6h`, ...).
func TestDetailNamesAsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/verdicts.md")
	if err != nil {
		t.Fatal(err)
	}
	var multi, cusum string
	for _, l := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(l, "- **burnrate**: "):
			multi = l
		case strings.HasPrefix(l, "- **burnrate, `method: cusum`**: "):
			cusum = l
		}
	}
	if multi == "" || cusum == "" {
		t.Fatal("docs/verdicts.md has no burnrate or cusum method line")
	}
	r := rand.New(rand.NewPCG(1, 2))
	spans := sorted(traffic(r, 0, 90, 200, func(int64) float64 { return 0.01 }))
	m := detailNames(t, MethodMultiwindow, spans)
	c := detailNames(t, MethodCUSUM, spans)
	if m[MetricPage] == "" || m[MetricTicket] == "" || c[MetricPage] == "" {
		t.Fatalf("no details: multiwindow %v, cusum %v", m, c)
	}
	for _, tc := range []struct{ line, want string }{
		{multi, "page `" + m[MetricPage] + "`"},
		{multi, "ticket `" + m[MetricTicket] + "`"},
		{cusum, "page `" + c[MetricPage] + "`"},
	} {
		if !strings.Contains(tc.line, tc.want) {
			t.Errorf("the verdicts carry %s; docs/verdicts.md says: %s", tc.want, tc.line)
		}
	}
	if c[MetricTicket] != m[MetricTicket] {
		t.Errorf("cusum ticket details %q, the page says they are the multiwindow method's %q", c[MetricTicket], m[MetricTicket])
	}
}
