package fusehttp_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fusehttp"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

var (
	acme   = fuseschema.Key{Tenant: "acme", Service: "chat", Variant: "baseline"}
	canary = fuseschema.Key{Tenant: "acme", Service: "chat", Variant: "canary"}
	bigAll = fuseschema.Key{Tenant: "*", Service: "chat", Model: "big", Variant: "*"}
)

func TestNoCommandPassesUnchanged(t *testing.T) {
	e := newEnv(t)
	h, c := e.handler(t)
	w := do(h, chat("big", acme, nil))
	if w.Code != 200 || w.Header().Get("X-Fusebox-Decision") != "pass" {
		t.Fatalf("status %d decision %q, want 200 pass", w.Code, w.Header().Get("X-Fusebox-Decision"))
	}
	s := e.up.last(t)
	if s.Model != "big" || s.Body["temperature"] != 0.25 || int(s.ContentLength) != s.BodyLen {
		t.Fatalf("upstream got %+v", s)
	}
	if c.Get(fusehttp.LabelPass) != 1 {
		t.Fatalf("counters %v", c.Snapshot())
	}
	// Other paths and methods are not judged nor counted.
	do(h, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
	if n := len(e.up.requests()); n != 2 || c.Get(fusehttp.LabelPass) != 1 {
		t.Fatalf("GET /v1/models: upstream requests %d, counters %v", n, c.Snapshot())
	}
}

func TestDegradeRewritesTheModel(t *testing.T) {
	e := newEnv(t)
	h, c := e.handler(t)
	e.publish(t, e.command(bigAll, fuseschema.ActionDegrade, time.Hour)) // fallback "small"
	for _, path := range []string{"/v1/chat/completions", "/v1/responses", "/v1/embeddings"} {
		r := chat("big", acme, map[string]any{"user": "u-1", "n": 2})
		r.URL.Path = path
		w := do(h, r)
		if w.Code != 200 || w.Header().Get("X-Fusebox-Decision") != "degrade" {
			t.Fatalf("%s: status %d decision %q", path, w.Code, w.Header().Get("X-Fusebox-Decision"))
		}
		s := e.up.last(t)
		if s.Path != path || s.Model != "small" {
			t.Fatalf("%s: upstream got model %q on %s, want small", path, s.Model, s.Path)
		}
		// The rest of the body is intact and Content-Length is the new
		// body's length (the fallback's name is shorter).
		if s.Body["user"] != "u-1" || s.Body["n"] != 2.0 || s.Body["temperature"] != 0.25 ||
			!strings.Contains(fmt.Sprint(s.Body["messages"]), "héllo \u2603") {
			t.Fatalf("%s: body changed beyond the model: %v", path, s.Body)
		}
		if int(s.ContentLength) != s.BodyLen || s.Header.Get("Content-Length") != strconv.Itoa(s.BodyLen) {
			t.Fatalf("%s: Content-Length %d (header %q) for a body of %d bytes", path, s.ContentLength, s.Header.Get("Content-Length"), s.BodyLen)
		}
	}
	// Another model is not covered.
	do(h, chat("medium", acme, nil))
	if s := e.up.last(t); s.Model != "medium" {
		t.Fatalf("medium went to %q", s.Model)
	}
	if c.Get(fusehttp.LabelDegrade) != 3 || c.Get(fusehttp.LabelPass) != 1 {
		t.Fatalf("counters %v", c.Snapshot())
	}
}

func TestTripRejectsWithRetryAfter(t *testing.T) {
	e := newEnv(t)
	h, c := e.handler(t)
	cmd := e.publish(t, e.command(bigAll, fuseschema.ActionTrip, 90*time.Second))
	w := do(h, chat("big", acme, nil))
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", w.Code)
	}
	ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
	left := time.Until(time.Unix(0, cmd.ExpiresAtUnixNano)).Seconds()
	if err != nil || float64(ra) < left || float64(ra) > left+1 {
		t.Fatalf("Retry-After %q, want ceil of the %.1fs until the command expires", w.Header().Get("Retry-After"), left)
	}
	msg, typ, code := openAIError(t, w)
	if typ != "server_error" || code != "circuit_open" || !strings.Contains(msg, "*/chat/big/*") {
		t.Fatalf("error %q %q %q", msg, typ, code)
	}
	if len(e.up.requests()) != 0 {
		t.Fatalf("a rejected request reached the upstream")
	}

	// With a failover the request goes to another model instead.
	hf, cf := e.handler(t, fusehttp.WithFailover(func(k fuseschema.Key, d fuse.Decision) string {
		if d.Command.Level >= 2 {
			return "other"
		}
		return ""
	}))
	if w := do(hf, chat("big", acme, nil)); w.Code != 200 || e.up.last(t).Model != "other" {
		t.Fatalf("failover: status %d, upstream model %q", w.Code, e.up.last(t).Model)
	}
	if c.Get(fusehttp.LabelReject) != 1 || cf.Get(fusehttp.LabelFailover) != 1 {
		t.Fatalf("counters %v %v", c.Snapshot(), cf.Snapshot())
	}
}

// admitted sends n requests (request ids from id, "" for none) and counts
// the statuses.
func admitted(h http.Handler, n int, key fuseschema.Key, id func(i int) string) map[int]int {
	out := map[int]int{}
	for i := 0; i < n; i++ {
		r := chat("big", key, nil)
		if v := id(i); v != "" {
			r.Header.Set("X-Request-Id", v)
		}
		out[do(h, r).Code]++
	}
	return out
}

func TestThrottleRefusesTheFraction(t *testing.T) {
	e := newEnv(t)
	h, c := e.handler(t)
	e.publish(t, e.command(bigAll, fuseschema.ActionThrottle, time.Hour)) // admit 0.5
	// Without request ids: the low-discrepancy sequence admits the
	// fraction to within one request.
	got := admitted(h, 400, acme, func(int) string { return "" })
	if got[200] < 199 || got[200] > 201 || got[200]+got[429] != 400 {
		t.Fatalf("statuses %v, want 200 ±1 admitted of 400", got)
	}
	if c.Get(fusehttp.LabelThrottle) != uint64(got[429]) || c.Get(fusehttp.LabelAdmit) != uint64(got[200]) {
		t.Fatalf("counters %v vs statuses %v", c.Snapshot(), got)
	}
	w := do(h, func() *http.Request {
		for i := 0; ; i++ { // a request id that hashes into the refused half
			r := chat("big", acme, nil)
			r.Header.Set("X-Request-Id", "r-"+strconv.Itoa(i))
			if w := do(h, r); w.Code == 429 {
				r = chat("big", acme, nil)
				r.Header.Set("X-Request-Id", "r-"+strconv.Itoa(i))
				return r
			}
		}
	}())
	if w.Code != 429 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("a retried refused request id: status %d Retry-After %q, want 429 again", w.Code, w.Header().Get("Retry-After"))
	}
	if _, typ, code := openAIError(t, w); typ != "requests" || code != "rate_limit_exceeded" {
		t.Fatalf("429 error %q %q", typ, code)
	}
	// Sticky per request id: the same ids get the same answers.
	ids := func(i int) string { return fmt.Sprintf("req-%d", i) }
	a, b := admitted(h, 300, acme, ids), admitted(h, 300, acme, ids)
	if a[200] != b[200] || a[200] < 100 || a[200] > 200 {
		t.Fatalf("request-id sampling: %v then %v, want the same, about half admitted", a, b)
	}
	// An injected sampler decides alone.
	never, _ := e.handler(t, fusehttp.WithSampler(func(*http.Request) float64 { return 0.99 }))
	always, _ := e.handler(t, fusehttp.WithSampler(func(*http.Request) float64 { return 0.01 }))
	if n := admitted(never, 20, acme, ids); n[429] != 20 {
		t.Fatalf("sampler 0.99: %v, want every request refused", n)
	}
	if n := admitted(always, 20, acme, ids); n[200] != 20 {
		t.Fatalf("sampler 0.01: %v, want every request admitted", n)
	}
}

func TestHalfOpenAdmitsTheProbeFraction(t *testing.T) {
	e := newEnv(t)
	h, c := e.handler(t)
	e.publish(t, e.command(bigAll, fuseschema.ActionHalfOpen, time.Hour)) // probe 0.1
	got := admitted(h, 500, acme, func(int) string { return "" })
	if got[200] < 49 || got[200] > 51 || got[503] != 500-got[200] {
		t.Fatalf("statuses %v, want 50 ±1 probes of 500, the rest 503", got)
	}
	if c.Get(fusehttp.LabelProbe) != uint64(got[200]) || c.Get(fusehttp.LabelReject) != uint64(got[503]) {
		t.Fatalf("counters %v", c.Snapshot())
	}
	for _, s := range e.up.requests() {
		if s.Model != "big" {
			t.Fatalf("a probe went to %q, want the model as asked", s.Model)
		}
	}
	// A degrade in half-open: the probes go as asked, the rest degrade.
	e.publish(t, func() fuseschema.FuseCommand {
		d := e.command(bigAll, fuseschema.ActionDegrade, time.Hour)
		d.State, d.ThrottleFraction = fuseschema.StateHalfOpen, 0.25
		return d
	}())
	before := len(e.up.requests())
	admitted(h, 200, acme, func(int) string { return "" })
	models := map[string]int{}
	for _, s := range e.up.requests()[before:] {
		models[s.Model]++
	}
	if models["big"] < 49 || models["big"] > 51 || models["small"] != 200-models["big"] {
		t.Fatalf("half-open degrade sent %v, want 50 ±1 to big and the rest to small", models)
	}
}

func TestRollbackRoutesToTheBaseline(t *testing.T) {
	e := newEnv(t)
	target := fuseschema.Key{Tenant: "acme", Service: "chat", Model: "big", Variant: "canary"}
	e.publish(t, e.command(target, fuseschema.ActionRollback, time.Hour)) // no fallback: the gateway's baseline
	h, c := e.handler(t, fusehttp.WithBaseline("stable"), fusehttp.WithRollbackModel(func(model, base string) string {
		return model + "-" + base
	}))
	w := do(h, chat("big", canary, nil))
	s := e.up.last(t)
	if w.Code != 200 || s.Header.Get("X-Fusebox-Variant") != "stable" || s.Model != "big-stable" || int(s.ContentLength) != s.BodyLen {
		t.Fatalf("status %d, upstream variant %q model %q", w.Code, s.Header.Get("X-Fusebox-Variant"), s.Model)
	}
	// The baseline's own traffic is not covered.
	do(h, chat("big", acme, nil))
	if s := e.up.last(t); s.Header.Get("X-Fusebox-Variant") != "baseline" || s.Model != "big" {
		t.Fatalf("baseline request changed: %q %q", s.Header.Get("X-Fusebox-Variant"), s.Model)
	}
	// A command naming the baseline wins over the gateway's default.
	named := e.command(target, fuseschema.ActionRollback, time.Hour)
	named.Fallback = "baseline-2"
	e.publish(t, named)
	do(h, chat("big", canary, nil))
	if s := e.up.last(t); s.Header.Get("X-Fusebox-Variant") != "baseline-2" {
		t.Fatalf("variant %q, want the command's baseline-2", s.Header.Get("X-Fusebox-Variant"))
	}
	// A canary known from the defaults alone (no variant header) gets the
	// header set for the upstream.
	hd, _ := e.handler(t, fusehttp.WithDefaultKey(fuseschema.Key{Tenant: "acme", Service: "chat", Variant: "canary"}))
	r := chat("big", fuseschema.Key{}, nil)
	r.Header.Del("X-Fusebox-Variant")
	do(hd, r)
	if s := e.up.last(t); s.Header.Get("X-Fusebox-Variant") != "baseline-2" {
		t.Fatalf("defaults: variant header %q, want baseline-2", s.Header.Get("X-Fusebox-Variant"))
	}
	if c.Get(fusehttp.LabelRollback) != 2 || c.Get(fusehttp.LabelPass) != 1 {
		t.Fatalf("counters %v", c.Snapshot())
	}
}

func TestExpiredCommandFailsOpen(t *testing.T) {
	// The client's clock is the wall clock plus skip: the trip expires
	// when the test moves the clock past it, not after a sleep, so that a
	// slow apply on a loaded machine cannot expire it before the first
	// request (it was 1.5 s of wall time between issue and that request).
	var skip atomic.Int64
	e := newEnvClock(t, func() time.Time { return time.Now().Add(time.Duration(skip.Load())) })
	h, _ := e.handler(t)
	e.publish(t, e.command(bigAll, fuseschema.ActionTrip, time.Minute))
	if w := do(h, chat("big", acme, nil)); w.Code != 503 {
		t.Fatalf("status %d while the trip is in effect", w.Code)
	}
	skip.Store(int64(time.Minute))
	if w := do(h, chat("big", acme, nil)); w.Code != 200 || w.Header().Get("X-Fusebox-Decision") != "pass" {
		t.Fatalf("after expiry: status %d decision %q, want 200 pass", w.Code, w.Header().Get("X-Fusebox-Decision"))
	}
}

func TestBodyOverTheLimitIs413(t *testing.T) {
	e := newEnv(t)
	h, c := e.handler(t, fusehttp.WithMaxBodyBytes(256))
	big := map[string]any{"pad": strings.Repeat("x", 300)}
	// Declared length over the limit, and a chunked body (length unknown).
	r1 := chat("big", acme, big)
	r2 := chat("big", acme, big)
	r2.ContentLength = -1
	for i, r := range []*http.Request{r1, r2} {
		w := do(h, r)
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("request %d: status %d, want 413", i, w.Code)
		}
		if msg, _, code := openAIError(t, w); code != "request_too_large" || !strings.Contains(msg, "256 bytes") {
			t.Fatalf("request %d: %q %q", i, msg, code)
		}
	}
	if len(e.up.requests()) != 0 || c.Get(fusehttp.LabelTooLarge) != 2 {
		t.Fatalf("upstream got %d, counters %v", len(e.up.requests()), c.Snapshot())
	}
	// At the limit it passes.
	if w := do(h, chat("big", acme, map[string]any{"pad": "y"})); w.Code != 200 {
		t.Fatalf("small body: %d", w.Code)
	}
}

func TestKeySources(t *testing.T) {
	e := newEnv(t)
	e.publish(t, e.command(fuseschema.Key{Tenant: "globex", Service: "search", Model: "big", Variant: "baseline"}, fuseschema.ActionTrip, time.Hour))
	// Defaults fill the dimensions without headers; the model header wins
	// over the body.
	h, c := e.handler(t, fusehttp.WithDefaultKey(fuseschema.Key{Tenant: "globex", Service: "search", Variant: "baseline"}))
	r := chat("other", fuseschema.Key{}, nil)
	r.Header.Set("X-Fusebox-Model", "big")
	if w := do(h, r); w.Code != 503 {
		t.Fatalf("defaults + model header: %d, want 503", w.Code)
	}
	// A callback.
	hk, _ := e.handler(t, fusehttp.WithKeyFunc(func(r *http.Request, body []byte) (fuseschema.Key, error) {
		if !bytes.Contains(body, []byte(`"model":"big"`)) {
			return fuseschema.Key{}, errors.New("no")
		}
		return fuseschema.Key{Tenant: r.URL.Query().Get("t"), Service: "search", Model: "big", Variant: "baseline"}, nil
	}))
	r = chat("big", fuseschema.Key{}, nil)
	r.URL.RawQuery = "t=globex"
	if w := do(hk, r); w.Code != 503 {
		t.Fatalf("key callback: %d, want 503", w.Code)
	}
	// No model anywhere, or a body that is not JSON: passed as asked
	// (fail open) and counted.
	for _, body := range []string{`{"messages":[]}`, `not json`} {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		if w := do(h, r); w.Code != 200 || w.Header().Get("X-Fusebox-Decision") != "unkeyed" {
			t.Fatalf("%s: status %d decision %q", body, w.Code, w.Header().Get("X-Fusebox-Decision"))
		}
	}
	if c.Get(fusehttp.LabelUnkeyed) != 2 || c.Get(fusehttp.LabelReject) != 1 {
		t.Fatalf("counters %v", c.Snapshot())
	}
}

func TestOptionsAreValidated(t *testing.T) {
	var d fusehttp.Decider = fakeless{}
	if _, err := fusehttp.New(nil); !errors.Is(err, fusehttp.ErrNoDecider) {
		t.Fatalf("nil decider: %v", err)
	}
	for _, tc := range []struct {
		opt  fusehttp.Option
		name string
	}{
		{fusehttp.WithMaxBodyBytes(0), "WithMaxBodyBytes(0)"},
		{fusehttp.WithPaths("v1/chat"), `WithPaths("v1/chat")`},
		{fusehttp.WithPaths(), "WithPaths()"},
		{fusehttp.WithHeaders(fusehttp.Headers{Tenant: "bad header"}), "Tenant"},
		{fusehttp.WithRequestIDHeader(""), "WithRequestIDHeader"},
		{fusehttp.WithSampler(nil), "WithSampler(nil)"},
		{fusehttp.WithBaseline(""), "WithBaseline"},
		{fusehttp.WithClock(nil), "WithClock(nil)"},
		{fusehttp.WithMetrics(nil), "WithMetrics(nil)"},
	} {
		_, err := fusehttp.New(d, tc.opt)
		if !errors.Is(err, fusehttp.ErrInvalidOption) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: err %v, want ErrInvalidOption naming it", tc.name, err)
		}
	}
	if _, err := fusehttp.New(d, fusehttp.WithPaths("/v1/chat/completions"), fusehttp.WithMaxBodyBytes(1)); err != nil {
		t.Fatalf("valid options: %v", err)
	}
}

// fakeless is a Decider for option validation only (no request is served).
type fakeless struct{}

func (fakeless) Decide(fuseschema.Key) fuse.Decision { return fuse.Decision{} }

func TestCountersExposition(t *testing.T) {
	var c fusehttp.Counters
	c.Count(fusehttp.LabelDegrade)
	c.Count(fusehttp.LabelDegrade)
	c.Count(fusehttp.LabelReject)
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	out := w.Body.String()
	for _, want := range []string{
		"# TYPE fusebox_gateway_requests_total counter",
		`fusebox_gateway_requests_total{decision="degrade"} 2`,
		`fusebox_gateway_requests_total{decision="reject"} 1`,
		`fusebox_gateway_requests_total{decision="pass"} 0`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q:\n%s", want, out)
		}
	}
}
