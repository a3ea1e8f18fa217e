package loop

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/fusebox-dev/fusebox/internal/sim/traffic"
)

// Provider is a simulated OpenAI-compatible provider serving one model on
// a loopback port: lognormal latency around Median, and the scripted
// incidents (traffic.Incident, Start/End as offsets of wall time from the
// run's start) whose Target.Model is its model and whose Target.Tenant, if
// any, is the request's tenant header.
type Provider struct {
	Model     string
	Median    time.Duration
	Sigma     float64
	Incidents []traffic.Incident
	start     time.Time
	srv       *httptest.Server

	mu  sync.Mutex
	rng *rand.Rand
}

// TenantHeader and VariantHeader are the headers the gateway forwards
// the tenant and the variant in (the fusehttp defaults); ConfidenceHeader
// is the answer's confidence score, which the gateway puts on the span
// (llm.response.confidence).
const (
	TenantHeader     = "X-Fusebox-Tenant"
	VariantHeader    = "X-Fusebox-Variant"
	ConfidenceHeader = "X-Loop-Confidence"
)

// NewProvider starts p's server; the incidents' offsets count from start.
func NewProvider(model string, median time.Duration, seed uint64, start time.Time, incidents []traffic.Incident) *Provider {
	p := &Provider{Model: model, Median: median, Sigma: 0.3, Incidents: incidents, start: start,
		rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

// URL is the provider's base URL.
func (p *Provider) URL() string { return p.srv.URL }

// Close stops the server.
func (p *Provider) Close() { p.srv.Close() }

// behaviour draws one call's latency, whether it fails, and its
// confidence score.
func (p *Provider) behaviour(tenant, variant string, now time.Time) (time.Duration, bool, float64) {
	off := now.Sub(p.start)
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rng
	med := float64(p.Median)
	d := med * math.Exp(p.Sigma*r.NormFloat64())
	fail := false
	conf := 0.82 + 0.06*r.NormFloat64()
	for i := range p.Incidents {
		inc := &p.Incidents[i]
		if !inc.Active(off) || inc.Target.Model != p.Model || inc.Target.Tenant != "" && inc.Target.Tenant != tenant ||
			inc.Target.Variant != "" && inc.Target.Variant != variant {
			continue
		}
		switch inc.Kind {
		case traffic.TailBlowup:
			// As internal/sim/traffic: a share of calls gets a Pareto (alpha
			// 1.5) tail, here 50 medians plus 20-median multiples, capped
			// at 90 medians (2.5 s to 4.5 s at 50 ms) so a run stays
			// short and every tail call is over the 2 s budget.
			if r.Float64() < inc.Magnitude {
				d += 50*med + math.Min(20*med*(math.Pow(1-r.Float64(), -1/1.5)-1), 40*med)
			}
		case traffic.ErrorBurst:
			fail = fail || r.Float64() < inc.Magnitude
		case traffic.CanaryDrift:
			conf -= inc.Magnitude
		}
	}
	return time.Duration(d), fail, math.Max(0, math.Min(1, conf))
}

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != p.Model {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"this provider serves %s","type":"invalid_request_error","code":"model_not_found"}}`, p.Model), http.StatusNotFound)
		return
	}
	d, fail, conf := p.behaviour(r.Header.Get(TenantHeader), r.Header.Get(VariantHeader), time.Now())
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(ConfidenceHeader, strconv.FormatFloat(conf, 'f', 4, 64))
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"simulated provider failure","type":"server_error","code":"internal_error"}}`)
		return
	}
	fmt.Fprintf(w, `{"object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":20}}`, p.Model)
}
