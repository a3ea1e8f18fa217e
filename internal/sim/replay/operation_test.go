package replay

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TestMatchOperationGivesEachOperationItsOwnBudget runs two tail SLOs on
// one key through the router and the engine's worker: embeddings calls
// (median 50 ms) under a 1 s budget and chat calls (median 2.5 s) under
// 20 s, each selected by match.operation. Chat keeps flowing at its own
// latency throughout; at minute 20 the embeddings slow down. The
// embeddings SLO is ok before that (chat's seconds-long calls, which would
// breach its budget, never reach it: its verdicts count only embeddings
// calls) and breaches after; the chat SLO stays ok throughout.
func TestMatchOperationGivesEachOperationItsOwnBudget(t *testing.T) {
	const file = `version: ops
keys:
  dimensions: [tenant, service, model, variant]
slos:
  - name: embeddings-p999
    match: {operation: [embeddings]}
    tail: {budget: 1000}
  - name: chat-p999
    match: {operation: [chat]}
    tail: {budget: 20000}
`
	wc, _, err := ParseWorkerConfig("ops.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	key := schemas.Key{Tenant: "acme", Service: "search", Model: "m", Variant: "baseline"}
	r := rand.New(rand.NewPCG(5, 5))
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).UnixNano()
	const minutes, perSecond = 40, 20
	slowFrom := t0 + int64(20*time.Minute)
	sec := 0
	counts := map[string]int64{} // operation -> spans in evaluated windows (all of them)
	next := func() ([]schemas.Span, []schemas.Correction, bool) {
		if sec >= minutes*60 {
			return nil, nil, false
		}
		var out []schemas.Span
		for i := range perSecond {
			end := t0 + int64(sec)*int64(time.Second) + r.Int64N(int64(time.Second))
			op, median := "embeddings", 50.0
			if i%2 == 0 {
				op, median = "chat", 2500
			} else if end >= slowFrom {
				median = 2000
			}
			ms := median * math.Exp(0.3*r.NormFloat64())
			s := schemas.Span{Key: key, Operation: op, EndUnixNano: end, StartUnixNano: end - int64(ms*1e6)}
			binary.BigEndian.PutUint64(s.TraceID[:8], r.Uint64())
			binary.BigEndian.PutUint64(s.TraceID[8:], r.Uint64())
			binary.BigEndian.PutUint64(s.SpanID[:], r.Uint64())
			s.Derive()
			out = append(out, s)
			counts[op]++
		}
		sec++
		return out, nil, true
	}
	var vs []schemas.Verdict
	if _, err := StreamBatches(wc, next, func(o schemas.Output) { vs = append(vs, o.Verdicts...) }); err != nil {
		t.Fatal(err)
	}
	var embOK, embBreach, chat int
	for _, v := range vs {
		if v.Status == schemas.StatusInsufficientData {
			continue
		}
		switch v.SLO {
		case "embeddings-p999":
			if v.WindowEndUnixNano <= slowFrom {
				embOK++
				if v.Status != schemas.StatusOK {
					t.Errorf("embeddings %s at %v before the slowdown (value %.0f ms): chat calls reached it?", v.Status, time.Duration(v.WindowEndUnixNano-t0), v.Value)
				}
				// 10 of the 20 calls a second are embeddings: a 10-minute
				// window holds at most 6,000 of them.
				if v.N > 6000 {
					t.Errorf("embeddings window of %d calls: more than its operation made", v.N)
				}
			} else if v.Status == schemas.StatusBreach {
				embBreach++
			}
		case "chat-p999":
			chat++
			if v.Status != schemas.StatusOK {
				t.Errorf("chat %s at %v (value %.0f ms)", v.Status, time.Duration(v.WindowEndUnixNano-t0), v.Value)
			}
		}
	}
	if embOK == 0 || embBreach == 0 || chat == 0 {
		t.Fatalf("embeddings ok %d, breaches after the slowdown %d, chat verdicts %d: want all > 0", embOK, embBreach, chat)
	}
}
