package loop

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fusehttp"
	"github.com/fusebox-dev/fusebox/schemas"
)

// Gateway is an LLM gateway built on fusehttp: the middleware in front of
// a reverse proxy that routes each request to the provider of the model it
// is sent to (after a degrade or a failover, the fallback's), and exports
// an OTLP span of every forwarded call to the span topic.
type Gateway struct {
	MW       *fusehttp.Middleware
	Counters *fusehttp.Counters
	// Shadow (NewGateway's shadow), when set, serves a half-open probe (fusehttp.LabelProbe)
	// from this model and sends a copy of it, in the background, to the
	// model asked for: the probe's span still tells fusebox how the
	// failing model does, and the user does not wait for it.
	Shadow  string
	Shadows atomic.Int64 // probe copies sent
	// start is the run's start (Call.At offsets); probes logs the copies.
	start   time.Time
	probes  calls
	smu     sync.Mutex
	spanMs  map[string][]float64
	srv     *httptest.Server
	targets map[string]*url.URL
	hc      *http.Client
	// shadows counts the probe copies in flight: Drain waits for them, so
	// none outlives the gateway (nor records a call after the run read
	// ProbeCalls).
	shadows sync.WaitGroup

	exp *exporter
}

// NewGateway starts a gateway on a loopback port. routes maps a model to
// its provider's base URL; spans are produced with cl to topic (nil cl: no
// export).
// shadow is Gateway.Shadow ("" for none); start the run's start.
func NewGateway(mw *fusehttp.Middleware, counters *fusehttp.Counters, routes map[string]string, cl *kgo.Client, topic string, seed uint64, start time.Time, shadow string) (*Gateway, error) {
	targets := map[string]*url.URL{}
	for m, u := range routes {
		pu, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("loop: route %s: %w", m, err)
		}
		targets[m] = pu
	}
	g := &Gateway{MW: mw, Counters: counters, exp: newExporter(cl, topic, seed), targets: targets, start: start, Shadow: shadow,
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 30 * time.Second}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			model := ""
			if a, ok := fusehttp.FromContext(pr.In.Context()); ok && a.Key.Model != "" {
				model = a.Key.Model
			}
			if m, ok := pr.In.Context().Value(routeKey{}).(string); ok {
				model = m
			}
			if t, ok := targets[model]; ok {
				pr.SetURL(t)
			}
			pr.Out.Header[TenantHeader] = pr.In.Header[TenantHeader]
		},
		FlushInterval: -1,
		// Bounded connections per provider: a stalled machine queues
		// requests instead of running out of file descriptors.
		Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128},
		ErrorLog:  log.New(io.Discard, "", 0), // the run's end cancels calls in flight
	}
	g.srv = httptest.NewServer(mw.Handler(g.record(proxy)))
	return g, nil
}

// URL is the gateway's base URL.
func (g *Gateway) URL() string { return g.srv.URL }

// Drain stops the server, waiting for the requests in flight, and then
// for the probe copies in flight (each bounded by the copy client's 30 s
// timeout): after it, ProbeCalls and SpanStats no longer change. The
// exporter goes on until Close. Drain may be called more than once.
func (g *Gateway) Drain() {
	g.srv.Close() // no handler runs after it, so no copy starts after it
	g.shadows.Wait()
}

// Close drains the gateway (Drain), then stops the exporter (after a last
// flush) and closes the copies' idle connections.
func (g *Gateway) Close() {
	g.Drain()
	g.exp.close()
	g.hc.CloseIdleConnections()
}

// ProbeCalls returns the shadow probes sent so far.
func (g *Gateway) ProbeCalls() []Call { return g.probes.all() }

// Exported is the number of spans produced and failed.
func (g *Gateway) Exported() (ok, failed int64) { return g.exp.sent.Load(), g.exp.failed.Load() }

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}
func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type routeKey struct{}

// record times each forwarded call and exports its span: the key as sent
// (fusehttp.Applied.Key), the provider's status as the span status.
func (g *Gateway) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := fusehttp.FromContext(r.Context())
		if ok && a.Label == fusehttp.LabelProbe && g.Shadow != "" {
			r, a = g.shadowProbe(r, a)
		}
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if ok && a.Key.Model != "" {
			g.span(a.Key, start, time.Now(), sw.status, sw.Header().Get(ConfidenceHeader))
		}
	})
}

// shadowProbe sends a copy of the probe r as asked and returns r turned
// into what the command does to the requests it does not probe: to the
// fallback model (degrade, trip) or to the baseline variant (rollback). A
// probe whose body cannot be sent to another model (absent, JSON null, not
// a JSON object: its model came from the header) is served as the probe it
// is, to the model asked for, and not copied (as fusehttp passes a degrade
// it cannot rewrite).
func (g *Gateway) shadowProbe(r *http.Request, a fusehttp.Applied) (*http.Request, fusehttp.Applied) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return r, a
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h := r.Header.Clone()
	d := a.Decision
	switch d.Outcome {
	case fuse.Rollback:
		g.shadow(a.Requested, h, body)
		base := d.Fallback
		if base == "" {
			base = fusehttp.DefaultBaseline
		}
		r.Header.Set(VariantHeader, base)
		a.Key.Variant = base
	default: // degrade, reject (failed over)
		to := g.Shadow
		if d.Outcome == fuse.Degrade && d.Fallback != "" {
			to = d.Fallback
		}
		nb, err := setModel(body, to)
		if err != nil {
			return r, a
		}
		g.shadow(a.Requested, h, body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(nb)), int64(len(nb))
		r.Header.Set("Content-Length", strconv.Itoa(len(nb)))
		a.Key.Model = to
		r = r.WithContext(context.WithValue(r.Context(), routeKey{}, to))
	}
	return r, a
}

// shadow sends the probe's copy to key's model and exports its span.
func (g *Gateway) shadow(key schemas.Key, h http.Header, body []byte) {
	t, ok := g.targets[key.Model]
	if !ok {
		return
	}
	g.Shadows.Add(1)
	g.shadows.Add(1) // on the handler's goroutine: before Drain's Wait (see Drain)
	go func() {
		defer g.shadows.Done()
		req, err := http.NewRequest(http.MethodPost, t.String()+"/v1/chat/completions", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header = h
		start := time.Now()
		status, conf := 0, ""
		if resp, err := g.hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status, conf = resp.StatusCode, resp.Header.Get(ConfidenceHeader)
		}
		end := time.Now()
		g.span(key, start, end, status, conf)
		c := Call{At: start.Sub(g.start), Latency: end.Sub(start), Status: status, Decision: string(fusehttp.LabelProbe),
			Tenant: key.Tenant, Variant: key.Variant, Conf: -1}
		if v, err := strconv.ParseFloat(conf, 64); err == nil {
			c.Conf = v
		}
		g.probes.add(c)
	}()
}

// errNotObject: a body whose model cannot be rewritten.
var errNotObject = errors.New("loop: the request body is not a JSON object")

// setModel returns body with its "model" set to model; errNotObject when
// body is absent, JSON null or not a JSON object.
func setModel(body []byte, model string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, errNotObject // null decodes into a nil map without an error
	}
	obj["model"], _ = json.Marshal(model)
	return json.Marshal(obj)
}

// span exports one call's span: key as sent, status the provider's
// (0: no answer), both errors.
func (g *Gateway) span(key schemas.Key, start, end time.Time, status int, conf string) {
	s := schemas.Span{Key: key, Operation: "chat", Provider: "loop-sim", ResponseModel: key.Model,
		StartUnixNano: start.UnixNano(), EndUnixNano: end.UnixNano(), InputTokens: 12, OutputTokens: 20,
		Has: schemas.HasInputTokens | schemas.HasOutputTokens, FinishReason: "stop"}
	if status >= 400 || status == 0 {
		s.Error, s.FinishReason = true, "error"
		s.ErrorType = fmt.Sprintf("http_%d", status)
	}
	if v, err := strconv.ParseFloat(conf, 64); err == nil {
		s.Confidence = v
		s.Has |= schemas.HasConfidence
	}
	s.Derive()
	g.exp.add(s)
	g.smu.Lock()
	if g.spanMs == nil {
		g.spanMs = map[string][]float64{}
	}
	k := key.Tenant + "/" + key.Model + "/" + key.Variant
	g.spanMs[k] = append(g.spanMs[k], s.DurationMs)
	g.smu.Unlock()
}

// SpanStats returns, per tenant/model/variant the gateway exported spans
// for, their count and the largest duration in ms.
func (g *Gateway) SpanStats() map[string][2]float64 {
	g.smu.Lock()
	defer g.smu.Unlock()
	out := map[string][2]float64{}
	for k, v := range g.spanMs {
		m := 0.0
		for _, x := range v {
			m = max(m, x)
		}
		out[k] = [2]float64{float64(len(v)), m}
	}
	return out
}

// exporter batches spans and produces one OTLP message per 100 ms.
type exporter struct {
	cl    *kgo.Client
	topic string
	mu    sync.Mutex
	buf   []schemas.Span
	rng   *rand.Rand
	stop  chan struct{}
	done  chan struct{}

	sent, failed atomic.Int64
}

func newExporter(cl *kgo.Client, topic string, seed uint64) *exporter {
	e := &exporter{cl: cl, topic: topic, rng: rand.New(rand.NewPCG(seed, 7)), stop: make(chan struct{}), done: make(chan struct{})}
	go e.run()
	return e
}

func (e *exporter) add(s schemas.Span) {
	if e.cl == nil {
		return
	}
	e.mu.Lock()
	binary.BigEndian.PutUint64(s.TraceID[:8], e.rng.Uint64())
	binary.BigEndian.PutUint64(s.TraceID[8:], e.rng.Uint64())
	binary.BigEndian.PutUint64(s.SpanID[:], e.rng.Uint64())
	e.buf = append(e.buf, s)
	e.mu.Unlock()
}

func (e *exporter) run() {
	defer close(e.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	names := schemas.DefaultAttributeNames()
	for {
		stopping := false
		select {
		case <-t.C:
		case <-e.stop:
			stopping = true
		}
		e.mu.Lock()
		batch := e.buf
		e.buf = nil
		e.mu.Unlock()
		if len(batch) > 0 {
			n := int64(len(batch))
			e.cl.Produce(context.Background(), &kgo.Record{Topic: e.topic, Value: schemas.EncodeOTLPProto(nil, batch, names)},
				func(_ *kgo.Record, err error) {
					if err != nil {
						e.failed.Add(n)
						return
					}
					e.sent.Add(n)
				})
		}
		if stopping {
			return
		}
	}
}

func (e *exporter) close() {
	close(e.stop)
	<-e.done
	if e.cl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.cl.Flush(ctx)
	}
}
