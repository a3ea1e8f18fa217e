package fusehttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// Middleware applies fuse decisions to OpenAI-compatible requests. Build it
// with New; wrap the proxy with Handler. Safe for concurrent use.
type Middleware struct {
	d   Decider
	cfg config
	seq atomic.Uint64
}

// New validates the options once and returns the middleware. It fails
// with ErrNoDecider without d and with an error wrapping ErrInvalidOption
// (naming every bad option) for bad option values.
func New(d Decider, opts ...Option) (*Middleware, error) {
	if d == nil {
		return nil, ErrNoDecider
	}
	cfg := config{
		headers: DefaultHeaders, maxBody: DefaultMaxBodyBytes, requestID: DefaultRequestIDHeader,
		baseline: DefaultBaseline, metrics: nopMetrics{}, clock: time.Now,
		paths: map[string]bool{},
	}
	for _, p := range DefaultPaths {
		cfg.paths[p] = true
	}
	for _, o := range opts {
		o.apply(&cfg)
	}
	for _, h := range []struct{ field, name string }{{"Tenant", cfg.headers.Tenant}, {"Service", cfg.headers.Service},
		{"Model", cfg.headers.Model}, {"Variant", cfg.headers.Variant}} {
		if !validHeader(h.name) {
			cfg.errs = append(cfg.errs, fmt.Sprintf("WithHeaders: %s %q is not a header name", h.field, h.name))
		}
	}
	if !validHeader(cfg.requestID) {
		cfg.errs = append(cfg.errs, fmt.Sprintf("WithRequestIDHeader(%q): not a header name", cfg.requestID))
	}
	if cfg.metrics == nil {
		cfg.errs = append(cfg.errs, "WithMetrics(nil)")
	}
	if len(cfg.errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidOption, strings.Join(cfg.errs, "; "))
	}
	return &Middleware{d: d, cfg: cfg}, nil
}

// Applied is what the middleware did with a request, for the handler
// behind it (FromContext): the span it exports should carry Key (the key
// as sent: the fallback model after a degrade) and Requested (as asked).
type Applied struct {
	Label     Label
	Requested fuseschema.Key
	Key       fuseschema.Key
	Decision  fuse.Decision
}

type ctxKey struct{}

// FromContext returns what the middleware did with the request whose
// context ctx is; false for requests it did not judge.
func FromContext(ctx context.Context) (Applied, bool) {
	a, ok := ctx.Value(ctxKey{}).(Applied)
	return a, ok
}

// Handler wraps next. Judged requests (POST to one of WithPaths) get their
// key, fuse's decision for it, and one of: passed as asked; body model
// rewritten to the fallback (degrade, failover) or the variant routed to
// the baseline (rollback) and passed; answered 503 (reject), 429
// (throttle's refused share), 413 (body over the limit) or 400 (body
// unreadable) with an OpenAI-style JSON error. The response writer is
// passed to next unwrapped, so streaming (SSE) responses flush as the
// upstream writes them.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !m.cfg.paths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		m.serve(w, r, next)
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	body, err := m.readBody(r)
	// A host's own http.MaxBytesReader limit is over a limit too: 413.
	if mbe := new(http.MaxBytesError); errors.Is(err, errTooLarge) || errors.As(err, &mbe) {
		m.refuse(w, LabelTooLarge, http.StatusRequestEntityTooLarge, 0,
			fmt.Sprintf("request body is over the gateway's limit of %d bytes", m.cfg.maxBody), "invalid_request_error", "request_too_large")
		return
	}
	if err != nil {
		m.refuse(w, LabelBadRequest, http.StatusBadRequest, 0, "reading the request body: "+err.Error(), "invalid_request_error", "bad_request")
		return
	}
	key, err := m.key(r, body)
	if err != nil {
		m.count(LabelUnkeyed)
		m.pass(w, r, next, body, Applied{Label: LabelUnkeyed})
		return
	}
	d := m.d.Decide(key)
	a := Applied{Requested: key, Key: key, Decision: d}
	if !d.Matched {
		a.Label = LabelPass
		m.count(a.Label)
		m.pass(w, r, next, body, a)
		return
	}
	outcome := d.Admit(m.sample(r))
	switch {
	case outcome == fuse.Allow && d.Probe:
		a.Label = LabelProbe
	case outcome == fuse.Allow:
		a.Label = LabelAdmit
	case outcome == fuse.Degrade:
		a.Label = LabelDegrade
		if d.Fallback != "" && d.Fallback != key.Model {
			if body, err = rewriteModel(body, d.Fallback); err != nil {
				a.Label = LabelUnkeyed // the key came from headers and the body is not JSON: cannot degrade
				break
			}
			a.Key.Model = d.Fallback
			setHeader(r, m.cfg.headers.Model, d.Fallback)
		}
	case outcome == fuse.Rollback:
		a.Label = LabelRollback
		base := d.Fallback
		if base == "" {
			base = m.cfg.baseline
		}
		a.Key.Variant = base
		if m.cfg.headers.Variant != "" {
			r.Header.Set(m.cfg.headers.Variant, base) // even when the variant came from the defaults
		}
		if m.cfg.rollbackTo != nil {
			if to := m.cfg.rollbackTo(key.Model, base); to != "" && to != key.Model {
				if nb, err := rewriteModel(body, to); err == nil {
					body, a.Key.Model = nb, to
					setHeader(r, m.cfg.headers.Model, to)
				}
			}
		}
	case outcome == fuse.Reject && d.Outcome == fuse.Throttle:
		m.refuse(w, LabelThrottle, http.StatusTooManyRequests, 1,
			fmt.Sprintf("fusebox throttles %s to %.0f%% of requests (command v%d): retry later", show(d.Command.Target), 100*d.Fraction, d.Command.Version),
			"requests", "rate_limit_exceeded")
		return
	default: // Reject: a trip, or the non-probe share of a half-open target
		if m.cfg.failover != nil {
			if to := m.cfg.failover(key, d); to != "" {
				if nb, err := rewriteModel(body, to); err == nil {
					a.Label, a.Key.Model, body = LabelFailover, to, nb
					setHeader(r, m.cfg.headers.Model, to)
					break
				}
			}
		}
		msg := fmt.Sprintf("fusebox tripped %s (command v%d, %s)", show(d.Command.Target), d.Command.Version, d.Command.State)
		if len(d.Command.Reasons) > 0 && d.Command.Reasons[0].Text != "" {
			msg += ": " + d.Command.Reasons[0].Text
		}
		m.refuse(w, LabelReject, http.StatusServiceUnavailable, m.retryAfter(d), msg, "server_error", "circuit_open")
		return
	}
	m.count(a.Label)
	m.pass(w, r, next, body, a)
}

func (m *Middleware) count(l Label) { m.cfg.metrics.Count(l) }

// refuse counts l and answers with an OpenAI-style error.
func (m *Middleware) refuse(w http.ResponseWriter, l Label, status, retryAfter int, msg, typ, code string) {
	m.count(l)
	w.Header().Set("X-Fusebox-Decision", string(l))
	writeError(w, status, retryAfter, msg, typ, code)
}

// pass restores the (possibly rewritten) body and calls next with a in
// the request's context and the decision in X-Fusebox-Decision.
func (m *Middleware) pass(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, a Applied) {
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	w.Header().Set("X-Fusebox-Decision", string(a.Label))
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, a)))
}

var errTooLarge = errors.New("body too large")

// readBody reads at most maxBody bytes; nil for an empty body.
func (m *Middleware) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > m.cfg.maxBody {
		return nil, errTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, m.cfg.maxBody+1))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > m.cfg.maxBody {
		return nil, errTooLarge
	}
	if len(b) == 0 {
		// The body read (and closed) was empty, e.g. chunked with no
		// data: the handler behind must not read the closed one (a
		// ReverseProxy answers 502 on "invalid Read on closed Body").
		r.Body, r.ContentLength, r.GetBody = http.NoBody, 0, nil
		return nil, nil
	}
	return b, nil
}

// key builds the request key: the callback, else headers over the
// defaults, the model from its header or the body's "model".
func (m *Middleware) key(r *http.Request, body []byte) (fuseschema.Key, error) {
	if m.cfg.keyFunc != nil {
		return m.cfg.keyFunc(r, body)
	}
	h, k := m.cfg.headers, m.cfg.defaults
	get := func(name string, dst *string) {
		if name != "" {
			if v := r.Header.Get(name); v != "" {
				*dst = v
			}
		}
	}
	get(h.Tenant, &k.Tenant)
	get(h.Service, &k.Service)
	get(h.Variant, &k.Variant)
	model := ""
	get(h.Model, &model)
	if model == "" && body != nil {
		var b struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return k, fmt.Errorf("fusehttp: body is not a JSON object: %w", err)
		}
		model = b.Model
	}
	if model != "" {
		k.Model = model
	}
	if k.Model == "" {
		return k, ErrNoModel
	}
	return k, nil
}

// rewriteModel returns body with its top-level "model" set to model (the
// other members kept as they were, in sorted order).
func rewriteModel(body []byte, model string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("fusehttp: cannot rewrite the model of a body that is not a JSON object")
	}
	v, _ := json.Marshal(model)
	obj["model"] = v
	return json.Marshal(obj)
}

func setHeader(r *http.Request, name, v string) {
	if name != "" && r.Header.Get(name) != "" {
		r.Header.Set(name, v)
	}
}

// phi is the golden ratio's fractional part: n·phi mod 1 spreads
// consecutive requests evenly over [0, 1).
const phi = 0.6180339887498949

// sample is the request's uniform sample in [0, 1): the sampler's, else a
// hash of the request id, else the low-discrepancy sequence.
func (m *Middleware) sample(r *http.Request) float64 {
	if m.cfg.sampler != nil {
		u := m.cfg.sampler(r)
		if !(u >= 0) { // also NaN
			return 0
		}
		return math.Min(u, math.Nextafter(1, 0))
	}
	if id := r.Header.Get(m.cfg.requestID); id != "" {
		h := fnv.New64a()
		h.Write([]byte(id))
		return float64(h.Sum64()>>11) / (1 << 53)
	}
	n := m.seq.Add(1)
	_, f := math.Modf(float64(n) * phi)
	return f
}

// retryAfter is the seconds until the command expires, rounded up, at
// least 1: a gateway's client retrying then finds a newer command or none.
func (m *Middleware) retryAfter(d fuse.Decision) int {
	left := time.Duration(d.Command.ExpiresAtUnixNano - m.cfg.clock().UnixNano())
	return max(1, int(math.Ceil(left.Seconds())))
}

// writeError answers with an OpenAI-style error body.
func writeError(w http.ResponseWriter, status, retryAfter int, msg, typ, code string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	var b struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	b.Error.Message, b.Error.Type, b.Error.Code = msg, typ, code
	out, _ := json.Marshal(b)
	h.Set("Content-Length", strconv.Itoa(len(out)+1))
	w.WriteHeader(status)
	w.Write(append(out, '\n'))
}

func show(k fuseschema.Key) string {
	return k.Tenant + "/" + k.Service + "/" + k.Model + "/" + k.Variant
}
