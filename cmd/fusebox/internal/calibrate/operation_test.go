package calibrate

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestProposeBudgetPerOperation: one model serves chat (median 2 s) and
// embeddings (median 40 ms). The proposal has a tail SLO per operation,
// each matching its operation, with budgets 10x apart or more (one budget
// for both would be the chat tail's, blind to embeddings slowing 20x), and
// a replay of 2 h of the same clean traffic through the proposed file
// trips nothing.
func TestProposeBudgetPerOperation(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	k := schemas.Key{Tenant: "acme", Service: "search", Model: "gpt-4o", Variant: "baseline"}
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).UnixNano()
	var in Input
	for i := range 2 * 3600 * 10 { // 10 calls/s for 2 h
		end := t0 + int64(i)*int64(100*time.Millisecond) + r.Int64N(int64(100*time.Millisecond))
		op, median := "chat", 2000.0
		if i%2 == 1 {
			op, median = "embeddings", 40
		}
		ms := median * math.Exp(0.35*r.NormFloat64())
		s := schemas.Span{Key: k, Operation: op, EndUnixNano: end, StartUnixNano: end - int64(ms*1e6)}
		binary.BigEndian.PutUint64(s.TraceID[:8], r.Uint64())
		binary.BigEndian.PutUint64(s.TraceID[8:], r.Uint64())
		binary.BigEndian.PutUint64(s.SpanID[:], r.Uint64())
		s.Derive()
		in.Spans = append(in.Spans, s)
	}
	in.Sort()
	p, err := Propose(&in, Config{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse("proposed.yaml", []byte(p.YAML))
	if err != nil {
		t.Fatalf("proposal does not parse: %v\n%s", err, p.YAML)
	}
	budgets := map[string]float64{}
	for _, s := range f.SLOs {
		sec, ok := s.Processor()
		if !ok || sec.Kind.Name != "tail" {
			continue
		}
		if len(s.Match.Operation) != 1 {
			t.Fatalf("%s: match.operation %v, want one operation", s.Name, s.Match.Operation)
		}
		b := reflectBudget(t, sec.Config)
		budgets[s.Match.Operation[0]] = b
		if !strings.Contains(s.Name, s.Match.Operation[0]) {
			t.Errorf("SLO %s does not name its operation %s", s.Name, s.Match.Operation[0])
		}
	}
	t.Logf("budgets: %v", budgets)
	if len(budgets) != 2 || !(budgets["chat"] >= 10*budgets["embeddings"]) || !(budgets["embeddings"] > 40) {
		t.Fatalf("budgets %v: want chat and embeddings, chat >= 10x embeddings, embeddings above its median\n%s", budgets, p.YAML)
	}
	rep, err := RunFile("proposed.yaml", []byte(p.YAML), &in)
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Trips(); n != 0 {
		t.Errorf("proposed file tripped %d times on the traffic it was proposed from", n)
	}
}

func reflectBudget(t *testing.T, c any) float64 {
	t.Helper()
	tc, ok := c.(*tail.Config)
	if !ok {
		t.Fatalf("tail section is a %T", c)
	}
	return tc.Budget
}
