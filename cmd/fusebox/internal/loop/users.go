package loop

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Call is one request as its sender saw it.
type Call struct {
	At       time.Duration // sent, offset from the run's start
	Latency  time.Duration
	Status   int    // HTTP status; 0 when the request failed without one
	Decision string // X-Fusebox-Decision of the answer
	Tenant   string
	Variant  string  // as asked
	Conf     float64 // the answer's confidence score, -1 without one
}

// OK reports whether the call succeeded (200).
func (c *Call) OK() bool { return c.Status == http.StatusOK }

// calls is a concurrent log of calls.
type calls struct {
	mu sync.Mutex
	cs []Call
}

func (l *calls) add(c Call) {
	l.mu.Lock()
	l.cs = append(l.cs, c)
	l.mu.Unlock()
}

func (l *calls) all() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.cs)
}

// send posts a chat completion for model to base with the key headers and
// logs it.
func send(ctx context.Context, hc *http.Client, base, tenant, model, variant string, at time.Duration, log *calls) {
	body := []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"hello"}],"max_tokens":20}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(TenantHeader, tenant)
	req.Header.Set("X-Fusebox-Service", "chat")
	req.Header.Set(VariantHeader, variant)
	start := time.Now()
	resp, err := hc.Do(req)
	c := Call{At: at, Tenant: tenant, Variant: variant, Conf: -1}
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.Status, c.Decision = resp.StatusCode, resp.Header.Get("X-Fusebox-Decision")
		if v, err := strconv.ParseFloat(resp.Header.Get(ConfidenceHeader), 64); err == nil {
			c.Conf = v
		}
	} else if ctx.Err() != nil {
		return // the run ended: not a call the users saw fail
	}
	c.Latency = time.Since(start)
	log.add(c)
}

// SLO is a set of calls judged against a latency budget.
type SLO struct {
	Calls int
	// P999 is the empirical 99.9th percentile of the successful calls'
	// latency (the nearest rank), 0 with none.
	P999 time.Duration
	// ErrorRate is the share of calls that did not answer 200 (the
	// gateway's own 503/429 included).
	ErrorRate float64
	// Compliance is the share of calls that answered 200 within the
	// budget (and, when judged with a confidence floor, with a confidence
	// score at or above it).
	Compliance float64
	// LowConfidence is the share of answered calls under the confidence
	// floor (0 without a floor).
	LowConfidence float64
}

// judge computes the SLO of the calls sent in [from, to); floor > 0 also
// requires a confidence score of at least floor.
func judge(cs []Call, from, to, budget time.Duration, floor float64) SLO {
	var lat []time.Duration
	s := SLO{}
	bad, good, low := 0, 0, 0
	for i := range cs {
		c := &cs[i]
		if c.At < from || c.At >= to {
			continue
		}
		s.Calls++
		if !c.OK() {
			bad++
			continue
		}
		lat = append(lat, c.Latency)
		if floor > 0 && c.Conf < floor {
			low++
			continue
		}
		if c.Latency <= budget {
			good++
		}
	}
	if s.Calls == 0 {
		return s
	}
	s.ErrorRate = float64(bad) / float64(s.Calls)
	s.Compliance = float64(good) / float64(s.Calls)
	if n := s.Calls - bad; n > 0 {
		s.LowConfidence = float64(low) / float64(n)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		i := int(math.Ceil(0.999*float64(len(lat)))) - 1
		s.P999 = lat[max(i, 0)]
	}
	return s
}

// onlyProbes keeps tenant's probe calls (of variant, unless "").
func onlyProbes(cs []Call, tenant, variant string) []Call {
	var out []Call
	for _, c := range cs {
		if c.Decision == "probe" && c.Tenant == tenant && (variant == "" || c.Variant == variant) {
			out = append(out, c)
		}
	}
	return out
}
