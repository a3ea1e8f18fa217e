package fusehttp

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// Decider answers what to do with a request key: *fuse.Client.
type Decider interface {
	Decide(key fuseschema.Key) fuse.Decision
}

// Headers names the request headers the key's dimensions are read from;
// an empty name means the dimension is not read from a header. The model
// is read from the header when it is set and present, else from the JSON
// body's "model".
type Headers struct {
	Tenant, Service, Model, Variant string
}

// DefaultHeaders are the headers read unless WithHeaders is given.
var DefaultHeaders = Headers{
	Tenant: "X-Fusebox-Tenant", Service: "X-Fusebox-Service", Model: "X-Fusebox-Model", Variant: "X-Fusebox-Variant",
}

// DefaultPaths are the OpenAI-compatible endpoints judged unless WithPaths
// is given.
var DefaultPaths = []string{"/v1/chat/completions", "/v1/responses", "/v1/embeddings"}

// Default limits.
const (
	// DefaultMaxBodyBytes is the largest request body read (to find the
	// model and to rewrite it): 8 MiB. A larger body is answered 413.
	DefaultMaxBodyBytes = 8 << 20
	// DefaultRequestIDHeader is the header whose hash samples throttles
	// and probes, so a retried request gets the same answer.
	DefaultRequestIDHeader = "X-Request-Id"
	// DefaultBaseline is the variant a rollback routes to when the
	// command names none.
	DefaultBaseline = "baseline"
)

// KeyFunc builds a request's key from the request and its body (nil when
// the body was not read: a GET, or an empty body). An error makes the
// middleware pass the request as asked and count it DecisionUnkeyed.
type KeyFunc func(r *http.Request, body []byte) (fuseschema.Key, error)

// Option configures New.
type Option interface{ apply(*config) }

type option func(*config)

func (f option) apply(c *config) { f(c) }

type config struct {
	headers    Headers
	defaults   fuseschema.Key
	keyFunc    KeyFunc
	paths      map[string]bool
	maxBody    int64
	requestID  string
	sampler    func(*http.Request) float64
	baseline   string
	rollbackTo func(model, baseline string) string
	failover   func(key fuseschema.Key, d fuse.Decision) string
	metrics    Metrics
	clock      func() time.Time
	errs       []string
}

// WithHeaders sets the headers the key is read from (DefaultHeaders
// otherwise); an empty field is not read.
func WithHeaders(h Headers) Option { return option(func(c *config) { c.headers = h }) }

// WithDefaultKey gives each dimension's value when its header is absent
// (a gateway serving one tenant or one service sets them here). The model
// default applies when neither the header nor the body names one.
func WithDefaultKey(k fuseschema.Key) Option { return option(func(c *config) { c.defaults = k }) }

// WithKeyFunc replaces header and body extraction by fn. The body is still
// read (up to WithMaxBodyBytes) so degrade can rewrite it.
func WithKeyFunc(fn KeyFunc) Option { return option(func(c *config) { c.keyFunc = fn }) }

// WithPaths sets the request paths judged (exact match; POST only).
// Anything else passes untouched and uncounted. Default DefaultPaths.
func WithPaths(paths ...string) Option {
	return option(func(c *config) {
		c.paths = map[string]bool{}
		for _, p := range paths {
			if !strings.HasPrefix(p, "/") {
				c.errs = append(c.errs, fmt.Sprintf("WithPaths(%q): a path starts with /", p))
			}
			c.paths[p] = true
		}
		if len(paths) == 0 {
			c.errs = append(c.errs, "WithPaths(): give at least one path")
		}
	})
}

// WithMaxBodyBytes sets the largest body read, in bytes (default
// DefaultMaxBodyBytes). A judged request with a larger body is answered
// 413 rather than passed unjudged.
func WithMaxBodyBytes(n int64) Option {
	return option(func(c *config) {
		if n <= 0 {
			c.errs = append(c.errs, fmt.Sprintf("WithMaxBodyBytes(%d): must be positive", n))
		}
		c.maxBody = n
	})
}

// WithRequestIDHeader names the header whose value is hashed into the
// sample that resolves throttles and probes (default
// DefaultRequestIDHeader): the same request id always gets the same
// answer. Requests without it take the next value of a low-discrepancy
// sequence (n·φ mod 1), so the admitted share is the fraction asked for
// within 1/n, deterministically; never the global math/rand.
func WithRequestIDHeader(name string) Option {
	return option(func(c *config) {
		if name == "" {
			c.errs = append(c.errs, "WithRequestIDHeader(\"\"): give a header name")
		}
		c.requestID = name
	})
}

// WithSampler replaces the sampling of throttles and probes: fn returns a
// uniform sample in [0, 1) for the request (the gateway's own seeded
// source, for example). Values outside [0, 1) are clamped.
func WithSampler(fn func(*http.Request) float64) Option {
	return option(func(c *config) {
		if fn == nil {
			c.errs = append(c.errs, "WithSampler(nil)")
		}
		c.sampler = fn
	})
}

// WithBaseline sets the variant a rollback routes to when the command
// names none (default DefaultBaseline). The rollback sets the variant
// header (Headers.Variant) of the upstream request to it.
func WithBaseline(variant string) Option {
	return option(func(c *config) {
		if variant == "" {
			c.errs = append(c.errs, "WithBaseline(\"\"): give a variant")
		}
		c.baseline = variant
	})
}

// WithRollbackModel makes a rollback also rewrite the body's model: fn
// gets the requested model and the baseline variant and returns the model
// to send (e.g. "gpt-4o-canary" → "gpt-4o"); "" or the same model leaves
// the body as it is.
func WithRollbackModel(fn func(model, baseline string) string) Option {
	return option(func(c *config) { c.rollbackTo = fn })
}

// WithFailover makes a reject (a trip, or the non-probe share of a
// half-open target) fail over instead of answering 503: fn returns the
// model to send the request to ("" answers 503 after all).
func WithFailover(fn func(key fuseschema.Key, d fuse.Decision) string) Option {
	return option(func(c *config) { c.failover = fn })
}

// WithMetrics sets where each request's Label is counted (a *Counters, or
// an adapter over the host's metrics library). Default: not counted.
func WithMetrics(m Metrics) Option { return option(func(c *config) { c.metrics = m }) }

// WithClock sets the clock Retry-After is computed against; give the same
// clock as the fuse.Client's. Default time.Now.
func WithClock(now func() time.Time) Option {
	return option(func(c *config) {
		if now == nil {
			c.errs = append(c.errs, "WithClock(nil)")
		}
		c.clock = now
	})
}

type nopMetrics struct{}

func (nopMetrics) Count(Label) {}

func validHeader(name string) bool {
	if name == "" {
		return true
	}
	for _, r := range name {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune("!#$%&'*+.^_`|~", r)) {
			return false
		}
	}
	return true
}
